"""The registry (benchmark.specs) and the fork's variants (benchmark.algorithms).

The variants are checked against dm-clrs's own bfs and dfs on many random graphs
plus hand-made edge cases, and against hand-traced examples of their cadence.
"""

from __future__ import annotations

import numpy as np
import pytest

from nar_gap.tasks import algorithms, specs
from nar_gap.tasks._clrs import clrs, clrs_algorithms, clrs_samplers, clrs_specs


def _hint(probes: dict, name: str) -> np.ndarray:
    """[T, ...] hint data of a finalized ProbesDict."""
    for location in probes["hint"].values():
        if name in location:
            return location[name]["data"]
    raise KeyError(name)


def _undirected_graphs() -> list[tuple[np.ndarray, int]]:
    """(A, source) pairs: random ER graphs as BfsSampler draws them, plus edge cases."""
    rng = np.random.RandomState(0)
    cases = []
    for _ in range(150):
        num_nodes = rng.randint(1, 13)
        edges = rng.binomial(1, rng.uniform(0.05, 0.9), size=(num_nodes, num_nodes))
        cases.append((edges * edges.T, rng.randint(num_nodes)))
    cases += [
        (np.zeros((1, 1), dtype=int), 0),  # one node
        (np.ones((1, 1), dtype=int), 0),  # one node with a self loop
        (np.zeros((5, 5), dtype=int), 2),  # no edges: isolated source
        (np.eye(4, dtype=int), 1),  # self loops only
        (np.ones((6, 6), dtype=int), 5),  # complete, ties everywhere
    ]
    return cases


def _directed_graphs() -> list[np.ndarray]:
    """Adjacency matrices as DfsSampler draws them (directed), plus edge cases."""
    rng = np.random.RandomState(1)
    cases = [
        rng.binomial(1, rng.uniform(0.05, 0.9), size=(n, n))
        for n in rng.randint(1, 13, size=150)
    ]
    cases += [np.zeros((1, 1), int), np.zeros((4, 4), int), np.ones((5, 5), int)]
    return cases


UNDIRECTED = _undirected_graphs()
DIRECTED = _directed_graphs()


# ------------------------------------------------------------------------- registry


def test_algorithms_are_the_five_of_the_paper_and_the_forks_dfs_reverse():
    assert specs.ALGORITHMS == (
        "bfs",
        "bfs_seq",
        "bellman_ford",
        "dfs",
        "dfs_light",
        "dfs_reverse",
    )


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford", "dfs"])
def test_get_spec_is_dm_clrs_spec_in_dm_clrs_order(algorithm):
    spec = specs.get_spec(algorithm)
    assert list(spec.items()) == list(clrs.SPECS[algorithm].items())


def test_bfs_seq_has_exactly_bfs_spec():
    assert list(specs.get_spec("bfs_seq").items()) == list(clrs.SPECS["bfs"].items())


def test_dfs_light_has_dfs_inputs_outputs_and_only_pi_h_and_color_hints():
    spec = specs.get_spec("dfs_light")
    dfs = clrs.SPECS["dfs"]
    assert list(spec) == ["pos", "A", "adj", "pi", "pi_h", "color"]
    assert all(spec[name] == dfs[name] for name in spec)
    hints = [name for name, probe in spec.items() if probe[0] == clrs.Stage.HINT]
    assert hints == ["pi_h", "color"]


def test_spec_entries_use_dm_clrs_string_constants():
    stage, location, type_ = specs.get_spec("bfs")["pi_h"]
    assert (stage, location, type_) == ("hint", "node", "pointer")
    assert stage == clrs_specs.Stage.HINT


def test_get_spec_returns_a_copy_callers_cannot_use_to_change_the_registry():
    spec = specs.get_spec("bfs")
    spec["pi_h"] = ("hint", "node", "mask")
    del spec["pos"]
    assert specs.get_spec("bfs")["pi_h"] == ("hint", "node", "pointer")
    assert "pos" in specs.get_spec("bfs")
    assert clrs.SPECS["bfs"]["pi_h"][2] == "pointer"


@pytest.mark.parametrize("bad", ["bfs_sequential", "BFS", "", None])
def test_unknown_algorithm_error_names_the_bad_name_and_lists_the_known_ones(bad):
    for function in (
        specs.get_spec,
        specs.has_source,
        algorithms.reference_algorithm,
        specs.sampler_class,
    ):
        with pytest.raises(specs.UnknownAlgorithmError) as error:
            function(bad)
        assert repr(bad) in str(error.value)
        assert all(name in str(error.value) for name in specs.ALGORITHMS)
        assert isinstance(error.value, ValueError)


def test_has_source_only_for_bfs_family_and_bellman_ford():
    assert [specs.has_source(name) for name in specs.ALGORITHMS] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]


def test_reference_algorithm_is_dm_clrs_own_or_ours_for_the_variants():
    assert algorithms.reference_algorithm("bfs") is clrs_algorithms.bfs
    assert (
        algorithms.reference_algorithm("bellman_ford") is clrs_algorithms.bellman_ford
    )
    assert algorithms.reference_algorithm("dfs") is clrs_algorithms.dfs
    assert algorithms.reference_algorithm("bfs_seq") is algorithms.bfs_seq
    assert algorithms.reference_algorithm("dfs_light") is algorithms.dfs_light


