"""Probes read what is there and nothing else: known answers on built inputs,
the compiled BFS's own state, and held-out graphs for a probe that memorises."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import nar_gap
from nar_gap.analysis import probes
from nar_gap.analysis.probes import ProbeRows, fit_probe, probe_rows, score_probe
from nar_gap.model.network import init_params
from nar_gap.model.seeds import forward
from nar_gap.tasks.specs import get_spec


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_a_linear_scalar_is_read_linearly_and_a_nonlinear_one_needs_the_mlp():
    x = _rng().normal(size=(600, 4)).astype(np.float32)
    fit, test = slice(0, 400), slice(400, None)
    linear = ProbeRows("scalar", x, (x @ [1.0, -2.0, 0.5, 0.0]).astype(np.float32))
    rows = lambda part, r: ProbeRows("scalar", r.features[part], r.targets[part])  # noqa: E731
    assert score_probe(fit_probe(rows(fit, linear)), rows(test, linear)) > 0.99
    square = ProbeRows("scalar", x, (x[:, 0] ** 2).astype(np.float32))
    assert score_probe(fit_probe(rows(fit, square)), rows(test, square)) < 0.2
    mlp = fit_probe(rows(fit, square), form="mlp", width=32, steps=1500)
    assert score_probe(mlp, rows(test, square)) > 0.8


def test_a_pointer_is_read_by_the_bilinear_probe():
    """Node i's state is its parent's id, each candidate's is its own id."""
    n, rows_count = 6, 500
    ids = np.eye(n, dtype=np.float32)
    parents = _rng(1).integers(0, n, rows_count)
    rows = ProbeRows(
        "pointer",
        ids[parents],
        parents,
        np.broadcast_to(ids, (rows_count, n, n)).copy(),
        np.ones((rows_count, n), bool),
    )
    assert score_probe(fit_probe(rows, steps=800), rows) > 0.99


def test_each_pointer_row_is_scored_against_its_own_group_s_candidates():
    """The fit lays pointer rows out per (step, graph) group: uneven groups,
    rows out of group order, a group with no rows and masked candidates must
    give each row the scores of the gathered form, ``q_m . k_group(m)``."""
    rng = _rng(5)
    groups, n, d = 5, 4, 3
    group = np.array([3, 0, 3, 1, 3, 0, 4, 3, 1])  # group 2 has no rows
    cand = rng.normal(size=(groups, n, d)).astype(np.float32)
    mask = np.ones((groups, n), bool)
    mask[1, 3] = False
    rows = ProbeRows(
        "pointer",
        rng.normal(size=(len(group), d)).astype(np.float32),
        rng.integers(0, 3, len(group)),
        cand,
        mask,
        group=group,
        edges=rng.normal(size=(len(group), n, 2)).astype(np.float32),
    )
    fitted = fit_probe(rows, steps=20)
    params = fitted.params
    x = (rows.features - fitted.feature_mean) / fitted.feature_scale
    c = (cand - fitted.feature_mean) / fitted.feature_scale
    q = x @ params["query"]["w"] + params["query"]["b"]
    keys = c @ params["key"]["w"] + params["key"]["b"]
    expected = np.einsum("mf,mnf->mn", q, keys[group])
    expected += (rows.edges @ params["edge"]["w"] + params["edge"]["b"])[..., 0]
    expected = np.where(mask[group], expected, -1e9)
    got = probes._row_logits(fitted, rows)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert (
        probes.probe_hits(fitted, rows) == (expected.argmax(-1) == rows.targets)
    ).all()


def test_a_probe_that_memorises_its_rows_scores_at_chance_on_new_ones():
    x = _rng(2).normal(size=(400, 64)).astype(np.float32)
    y = (_rng(3).random(400) < 0.5).astype(np.float32)  # unrelated to x
    fitted = fit_probe(ProbeRows("mask", x[:200], y[:200]), form="mlp", steps=1500)
    assert score_probe(fitted, ProbeRows("mask", x[:200], y[:200])) > 0.95
    assert score_probe(fitted, ProbeRows("mask", x[200:], y[200:])) < 0.65


@functools.cache
def _bfs_states(seed: int):
    batch = nar_gap.data.sample_batch("bfs", num_nodes=8, batch_size=16, seed=seed)
    compiled = nar_gap.compile("bfs", hidden_size=None)
    config = nar_gap.NetworkConfig("bfs", hidden_size=compiled.config.hidden_size)
    random = forward(config)(init_params(config, batch, seed=0), batch).hiddens
    return batch, compiled.apply(batch).hiddens, random


