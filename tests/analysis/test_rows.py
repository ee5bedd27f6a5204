"""Eq. 24 by receiver row: labels, class tables and the leak's paired test."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from nar_gap.analysis.models import Models, reference_attention
from nar_gap.analysis.rows import (
    RowCells,
    binned,
    cell_mean,
    class_rows,
    class_summary,
    distance_share,
    leak_change,
    leak_rows,
    model_rows,
    row_cells,
    self_loop_sentence,
    self_selected,
)
from nar_gap.compiler import compile_algorithm
from nar_gap.tasks.graphs import family_batch


@pytest.fixture(scope="module")
def case():
    """Compiled BFS on dense graphs with dm-clrs's self-loops, and its attention."""
    batch = family_batch("bfs", "er_p0.5", 8, 3, clrs_law=True)
    compiled = compile_algorithm("bfs", hidden_size=None)
    return batch, compiled, reference_attention(compiled, batch)


def _leaking(batch, reference: np.ndarray, amount: float) -> np.ndarray:
    """``reference`` with ``amount`` of every reached, self-looped, self-selecting
    row moved from the receiver to the next node (a neighbour or not)."""
    moved = reference.copy()
    steps, _, nodes = reference.shape[:3]
    reached = np.asarray(batch.hints["reach_h"])[:steps] > 0.5
    loops = np.einsum("bii->bi", np.asarray(batch.inputs["A"])) != 0
    diagonal = np.arange(nodes)
    chosen = reached & loops[None] & (reference[..., diagonal, diagonal] > 0.5)
    s, b, i = np.nonzero(chosen)
    moved[s, b, i, i] -= amount
    moved[s, b, i, (i + 1) % nodes] += amount
    return moved


def test_cells_hold_their_labels_and_each_model_its_distance(case):
    batch, _, reference = case
    trained = np.stack([reference, _leaking(batch, reference, 0.5)])
    rows = row_cells(trained, reference, batch, "reach_h")
    target = self_selected(rows, True)
    assert target.sum() > 5 and self_selected(rows, False).sum() > 5
    # every reached receiver selects itself (the BFS program's rule)
    assert np.all(rows.compiled_self[rows.flagged])
    assert cell_mean(rows.distance, target) == pytest.approx([0.0, 0.5])
    assert cell_mean(1 - rows.self_weight, target) == pytest.approx([0.0, 0.5])
    assert cell_mean(rows.distance, ~target) == pytest.approx([0.0, 0.0], abs=1e-6)
    # the compiled rows of unreached receivers with a reached neighbour leave it
    parents = ~rows.compiled_self
    assert parents.any() and np.all(rows.flagged_neighbours[parents] > 0)


def test_the_class_table_puts_the_whole_distance_in_the_moved_class(case):
    batch, _, reference = case
    leaked = _leaking(batch, reference, 0.5)
    table = class_rows(
        row_cells(np.stack([leaked, leaked]), reference, batch, "reach_h")
    )
    moved = [r for r in table if r["compiled_attends"] == "itself" and r["flagged"]]
    by_loop = {r["self_loop"]: r for r in moved}
    assert by_loop[True]["share"] == pytest.approx(1.0, abs=1e-6)
    assert by_loop[True]["leak"] == pytest.approx(0.5)
    assert by_loop[False]["share"] == pytest.approx(0.0, abs=1e-6)
    assert sum(r["cells"] for r in table) == int(
        np.sum(
            np.asarray(batch.node_mask).sum(-1)
            * np.maximum(1, np.asarray(batch.lengths) - 1)
        )
    )
    # a row the compiled model sends elsewhere puts all its attention off itself
    for row in table:
        if row["compiled_attends"] == "another node":
            assert row["leak"] == pytest.approx(1.0, abs=1e-6)


def test_the_leak_table_splits_by_reached_neighbours(case):
    batch, _, reference = case
    leaked = _leaking(batch, reference, 0.25)
    rows = row_cells(np.stack([leaked, leaked]), reference, batch, "reach_h")
    table = leak_rows(rows, (1, 4))
    looped = [r for r in table if r["self_loop"]]
    assert looped[0]["flagged_neighbours"] == "all"
    assert sum(r["cells"] for r in looped[1:]) <= looped[0]["cells"]
    assert all(r["leak"] == pytest.approx(0.25) for r in looped)
    assert all(
        r["leak"] == pytest.approx(0.0, abs=1e-6) for r in table if not r["self_loop"]
    )