def test_variants_use_the_sampler_of_the_algorithm_they_vary():
    assert specs.sampler_class("bfs_seq") is clrs_samplers.BfsSampler
    assert specs.sampler_class("dfs_light") is clrs_samplers.DfsSampler
    assert specs.sampler_class("bellman_ford") is clrs_samplers.BellmanFordSampler


# -------------------------------------------------------------------------- bfs_seq


def test_bfs_seq_cadence_on_a_hand_traced_path():
    # Path 0 - 1 - 2 from s = 0. Round 1 scans (0,1); round 2 scans (0,1), (1,0),
    # (1,2); round 3 changes nothing and scans all 4 pairs: T = 1 + 1 + 3 + 4.
    adjacency = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    pi, probes = algorithms.bfs_seq(adjacency, 0)
    reach = [[1, 0, 0]] * 2 + [[1, 1, 0]] * 3 + [[1, 1, 1]] * 4
    parents = [[0, 1, 2]] + [[0, 0, 2]] * 3 + [[0, 0, 1]] * 5
    np.testing.assert_array_equal(_hint(probes, "reach_h"), reach)
    np.testing.assert_array_equal(_hint(probes, "pi_h"), parents)
    np.testing.assert_array_equal(pi, [0, 0, 1])


@pytest.mark.parametrize("case", range(len(UNDIRECTED)))
def test_bfs_seq_agrees_with_bfs_and_its_invariants(case):
    adjacency, source = UNDIRECTED[case]
    bfs_pi, bfs_probes = clrs_algorithms.bfs(adjacency, source)
    pi, probes = algorithms.bfs_seq(adjacency, source)
    pi_h, reach_h = _hint(probes, "pi_h"), _hint(probes, "reach_h")
    bfs_pi_h, bfs_reach_h = _hint(bfs_probes, "pi_h"), _hint(bfs_probes, "reach_h")

    np.testing.assert_array_equal(pi, bfs_pi)  # same output
    np.testing.assert_array_equal(pi_h[-1], bfs_pi_h[-1])  # same last pi_h
    # T = 1 + sum over bfs's rounds of the edges leaving nodes reached at round start.
    out_edges = (adjacency > 0).sum(axis=1)
    assert len(pi_h) == 1 + int((bfs_reach_h @ out_edges).sum())
    # One scanned pair per step: at most one pointer changes.
    assert np.all((pi_h[1:] != pi_h[:-1]).sum(axis=1) <= 1)
    # reach_h lags: its distinct values, in order, are bfs's snapshots.
    changes = np.any(reach_h[1:] != reach_h[:-1], axis=1)
    np.testing.assert_array_equal(reach_h[np.r_[True, changes]], bfs_reach_h)
    # bfs's pointer snapshots appear in bfs_seq's, in order.
    position = 0
    for snapshot in bfs_pi_h:
        while position < len(pi_h) and not np.array_equal(pi_h[position], snapshot):
            position += 1
        assert position < len(pi_h), "bfs pi_h snapshot missing from bfs_seq"


def test_bfs_seq_rejects_a_non_square_matrix():
    with pytest.raises(ValueError, match=r"square .* found \(2, 3\)"):
        algorithms.bfs_seq(np.zeros((2, 3)), 0)


# ------------------------------------------------------------------------ dfs_light


def test_dfs_light_cadence_on_a_hand_traced_graph():
    # 0 -> 1, node 2 alone: roots 0 and 2, so T = 2 * 3 + 2.
    adjacency = np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    pi, probes = algorithms.dfs_light(adjacency)
    colors = [  # 0 white, 1 grey, 2 black
        [0, 0, 0],  # new root 0
        [1, 0, 0],  # discover 0
        [1, 1, 0],  # push 1 (grey already)
        [1, 2, 0],  # finish 1 (no discovery snapshot for pushed nodes)
        [2, 2, 0],  # finish 0
        [2, 2, 0],  # new root 2
        [2, 2, 1],  # discover 2
        [2, 2, 2],  # finish 2
    ]
    parents = [[0, 1, 2]] * 2 + [[0, 0, 2]] * 6
    np.testing.assert_array_equal(_hint(probes, "color").argmax(-1), colors)
    np.testing.assert_array_equal(_hint(probes, "pi_h"), parents)
    np.testing.assert_array_equal(pi, [0, 0, 2])


@pytest.mark.parametrize("case", range(len(DIRECTED)))
def test_dfs_light_agrees_with_dfs_and_its_invariants(case):
    adjacency = DIRECTED[case]
    num_nodes = len(adjacency)
    dfs_pi, dfs_probes = clrs_algorithms.dfs(adjacency)
    pi, probes = algorithms.dfs_light(adjacency)

    np.testing.assert_array_equal(pi, dfs_pi)
    num_roots = int((pi == np.arange(num_nodes)).sum())
    assert len(_hint(probes, "pi_h")) == 2 * num_nodes + num_roots
    # dfs_light's snapshots are exactly dfs's with the non-root discoveries (d
    # changes, u is not the root s) removed; those change neither pi nor color.
    d, u, s = (_hint(dfs_probes, name) for name in ("d", "u", "s"))
    discovery = np.r_[False, np.any(d[1:] != d[:-1], axis=1)]
    non_root_discovery = discovery & np.any(u != s, axis=1)
    keep = ~non_root_discovery
    for name in ("pi_h", "color"):
        np.testing.assert_array_equal(
            _hint(probes, name), _hint(dfs_probes, name)[keep], err_msg=name
        )
