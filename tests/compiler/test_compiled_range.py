"""Compiled models on the graphs users bring: any distance, any size, two dtypes.

Issue 17's acceptance: long paths, trees, barbells, weights above 1 and
3-decimal weights run exactly against dm-clrs (near-ties reported as ties
with their gap, never as mismatches), in float32 and float64; sparse graphs
to 4096 nodes under ``-m slow``.  Every comparison is against dm-clrs's own
trace on every hint and output (``CompiledModel.run``).
"""

from __future__ import annotations

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nar_gap.cli import main
from nar_gap.compiler import CompilerConfig, compile_algorithm, precision, save_compiled
from nar_gap.paper.experiments import size_sweep
from nar_gap.tasks.families import FAMILIES, make_graph

DTYPES = ("float32", "float64")


@pytest.fixture(scope="module")
def models():
    return {
        (algorithm, dtype): compile_algorithm(algorithm, None, dtype=dtype)
        for algorithm in ("bfs", "bellman_ford")
        for dtype in DTYPES
    }


def _exact(run) -> None:
    assert not run.mismatches, "\n".join(map(str, run.mismatches[:3]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_200_node_path_with_clrs_weights_is_exact(dtype, models):
    """Distance ~100 (no fixed cap: the range is fitted to the graph)."""
    weights = make_graph("path", 200, seed=1)
    run = models[("bellman_ford", dtype)].run(weights, 0)
    _exact(run)
    assert run.compiler_config.max_distance >= 64
    assert run.compiler_config.dtype == dtype


@pytest.mark.parametrize(
    ("algorithm", "dtype"),
    [("bfs", "float32"), ("bellman_ford", "float32"), ("bellman_ford", "float64")],
)
@pytest.mark.parametrize(
    ("family", "n"),
    [
        ("tree", 256),
        ("barbell", 30),
        ("power_law", 300),
        ("two_blocks", 64),
        ("geometric", 64),
    ],
)
def test_trees_barbells_power_law_and_dense_new_graphs_are_exact(
    family, n, algorithm, dtype, models
):
    weights = make_graph(family, n, seed=2, weighted=algorithm == "bellman_ford")
    _exact(models[(algorithm, dtype)].run(weights, 0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_weights_above_1_are_exact(dtype, models):
    weights = 10.0 * make_graph("er_p0.1", 64, seed=3)  # weights in (0, 10]
    run = models[("bellman_ford", dtype)].run(weights, 0)
    _exact(run)
    assert run.compiler_config.max_weight == 16.0


def _one_ulp_tie() -> np.ndarray:
    """0.3 + 0.5 = 0.8 via node 1, 0.1 + 0.7 = 0.7999999999999999 via node 2.

    Decimal-equal routes to node 3 that float64 tells apart by one ulp
    (1.1e-16): dm-clrs takes node 2, no float network can see why.
    """
    weights = np.zeros((4, 4))
    for u, v, w in ((0, 1, 0.3), (1, 3, 0.5), (0, 2, 0.1), (2, 3, 0.7)):
        weights[u, v] = weights[v, u] = w
    return weights


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_one_ulp_decimal_tie_is_reported_as_a_tie_with_its_gap(dtype, models):
    assert 0.1 + 0.7 < 0.3 + 0.5  # the float64 fact the test is about
    run = models[("bellman_ford", dtype)].run(_one_ulp_tie(), 0)
    assert not run.mismatches
    parents = {(t.probe, t.node, t.expected, t.found) for t in run.ties}
    assert ("pi", 3, 2, 1) in parents
    assert all(t.gap < 1e-15 for t in run.ties if t.probe == "pi")
    assert all("tie within" in str(t) for t in run.ties)


@pytest.mark.parametrize("dtype", DTYPES)
def test_three_decimal_weights_are_exact_up_to_reported_ties(dtype, models):
    weights = make_graph("power_law", 300, seed=4, decimals=3)
    run = models[("bellman_ford", dtype)].run(weights, 0)
    _exact(run)  # ties, if any, are listed apart from errors
    assert all(t.gap <= t.resolution for t in run.ties)


def test_float64_decides_gaps_float32_calls_ties(models):
    """The gadget's gap of 2e-6 is below float32's resolution, above float64's
    measured limit: float32 reports a tie, float64 follows dm-clrs."""
    weights = precision.near_tie_gadget(0.0, 2e-6)
    low = models[("bellman_ford", "float32")].run(weights, 0)
    high = models[("bellman_ford", "float64")].run(weights, 0)
    assert low.ties and not low.mismatches and int(low.outputs["pi"][4]) == 2
    assert not high.ties and not high.mismatches and int(high.outputs["pi"][4]) == 3
    assert high.resolution < low.resolution / 10
    # Distances in float64 carry float64 rounding only.
    truth = np.asarray(high.reference.hints["d"][:, 0], np.float64)
    assert np.abs(high.hints["d"] - truth).max() < 1e-12


def test_float64_runs_leave_jax_in_float32(models):
    """x64 mode is scoped to the compiled model's own calls."""
    models[("bellman_ford", "float64")].run(precision.near_tie_gadget(1.0, 0.1), 0)
    assert jnp.ones(1).dtype == jnp.float32
    assert not jax.config.jax_enable_x64


def test_compiler_config_states_each_dtypes_limit():
    CompilerConfig(dtype="float64", distance_scale=4e8 / 9)
    with pytest.raises(ValueError, match="float32 score logits"):
        CompilerConfig(distance_scale=4e8 / 9)
    with pytest.raises(ValueError, match="dtype must be one of float32, float64"):
        CompilerConfig(dtype="float16")


def test_check_exits_0_on_ties_and_1_on_a_corrupted_bellman_ford_file(
    tmp_path, capsys, models
):
    lines = ["nodes 4"] + [
        f"{u} {v} {w!r}"
        for u, v, w in ((0, 1, 0.3), (1, 3, 0.5), (0, 2, 0.1), (2, 3, 0.7))
    ]
    graph = tmp_path / "decimal_tie.txt"
    graph.write_text("\n".join(lines) + "\n")
    argv = ["run", "bellman_ford", "--graph", str(graph), "--source", "0", "--check"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["exact"] is True and report["ties"]

    model = models[("bellman_ford", "float32")]
    net = model.params["net"]
    head = dict(net["processor"]["head_0"])
    head["kernel"] = -head["kernel"]  # attention now prefers the worst sender
    params = {"net": {**net, "processor": {**net["processor"], "head_0": head}}}
    corrupted = tmp_path / "corrupted.msgpack"
    save_compiled(dataclasses.replace(model, params=params), corrupted)
    path = tmp_path / "path.txt"
    path.write_text("".join(f"{k} {k + 1} 0.5\n" for k in range(10)))  # d <= 8
    argv = ["run", "bellman_ford", "--graph", str(path), "--source", "0", "--check"]
    assert main([*argv, "--params", str(corrupted)]) == 1
    assert "mismatch" in capsys.readouterr().err


def test_every_family_is_symmetric_connected_and_seeded():
    from scipy.sparse.csgraph import connected_components

    for family in FAMILIES:
        weights = make_graph(family, 50, seed=5)
        assert weights.shape == (50, 50) and np.array_equal(weights, weights.T)
        assert np.all(np.diag(weights) == 0) and np.all(weights >= 0)
        assert np.array_equal(weights, make_graph(family, 50, seed=5))
        if family != "er_sparse":  # G(n, 2 ln n / n) is connected w.h.p. only
            assert connected_components(weights != 0)[0] == 1, family
    assert np.all(make_graph("path", 8, 0, decimals=3) % 0.001 < 1e-12 + 0.001)
    with pytest.raises(ValueError, match="unknown graph family 'ring'; known: er_p0.5"):
        make_graph("ring", 8, 0)


def _density(family: str, n: int = 64, seeds: int = 20) -> float:
    """The mean share of node pairs joined, over ``seeds`` graphs."""
    edges = [np.count_nonzero(make_graph(family, n, s, False)) for s in range(seeds)]
    return float(np.mean(edges)) / (n * (n - 1))


def _transitivity(family: str, n: int = 64, seeds: int = 20) -> float:
    """The share of two-edge paths closed into triangles, over ``seeds`` graphs."""
    closed = paths = 0.0
    for seed in range(seeds):
        a = make_graph(family, n, seed, False)
        closed += np.trace(a @ a @ a)
        paths += np.sum(a @ a) - np.trace(a @ a)
    return closed / paths


def test_the_dense_new_families_change_structure_not_density():
    """Two blocks and geometric graphs: each within 0.03 of the density of
    CLRS's test graphs (p² = 0.25, as ``er_p0.25``; the sparse families and
    G(n, 0.5) are not), and more clustered than G(n, 0.25)."""
    dense, clustered = _density("er_p0.25"), _transitivity("er_p0.25")
    assert abs(dense - 0.25) < 0.01
    for family in ("two_blocks", "geometric"):
        assert abs(_density(family) - dense) < 0.03, family
        assert _transitivity(family) > clustered + 0.05, family
    for family in ("er_p0.1", "er_p0.5", "tree", "power_law"):
        assert abs(_density(family) - dense) > 0.14, family


def _loops_and_weights(graphs: list[np.ndarray]) -> tuple[float, np.ndarray]:
    """The fraction of nodes with a self-loop, and every off-diagonal weight."""
    loops = np.mean([np.mean(np.diag(g) != 0) for g in graphs])
    off = np.concatenate([g[~np.eye(len(g), dtype=bool)] for g in graphs])
    return float(loops), off[off != 0]


@pytest.mark.parametrize("clrs_law", (True, False))
def test_dm_clrs_law_draws_the_test_graphs_self_loops_and_weights(clrs_law):
    """Our Erdős–Rényi graphs of the test density, drawn by dm-clrs's law, have
    the test split's self-loops (within 0.05) and weights (two-sample KS, 32
    graphs each); drawn by ours (no self-loops, uniform weights) they have not."""
    from scipy.stats import ks_2samp

    from nar_gap.tasks.sampling import eval_batch

    test = np.asarray(eval_batch("bellman_ford", "test", 64).inputs["A"])
    ours = [make_graph("er_p0.25", 64, k, clrs_law=clrs_law) for k in range(32)]
    (their_loops, theirs), (our_loops, weights) = map(
        _loops_and_weights, (list(test), ours)
    )
    assert abs(their_loops - 0.5) < 0.05
    same = ks_2samp(theirs, weights).pvalue > 0.01
    assert (abs(our_loops - their_loops) < 0.05 and same) == clrs_law


def test_dense_new_structure_by_dm_clrs_law_is_exact(models):
    for family in ("two_blocks", "geometric"):
        for algorithm in ("bfs", "bellman_ford"):
            weighted = algorithm == "bellman_ford"
            weights = make_graph(family, 64, 3, weighted=weighted, clrs_law=True)
            assert np.diag(weights).any()
            _exact(models[(algorithm, "float32")].run(weights, 0))
    with pytest.raises(ValueError, match="no decimals"):
        make_graph("geometric", 8, 0, decimals=3, clrs_law=True)


def test_the_decisive_gap_is_read_off_dm_clrs_trace():
    from nar_gap.tasks.graphs import batch_from_graph

    batch = batch_from_graph(
        "bellman_ford", precision.near_tie_gadget(0.0, 2e-6), 0, float_dtype=np.float64
    )
    assert math.isclose(precision.smallest_decisive_gap(batch), 2e-6, rel_tol=1e-6)


def test_the_size_sweep_still_answers_to_the_precision_names_it_held():
    for name in ("smallest_decisive_gap", "near_tie_gadget", "precision_limits"):
        assert getattr(size_sweep, name) is getattr(precision, name)
    assert size_sweep.PRECISION_GAPS == precision.PRECISION_GAPS


def test_the_sweep_writes_its_table_breakdown_and_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(size_sweep, "PRECISION_DISTANCES", (0.0,))
    monkeypatch.setattr(size_sweep, "PRECISION_GAPS", (1e-2, 1e-4))
    monkeypatch.setattr(
        size_sweep,
        "precision_limits",
        lambda: [{"dtype": "float32", "smallest_exact_gap": 1e-4}],
    )
    rows = size_sweep.sweep(
        tmp_path / "results",
        tmp_path / "figures",
        families=("tree",),
        sizes=(16,),
        progress=False,
    )
    assert {(r["family"], r["algorithm"], r["dtype"]) for r in rows} == {
        ("tree", a, d) for a in ("bfs", "bellman_ford") for d in DTYPES
    }
    assert all(r["status"] == "exact" for r in rows)
    for name in (
        "compiled_size_sweep.csv",
        "compiled_size_sweep.csv.json",
        "compiled_size_sweep_breakdown.csv",
        "compiled_precision_limits.csv",
    ):
        assert (tmp_path / "results" / name).is_file(), name
    assert (tmp_path / "figures" / "fig_compiled_size_sweep.png").is_file()
    with pytest.raises(ValueError, match="unknown graph family"):
        size_sweep.sweep(tmp_path, tmp_path, families=("ring",), progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ("bfs", "bellman_ford"))
@pytest.mark.parametrize("family", ("er_sparse", "tree", "power_law"))
def test_sparse_graphs_of_4096_nodes_are_exact(family, algorithm, models):
    weights = make_graph(family, 4096, seed=6, weighted=algorithm == "bellman_ford")
    _exact(models[(algorithm, "float32")].run(weights, 0))


def test_senders_off_the_input_graph_lose_to_every_joined_one():
    """Bellman-Ford's first criterion: CLRS also attends along decoded pointers,
    and a wrong one would be an edge of length 0 (A = 0 across it)."""
    from nar_gap.compiler.selection import lower_selection
    from nar_gap.programs.registry import get_program

    config = CompilerConfig()
    channels, scales = lower_selection(get_program("bellman_ford").selection, config)
    linked = channels[0]
    assert linked.label == "linked" and linked.head == -1.0
    assert scales[0].criterion == "Linked"
    joined, off = (
        np.float32(linked.edge.const) + np.float32(c) * np.float32(a)
        for c, a in ((linked.edge.terms[0][1], 1.0), (linked.edge.terms[0][1], 0.0))
    )
    assert joined == 0.0  # real edges' logits are exactly those without it
    later = sum(s.span for s in scales[1:])
    assert linked.head * off <= -(config.margin + later)


def test_split_near_ties_are_ties_only_on_tied_candidates():
    from nar_gap.compiler.ties import SPLIT_MASS, _split

    scores = np.array([0.5, 0.50001, 0.9, 0.1])
    joined = np.array([True, True, True, False])

    def split(row):
        return _split(np.array(row), scores, 0, joined, resolution=1e-4)

    assert split([0.98, 0.02, 0.0, 0.0]) == (pytest.approx(1e-5), 2)
    small = SPLIT_MASS / 2  # a leak onto a far candidate below the allowance
    assert split([0.98, 0.02 - small, small, 0.0]) == (pytest.approx(1e-5), 2)
    far = 2 * SPLIT_MASS  # more than that on a candidate 0.4 worse: an error
    assert split([0.98, 0.02 - far, far, 0.0]) == (math.inf, 0)
    assert split([0.5, 0.0, 0.0, 0.5]) == (math.inf, 0)  # off the input graph
    assert split([1.0, 0.0, 0.0, 0.0]) == (math.inf, 0)  # no split at all


@pytest.mark.slow
def test_a_dense_graph_past_the_resolution_errs_only_by_ties():
    """The size sweep's first Bellman-Ford error (er_p0.5, 1024 nodes, float32):
    near-ties split the attention, the stored pointer names a third node, and
    before the Linked criterion that pointer opened a zero-length edge."""
    weights = make_graph("er_p0.5", 1024, 0, weighted=True)
    run = compile_algorithm("bellman_ford").run(weights, 0)
    assert not run.mismatches, run.mismatches[:3]
    assert any(t.split for t in run.ties)
    truth = np.asarray(run.reference.hints["d"][:, 0], np.float64)
    assert np.max(np.abs(run.hints["d"] - truth)) < 1e-4


def test_refitting_a_range_traces_the_parameter_tree_once_per_network(monkeypatch):
    """A graph beyond the compiled range compiles the program again (twice:
    once more to check the parameters are its program's).  The tree's shapes
    come from tracing Flax's ``init`` (about 0.45 s), so they are traced once
    per network configuration; the parameters are the same as without the
    cache.  Seen failing with the cache removed: 4 traces."""
    from nar_gap.compiler import parameters
    from nar_gap.compiler.precision import near_tie_gadget

    model = compile_algorithm("bellman_ford", None)
    parameters._shapes.cache_clear()
    traced = []
    real = parameters.param_shapes
    monkeypatch.setattr(
        parameters,
        "param_shapes",
        lambda config, batch: traced.append(config) or real(config, batch),
    )
    runs = [model.run(near_tie_gadget(8.0, gap), 0) for gap in (0.01, 0.005)]
    assert {r.compiler_config.max_distance for r in runs} == {16.0}
    assert len(traced) == 1
    wide = dataclasses.replace(model.compiler_config, max_distance=16.0)
    fresh = compile_algorithm("bellman_ford", None, config=wide)
    parameters._shapes.cache_clear()
    monkeypatch.setattr(parameters, "param_shapes", real)
    uncached = compile_algorithm("bellman_ford", None, config=wide)
    for a, b in zip(
        jax.tree.leaves(fresh.params), jax.tree.leaves(uncached.params), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