def test_the_leak_change_is_judged_both_ways(case):
    batch, _, reference = case
    exact = row_cells(np.stack([reference] * 4), reference, batch, "reach_h")
    leaked = row_cells(
        np.stack([_leaking(batch, reference, a) for a in (0.1, 0.2, 0.3, 0.4)]),
        reference,
        batch,
        "reach_h",
    )
    rising = leak_change(exact, leaked, "constructed", "reached")
    assert "with a self-loop from 0.0000 to 0.2500 (higher? agree" in rising
    assert "without from 0.0000 to 0.0000 (higher? inconclusive" in rising
    falling = leak_change(leaked, exact, "constructed", "reached")
    assert "with a self-loop from 0.2500 to 0.0000 (higher? disagree" in falling


def test_the_compiled_bfs_ignores_self_loops_and_crowded_positions(case):
    """What the notebook's intervention leans on: the compiled network's
    attention is the same without the self-loops' edge feature and with every
    position squeezed to a quarter of its spacing, at the bottom of the range
    or the top."""
    batch, compiled, reference = case
    edges = np.asarray(batch.inputs["A"]).copy()
    edges[:, np.arange(8), np.arange(8)] = 0
    unlooped = dataclasses.replace(batch, inputs={**batch.inputs, "A": edges})
    assert np.abs(reference_attention(compiled, unlooped) - reference).max() < 1e-6
    itself = Models.from_models([compiled, compiled])
    for offset in (0.0, 0.75):
        squeezed = model_rows(itself, reference, batch, "reach_h", 0.25, offset)
        assert squeezed.distance.max() < 1e-6
        # no distance to share: rounding noise is not a share
        assert np.isnan(distance_share(squeezed, self_selected(squeezed, True)))


def test_binned_labels_and_masks():
    counts = np.array([0, 1, 3, 4, 9, 20])
    bins = binned(counts, (1, 4, 8))
    assert [label for label, _ in bins] == ["1-3", "4-7", "8+"]
    assert [m.tolist() for _, m in bins] == [
        [False, True, True, False, False, False],
        [False, False, False, True, False, False],
        [False, False, False, False, True, True],
    ]


def test_bad_shapes_and_unknown_hints_are_one_line_errors(case):
    batch, _, reference = case
    with pytest.raises(ValueError, match="is not"):
        row_cells(reference, reference, batch, "reach_h")
    with pytest.raises(ValueError, match="no hint 'reached'"):
        row_cells(reference[None], reference, batch, "reached")


def test_sentences_on_graphs_without_self_loops_warn_nothing(case):
    """Smoke's graphs may hold no self-looped reached receiver: the sentences
    say NaN for that class, with no "mean of empty slice" in a notebook."""
    import warnings

    _, compiled, _ = case
    plain = family_batch("bfs", "er_p0.5", 8, 2)  # our law: no self-loops
    reference = reference_attention(compiled, plain)
    rows = row_cells(np.stack([reference, reference]), reference, plain, "reach_h")
    assert not self_selected(rows, True).any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        said = self_loop_sentence({"plain": rows}) + leak_change(rows, rows, "x")
    assert "leak nan" in said and "with a self-loop from nan to nan" in said


def test_a_class_s_distance_and_leak_intervals_stay_in_the_unit_range():
    """Two models, one at distance 0 and leak 0, the other far: the whole
    t-intervals would pass 0 below and 1 above; the summary's end there."""
    distance = np.array([[0.0, 0.0], [0.9, 0.9]])
    rows = RowCells(
        distance=distance,
        self_weight=1 - distance,
        compiled_self=np.ones(2, bool),
        self_loop=np.ones(2, bool),
        flagged=np.ones(2, bool),
        flagged_neighbours=np.zeros(2, np.int64),
    )
    summary = class_summary(rows, np.ones(2, bool))
    for name in ("distance", "leak"):
        assert summary[f"{name}_low"] == 0.0 and summary[f"{name}_high"] == 1.0
        assert summary[name] == 0.45