def test_the_compiled_bfs_holds_reach_but_the_source_s_on_held_out_graphs():
    """The compiled program keeps ``reached_not_source`` in h (the source is an
    input, read from the node features by the decoder): a linear probe of h
    reads ``reach_h`` everywhere but at the source, one node of each graph's 8,
    and the same probe on a random network's h reads less."""
    fit_batch, fit_compiled, fit_random = _bfs_states(0)
    test_batch, test_compiled, test_random = _bfs_states(1)
    compiled = fit_probe(probe_rows(fit_compiled, fit_batch, "reach_h"))
    floor = fit_probe(probe_rows(fit_random, fit_batch, "reach_h"))
    read = score_probe(compiled, probe_rows(test_compiled, test_batch, "reach_h"))
    chance = score_probe(floor, probe_rows(test_random, test_batch, "reach_h"))
    assert read == pytest.approx(1 - 1 / 8)
    assert chance < read


def test_probe_rows_count_the_steps_that_predict_a_real_hint_and_real_nodes():
    batch, hiddens, _ = _bfs_states(0)
    rows = probe_rows(hiddens, batch, "pi_h")
    lengths = np.asarray(batch.lengths)
    steps = np.asarray(hiddens).shape[0]
    pairs = sum(min(int(length) - 1, steps) for length in lengths)
    assert rows.features.shape == (pairs * 8, np.asarray(hiddens).shape[-1])
    # a pointer's candidates: once per (step, graph), each row pointing at its own
    assert rows.candidates.shape == (pairs, 8, np.asarray(hiddens).shape[-1])
    assert rows.group.shape == (pairs * 8,)
    np.testing.assert_array_equal(rows.group[::8], np.arange(pairs))
    per_step = [rows.at_step(t) for t in range(steps)]
    assert sum(len(r.targets) for r in per_step) == pairs * 8
    assert all((r.steps == t).all() for t, r in enumerate(per_step))


def test_bad_probe_requests_are_refused_in_one_line():
    batch, hiddens, _ = _bfs_states(0)
    with pytest.raises(ValueError, match="no node hint 'd'"):
        probe_rows(hiddens, batch, "d")
    with pytest.raises(ValueError, match="unknown probe form"):
        fit_probe(probe_rows(hiddens, batch, "reach_h"), form="tree")
    assert probes.probed_variables("bfs") == ("reach_h", "pi_h")


def test_a_pointer_probe_reads_the_edges_between_a_node_and_its_candidates():
    """Node states that say nothing: the parent is the one neighbour (an edge
    input), which only the probe's edge term can see."""
    n, rows_count = 5, 400
    rng = _rng(4)
    parents = rng.integers(0, n, rows_count)
    adjacency = np.zeros((rows_count, n, 1), np.float32)
    adjacency[np.arange(rows_count), parents, 0] = 1.0
    blank = np.zeros((rows_count, n, 3), np.float32)
    rows = ProbeRows(
        "pointer",
        np.zeros((rows_count, 3), np.float32),
        parents,
        blank,
        np.ones((rows_count, n), bool),
        edges=adjacency,
    )
    assert score_probe(fit_probe(rows, steps=300), rows) == 1.0
    without = ProbeRows("pointer", rows.features, parents, blank, rows.candidate_mask)
    assert score_probe(fit_probe(without, steps=300), without) < 0.5


def test_the_probe_and_the_decoder_hits_are_per_row_and_agree_with_the_score():
    batch, hiddens, _ = _bfs_states(0)
    rows = probe_rows(hiddens, batch, "reach_h")
    fitted = fit_probe(rows)
    hits = probes.probe_hits(fitted, rows)
    assert hits.shape == (len(rows.targets),)
    assert hits.mean() == pytest.approx(score_probe(fitted, rows))
    assert rows.edges is None  # a mask has no candidates
    pointer = probe_rows(hiddens, batch, "pi_h")
    assert pointer.edges.shape[:2] == (len(pointer.targets), 8)


def test_a_scalar_probe_s_values_give_its_r2_and_a_constant_target_has_none():
    x = _rng(4).normal(size=(300, 3)).astype(np.float32)
    rows = ProbeRows("scalar", x, (x @ [1.0, 0.5, -1.0] + 3).astype(np.float32))
    fitted = fit_probe(rows)
    values = probes.probe_values(fitted, rows)
    assert values.shape == (300,)
    assert probes.r_squared(values, rows.targets) == score_probe(fitted, rows)
    assert probes.r_squared(rows.targets, rows.targets) == 1.0
    assert probes.r_squared(np.zeros(300), rows.targets) < 0  # worse than the mean
    assert np.isnan(probes.r_squared(values, np.full(300, 2.0)))
    mask = ProbeRows("mask", x, (x[:, 0] > 0).astype(np.float32))
    with pytest.raises(ValueError, match="probe_hits scores it"):
        probes.probe_values(fit_probe(mask), mask)


