"""BFS pointer anatomy: counts on constructed traces, and the intervention seen
both ways (the compiled network breaks no answer; a decoder that names a
node's parent by which neighbour does not point at it breaks every ``both``
case)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from nar_gap.analysis import pointers
from nar_gap.analysis.pointers import Trace
from nar_gap.compiler import DEFAULT_HIDDEN_SIZE, compile_algorithm
from nar_gap.tasks.graphs import family_batch


def _path_trace(nodes: int) -> Trace:
    """BFS from node 0 along the path 0-1-...: node v is reached at step v."""
    steps = nodes
    pi_h = np.tile(np.arange(nodes), (steps, 1))
    for t in range(steps):
        for v in range(1, min(t, nodes - 1) + 1):
            pi_h[t, v] = v - 1
    pi_h[:, 0] = 0
    neighbours = np.zeros((nodes, nodes), bool)
    for v in range(nodes - 1):
        neighbours[v, v + 1] = neighbours[v + 1, v] = True
    return Trace(
        pi_h=pi_h[:, None],
        reached_at=np.arange(nodes)[None],
        parent=np.maximum(np.arange(nodes) - 1, 0)[None],
        neighbours=neighbours[None],
        lengths=np.array([steps]),
        node_mask=np.ones((1, nodes), bool),
    )


def test_a_real_path_batch_gives_each_node_its_distance_and_parent():
    trace = Trace.of(family_batch("bfs", "path", 9, 3))
    for b in range(3):
        at = trace.reached_at[b]
        assert (at >= 0).all() and (at == 0).sum() == 1
        for v in np.flatnonzero(at > 0):
            parent = trace.parent[b, v]
            assert trace.neighbours[b, v, parent]
            assert at[parent] == at[v] - 1
            assert trace.is_child(b, parent, v)


def test_a_trace_of_another_algorithm_is_refused_in_one_line():
    with pytest.raises(ValueError, match="BFS"):
        Trace.of(family_batch("bellman_ford", "path", 6, 1))


def test_hint_errors_sort_each_wrong_pointer_by_state_parity_and_age():
    trace = _path_trace(6)
    predicted = trace.pi_h[1:].copy()  # step t predicts hint t + 1
    predicted[4, 0, 2] = 3  # node 2 (even) names its child, 3 steps after reach
    predicted[4, 0, 3] = 4  # node 3 (odd) names its child, 2 steps after
    predicted[4, 0, 4] = 5  # node 4 (even) names its child, 1 step after
    predicted[0, 0, 4] = 3  # node 4, unreached, names a neighbour
    predicted[1, 0, 2] = 1  # node 2 reached at step 2: right
    counts = pointers.hint_errors(predicted, trace)
    assert counts["errors_unreached"] == 1
    assert counts["errors_reached_now"] == 0
    assert counts["errors_reached_before"] == 3
    assert (counts["to_child_even"], counts["to_child_odd"]) == (2, 1)
    assert counts["first_to_child_age"] == 1.0
    cells = sum(counts[f"cells_{s}"] for s in pointers.STATES)
    assert cells == 5 * 6  # 5 predicting steps, 6 nodes


def test_outputs_are_split_by_whether_the_parent_s_fed_pointer_points_back():
    trace = _path_trace(5)
    fed = trace.pi_h[-1].copy()
    fed[0, 2] = 3  # node 3's parent points back at it
    output = trace.parent.copy()
    output[0, 3] = 4  # and node 3's output is wrong
    counts = pointers.output_by_parent_pointer(output, fed, trace)
    assert counts == {
        "wrong_parent_back": 1,
        "wrong_parent_on": 0,
        "right_parent_back": 0,
        "right_parent_on": 3,
    }


def test_the_output_step_reads_the_prediction_of_the_step_before_it():
    trace = _path_trace(5)
    predicted = np.full((4, 1, 5), 9)
    predicted[5 - 3] = 7
    assert (pointers.fed_into_output_step(predicted, trace) == 7).all()


def test_edited_cases_change_only_the_pointers_around_v_from_its_age_on():
    trace = _path_trace(10)
    cases, pi_h = pointers.edited_cases(trace, age=4)
    # v = 2..4: interior, parent not the source, reached + 4 at most 8, the
    # hint the output step reads (step L - 2 of L = 10)
    for edit in pointers.EDITS:
        assert [c.node for c in cases if c.edit == edit] == [2, 3, 4]
    k = cases.index(pointers.Case(0, 3, 3, "both"))
    changed = pi_h[:, k] != trace.pi_h[:, 0]
    assert set(zip(*np.nonzero(changed), strict=True)) == {
        (t, n) for t in range(7, 10) for n in (2, 4)
    }
    assert (pi_h[7:, k, 2] == 3).all() and (pi_h[7:, k, 4] == 5).all()
    k = cases.index(pointers.Case(0, 3, 3, "parent_back"))
    assert np.array_equal(np.nonzero(pi_h[:, k] != trace.pi_h[:, 0])[1], [2, 2, 2])


def test_edit_counts_tally_what_the_edit_broke_by_edit_and_parity():
    trace = _path_trace(10)
    cases, _ = pointers.edited_cases(trace, age=4)
    output = np.tile(trace.parent[0], (len(cases), 1))
    for k, case in enumerate(cases):
        if case.edit == "both" and case.distance % 2:
            output[k, case.node] = case.node + 1
    unedited = trace.parent.copy()
    unedited[0, 2] = 3  # node 2 (even) is wrong on the true trace already
    output[[k for k, c in enumerate(cases) if c.node == 2], 2] = 3
    rows = {
        (r["edit"], r["parity"]): r
        for r in pointers.edit_counts(output, unedited, cases, trace)
    }
    assert rows["both", "odd"] == {
        "edit": "both",
        "parity": "odd",
        "wrong": 1,
        "wrong_unedited": 0,
        "broken": 1,
        "cases": 1,
    }
    even = rows["both", "even"]
    assert (even["wrong"], even["wrong_unedited"], even["broken"]) == (1, 1, 0)
    assert even["cases"] == 2
    assert rows["parent_back", "odd"]["wrong"] == 0


def test_ages_count_every_reached_node_at_every_later_step():
    trace = _path_trace(4)  # steps 1..3: {0}, {0, 1}, {0, 1, 2} reached before
    assert pointers.age_counts([trace]) == {1: 3, 2: 2, 3: 1}
    rows = pointers.age_rows({"training": {1: 3, 2: 1}, "paths": {1: 1, 3: 1}})
    assert [r["age"] for r in rows] == [1, 2, 3]
    assert rows[1]["training_share_at_least"] == 0.25
    assert rows[1]["paths_share_at_least"] == 0.5
    assert rows[2]["training_node_steps"] == 0


@pytest.fixture(scope="module")
def paths():
    batch = family_batch("bfs", "path", 12, 2)
    compiled = compile_algorithm("bfs", hidden_size=DEFAULT_HIDDEN_SIZE, num_nodes=12)
    return batch, compiled


def test_the_compiled_network_keeps_every_answer_on_paths_and_edited_traces(paths):
    batch, compiled = paths
    row, edits = pointers.pointer_tables(compiled, batch)
    assert row["output_free"] == row["output_free_hard"] == row["output_forced"] == 1
    for prefix in ("", "forced_"):
        assert sum(row[f"{prefix}errors_{s}"] for s in pointers.STATES) == 0
        assert row[f"{prefix}cells_reached_before"] > 0
    assert row["wrong_parent_back"] == row["wrong_parent_on"] == 0
    assert edits and sum(r["cases"] for r in edits) > 0
    assert all(r["wrong"] == r["wrong_unedited"] == r["broken"] == 0 for r in edits)


PRECISIONS: list[str | None] = []


def _reads_who_points_at_it(config, repred, precision=None):
    """A stand-in decoder: a node's parent is the neighbour not pointing at it.

    Its hint predictions are the true trace's; the precisions it is asked
    for are kept in ``PRECISIONS``.
    """
    PRECISIONS.append(precision)

    def apply(params, batch):
        trace = Trace.of(batch)
        fed = np.stack(
            [trace.pi_h[max(n - 2, 0), b] for b, n in enumerate(trace.lengths)]
        )
        graphs, nodes = fed.shape
        logits = np.zeros((graphs, nodes, nodes))
        for b in range(graphs):
            for v in range(nodes):
                around = np.flatnonzero(trace.neighbours[b, v])
                away = [u for u in around if fed[b, u] != v] or [v]
                logits[b, v, away[0]] = 1.0
        hints = np.eye(nodes)[trace.pi_h[1:]]
        return types.SimpleNamespace(outputs={"pi": logits}, hint_preds={"pi_h": hints})

    return apply


def test_a_decoder_that_reads_its_neighbours_pointers_fails_every_both_edit(
    paths, monkeypatch
):
    batch, compiled = paths
    monkeypatch.setattr(pointers, "forward", _reads_who_points_at_it)
    PRECISIONS.clear()
    _, edits = pointers.pointer_tables(compiled, batch)
    both = [r for r in edits if r["edit"] == "both"]
    assert both and all(r["broken"] == r["cases"] for r in both)
    # every pass at the compiled model's own matmul precision
    assert PRECISIONS and set(PRECISIONS) == {compiled.precision}