def test_the_compiled_bellman_ford_decodes_its_distances_exactly_on_probe_rows():
    """The scalar decoder's values on the counted rows are the hint's own: R² 1.
    The same values one row off (a broken row order) are not."""
    batch = nar_gap.data.sample_batch("bellman_ford", num_nodes=6, batch_size=8, seed=0)
    compiled = nar_gap.compile("bellman_ford", hidden_size=None)
    _, cache = compiled.run_with_cache(batch)
    values = probes.decoder_values(cache["hint.d"], batch, "d")
    targets = probe_rows(np.asarray(cache["hidden"]), batch, "d").targets
    assert values.shape == targets.shape
    assert probes.r_squared(values, targets) == pytest.approx(1.0, abs=1e-6)
    assert probes.r_squared(np.roll(values, 1), targets) < 0.9
    with pytest.raises(ValueError, match="decoder_values gives its values"):
        probes.decoder_hits(cache["hint.d"], batch, "d")


def test_a_scalar_is_probed_and_scored_by_r2_beside_its_decoder():
    """The compiled Bellman-Ford: every node hint is probed, its distance ``d``
    by R², and its decoder reads every one exactly."""
    model = nar_gap.compile("bellman_ford", hidden_size=None)
    batch = nar_gap.data.sample_batch("bellman_ford", num_nodes=5, batch_size=4, seed=0)
    rows = probes.probe_scores(model, batch, batch)
    pooled = {r["variable"]: r for r in rows if r["step"] == "all"}
    assert set(pooled) == {"d", "msk", "pi_h"}
    assert pooled["d"]["metric"] == "r2" and pooled["msk"]["metric"] == "accuracy"
    assert pooled["d"]["decoder"] == pytest.approx(1.0, abs=1e-6)
    assert pooled["msk"]["decoder"] == pooled["pi_h"]["decoder"] == 1.0
    assert set(probes.STUDY_READS) <= set(pooled["d"])


@pytest.fixture(scope="module")
def compiled_dfs_run():
    """The exact compiled DFS on four 5-node graphs: the batch and its cache."""
    batch = nar_gap.data.sample_batch("dfs", num_nodes=5, batch_size=4, seed=0)
    compiled = nar_gap.compile("dfs", hidden_size=None, num_nodes=5)
    _, cache = compiled.run_with_cache(batch)
    return batch, cache


def test_the_compiled_dfs_decodes_every_probed_variable_exactly_on_probe_rows(
    compiled_dfs_run,
):
    """``s``, ``u``, ``v`` and ``s_last`` are ``mask_one``: one node per graph,
    the decoder's highest-scoring real node, as CLRS decodes them.  Read as a
    sign per node they scored 0.49-0.59 for the exact compiled DFS (the
    causal-gap study's decoder column at smoke)."""
    batch, cache = compiled_dfs_run
    spec = get_spec("dfs")
    variables = probes.probed_variables("dfs")
    assert {"s", "u", "v", "s_last"} <= set(variables)
    for variable in variables:
        logits = cache[f"hint.{variable}"]
        if spec[variable][2] == "scalar":
            values = probes.decoder_values(logits, batch, variable)
            targets = probe_rows(np.asarray(cache["hidden"]), batch, variable).targets
            assert probes.r_squared(values, targets) == pytest.approx(1.0, abs=1e-6)
        else:
            assert probes.decoder_hits(logits, batch, variable).all(), variable


def test_a_mask_one_probe_picks_one_node_per_graph_whatever_its_bias(
    compiled_dfs_run,
):
    """Read as its decoder is: each (step, graph)'s highest-scoring node.  A
    bias shifted far below zero leaves the hits as they were; read by sign,
    every node would read 'not selected'."""
    import dataclasses

    batch, cache = compiled_dfs_run
    rows = probe_rows(np.asarray(cache["hidden"]), batch, "s")
    assert np.all(np.bincount(rows.group, weights=rows.targets) == 1)
    fitted = fit_probe(rows, steps=100)
    hits = probes.probe_hits(fitted, rows)
    chosen = hits == (rows.targets > 0.5)
    assert np.all(np.bincount(rows.group, weights=chosen) == 1)
    params = {**fitted.params, "out": {**fitted.params["out"]}}
    params["out"]["b"] = params["out"]["b"] - 100.0
    shifted = probes.probe_hits(dataclasses.replace(fitted, params=params), rows)
    np.testing.assert_array_equal(shifted, hits)
    at_one = rows.at_step(int(rows.steps[0]))
    assert np.all(np.bincount(at_one.group, weights=at_one.targets)[at_one.group] == 1)
