"""The fork's ``dfs_reverse`` (``LSaldyt/clrs``, branch ``dfs_reverse``, ``1b93c22``).

dm-clrs's DFS with one more node pointer hint, ``pi_rh``: a node's last-pushed
child, itself until it pushes.  Checked against traces derived by hand from
the fork's definition, against dm-clrs's ``dfs`` for every other hint, and
through the samplers and the training stream.
"""

from __future__ import annotations

import numpy as np
import pytest

from nar_gap.tasks import algorithms, specs
from nar_gap.tasks._clrs import clrs, clrs_algorithms, clrs_samplers
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.sampling import sample_batch, train_batch

H, N, P = "hint", "node", "pointer"
# The fork's specs.py entry, written out in its order: pi_rh comes before pi_h.
FORK_SPEC = {
    "pos": ("input", N, "scalar"),
    "A": ("input", "edge", "scalar"),
    "adj": ("input", "edge", "mask"),
    "pi": ("output", N, P),
    "pi_rh": (H, N, P),
    "pi_h": (H, N, P),
    "color": (H, N, "categorical"),
    "d": (H, N, "scalar"),
    "f": (H, N, "scalar"),
    "s_prev": (H, N, P),
    "s": (H, N, "mask_one"),
    "u": (H, N, "mask_one"),
    "v": (H, N, "mask_one"),
    "s_last": (H, N, "mask_one"),
    "time": (H, "graph", "scalar"),
}


def _graph(n: int, edges: list[tuple[int, int]]) -> np.ndarray:
    a = np.zeros((n, n), dtype=np.int64)
    for u, v in edges:
        a[u, v] = 1
    return a


def _hints(adjacency: np.ndarray) -> dict[str, np.ndarray]:
    """``name -> [T, ...]`` from the reference's finalized probes."""
    _, probes = algorithms.dfs_reverse(adjacency)
    out = {}
    for location in probes["hint"].values():
        out.update({name: np.asarray(p["data"]) for name, p in location.items()})
    return out


def _one_hot_rows(ids: list[int], n: int) -> np.ndarray:
    return np.eye(n)[ids]


# Each case: one row per snapshot, (event, pi_rh, pi_h, colours, s, u, v,
# s_last, time in hundredths).  The events are R(x) new root, D(x) discovery,
# P(x) push, F(x) finish; dm-clrs's rules, applied by hand:
# - R(x): the lowest white node; s = u = v = s_last = x, nothing else changes.
# - D(x): x entered while white or while d[x] = 0 (a pushed node is grey
#   already): time += 0.01, d[x] = time, grey.
# - P(y) by u: u's lowest white out-neighbour y: pi[y] = u, pi_rh[u] = y,
#   y grey, s_prev[y] = s_last, s_last = v = y; u stays the cursor.
# - F(u): u pushed nothing, so ``for v in range(N)`` ran out: v = N - 1;
#   black, time += 0.01, f[u] = time; then s_last pops to s_prev[u] and the
#   node below (grey, d > 0) scans again without a D snapshot.
# W, G, B = 0, 1, 2.
PATH = (  # 0 -> 1 -> 2: one deep stack, pi_rh follows the path
    _graph(3, [(0, 1), (1, 2)]),
    [
        ("R0", [0, 1, 2], [0, 1, 2], [0, 0, 0], 0, 0, 0, 0, 0),
        ("D0", [0, 1, 2], [0, 1, 2], [1, 0, 0], 0, 0, 0, 0, 1),
        ("P1", [1, 1, 2], [0, 0, 2], [1, 1, 0], 0, 0, 1, 1, 1),  # by 0
        ("D1", [1, 1, 2], [0, 0, 2], [1, 1, 0], 0, 1, 1, 1, 2),
        ("P2", [1, 2, 2], [0, 0, 1], [1, 1, 1], 0, 1, 2, 2, 2),  # by 1
        ("D2", [1, 2, 2], [0, 0, 1], [1, 1, 1], 0, 2, 2, 2, 3),
        ("F2", [1, 2, 2], [0, 0, 1], [1, 1, 2], 0, 2, 2, 2, 4),  # v = N - 1 = 2
        ("F1", [1, 2, 2], [0, 0, 1], [1, 2, 2], 0, 1, 2, 1, 5),
        ("F0", [1, 2, 2], [0, 0, 1], [2, 2, 2], 0, 0, 2, 0, 6),
    ],
)
BACK_EDGE = (  # 0 -> 1 -> 2 -> 0 (a back edge to a grey node), 0 -> 3
    _graph(4, [(0, 1), (0, 3), (1, 2), (2, 0)]),
    [
        ("R0", [0, 1, 2, 3], [0, 1, 2, 3], [0, 0, 0, 0], 0, 0, 0, 0, 0),
        ("D0", [0, 1, 2, 3], [0, 1, 2, 3], [1, 0, 0, 0], 0, 0, 0, 0, 1),
        ("P1", [1, 1, 2, 3], [0, 0, 2, 3], [1, 1, 0, 0], 0, 0, 1, 1, 1),  # by 0
        ("D1", [1, 1, 2, 3], [0, 0, 2, 3], [1, 1, 0, 0], 0, 1, 1, 1, 2),
        ("P2", [1, 2, 2, 3], [0, 0, 1, 3], [1, 1, 1, 0], 0, 1, 2, 2, 2),  # by 1
        ("D2", [1, 2, 2, 3], [0, 0, 1, 3], [1, 1, 1, 0], 0, 2, 2, 2, 3),
        # 2 -> 0 leads to grey 0: not pushed, so 2 finishes.
        ("F2", [1, 2, 2, 3], [0, 0, 1, 3], [1, 1, 2, 0], 0, 2, 3, 2, 4),
        ("F1", [1, 2, 2, 3], [0, 0, 1, 3], [1, 2, 2, 0], 0, 1, 3, 1, 5),
        # 0 scans again and pushes 3: pi_rh[0] moves from 1 to 3.
        ("P3", [3, 2, 2, 3], [0, 0, 1, 0], [1, 2, 2, 1], 0, 0, 3, 3, 5),  # by 0
        ("D3", [3, 2, 2, 3], [0, 0, 1, 0], [1, 2, 2, 1], 0, 3, 3, 3, 6),
        ("F3", [3, 2, 2, 3], [0, 0, 1, 0], [1, 2, 2, 2], 0, 3, 3, 3, 7),
        ("F0", [3, 2, 2, 3], [0, 0, 1, 0], [2, 2, 2, 2], 0, 0, 3, 0, 8),
    ],
)
DISCONNECTED = (  # 1 -> 2; nodes 0 and 3 isolated: three roots
    _graph(4, [(1, 2)]),
    [
        ("R0", [0, 1, 2, 3], [0, 1, 2, 3], [0, 0, 0, 0], 0, 0, 0, 0, 0),
        ("D0", [0, 1, 2, 3], [0, 1, 2, 3], [1, 0, 0, 0], 0, 0, 0, 0, 1),
        ("F0", [0, 1, 2, 3], [0, 1, 2, 3], [2, 0, 0, 0], 0, 0, 3, 0, 2),
        ("R1", [0, 1, 2, 3], [0, 1, 2, 3], [2, 0, 0, 0], 1, 1, 1, 1, 2),
        ("D1", [0, 1, 2, 3], [0, 1, 2, 3], [2, 1, 0, 0], 1, 1, 1, 1, 3),
        ("P2", [0, 2, 2, 3], [0, 1, 1, 3], [2, 1, 1, 0], 1, 1, 2, 2, 3),  # by 1
        ("D2", [0, 2, 2, 3], [0, 1, 1, 3], [2, 1, 1, 0], 1, 2, 2, 2, 4),
        ("F2", [0, 2, 2, 3], [0, 1, 1, 3], [2, 1, 2, 0], 1, 2, 3, 2, 5),
        ("F1", [0, 2, 2, 3], [0, 1, 1, 3], [2, 2, 2, 0], 1, 1, 3, 1, 6),
        # 2 is black, so the next root is 3; an isolated node pushes nothing.
        ("R3", [0, 2, 2, 3], [0, 1, 1, 3], [2, 2, 2, 0], 3, 3, 3, 3, 6),
        ("D3", [0, 2, 2, 3], [0, 1, 1, 3], [2, 2, 2, 1], 3, 3, 3, 3, 7),
        ("F3", [0, 2, 2, 3], [0, 1, 1, 3], [2, 2, 2, 2], 3, 3, 3, 3, 8),
    ],
)
HAND_TRACES = {"path": PATH, "back_edge": BACK_EDGE, "disconnected": DISCONNECTED}


def test_the_spec_is_the_forks_in_the_forks_order():
    assert list(specs.get_spec("dfs_reverse").items()) == list(FORK_SPEC.items())
    assert not specs.has_source("dfs_reverse")
    assert specs.samples_directed("dfs_reverse")
    assert specs.sampler_class("dfs_reverse") is clrs_samplers.DfsSampler
    assert algorithms.reference_algorithm("dfs_reverse") is algorithms.dfs_reverse


@pytest.mark.parametrize("name", list(HAND_TRACES))
def test_the_trace_is_the_hand_derived_one(name):
    adjacency, rows = HAND_TRACES[name]
    n = len(adjacency)
    hints = _hints(adjacency)
    columns = map(list, zip(*rows, strict=True))
    events, pi_rh, pi_h, colors, s, u, v, s_last, hundredths = columns
    assert len(hints["pi_rh"]) == 3 * n == len(rows)
    np.testing.assert_array_equal(hints["pi_rh"], pi_rh)
    np.testing.assert_array_equal(hints["pi_h"], pi_h)
    np.testing.assert_array_equal(hints["color"], np.eye(3)[colors])
    for probe, ids in (("s", s), ("u", u), ("v", v), ("s_last", s_last)):
        np.testing.assert_array_equal(hints[probe], _one_hot_rows(ids, n), probe)
    np.testing.assert_allclose(hints["time"], np.array(hundredths) / 100, atol=1e-12)
    # d and f: the time of each node's D and F snapshot, 0 before it.
    for probe, kind in (("d", "D"), ("f", "F")):
        expected = np.zeros((len(rows), n))
        for t, event in enumerate(events):
            if event[0] == kind:
                expected[t:, int(event[1:])] = hundredths[t] / 100
        np.testing.assert_allclose(hints[probe], expected, atol=1e-12, err_msg=probe)


def test_the_path_stack_links_by_hand():
    """``s_prev``: the node below on the stack, itself when not on it.

    Pushing 1 links it to 0 (snapshot 2), pushing 2 links it to 1 (4); a pop
    resets the popped node's link after its F snapshot, so the reset shows
    one snapshot later (2's at 7, 1's at 8).
    """
    hints = _hints(PATH[0])
    expected = [[0, 1, 2]] * 2 + [[0, 0, 2]] * 2 + [[0, 0, 1]] * 3 + [[0, 0, 2]]
    expected += [[0, 1, 2]]
    np.testing.assert_array_equal(hints["s_prev"], expected)


def _directed_graphs() -> list[np.ndarray]:
    rng = np.random.RandomState(3)
    cases = [
        rng.binomial(1, rng.uniform(0.05, 0.9), size=(n, n))
        for n in rng.randint(1, 13, size=60)
    ]
    return cases + [np.zeros((1, 1), int), np.ones((1, 1), int), np.ones((5, 5), int)]


@pytest.mark.parametrize("adjacency", _directed_graphs())
def test_every_other_probe_is_dm_clrs_dfs_and_pi_rh_reverses_the_pushes(adjacency):
    pi, probes = algorithms.dfs_reverse(adjacency)
    dfs_pi, dfs_probes = clrs_algorithms.dfs(adjacency)
    np.testing.assert_array_equal(pi, dfs_pi)
    for stage in ("input", "output", "hint"):
        for location, probe_set in dfs_probes[stage].items():
            for name, probe in probe_set.items():
                ours = probes[stage][location][name]["data"]
                np.testing.assert_array_equal(ours, probe["data"], err_msg=name)
    # pi_rh[t][u] is the last node whose pi_h became u by snapshot t.
    pi_h = probes["hint"]["node"]["pi_h"]["data"]
    expected = np.arange(len(adjacency))
    for t, row in enumerate(probes["hint"]["node"]["pi_rh"]["data"]):
        changed = np.flatnonzero(pi_h[t] != (pi_h[t - 1] if t else pi_h[0]))
        assert len(changed) <= 1
        expected = expected.copy()
        expected[pi_h[t][changed]] = changed
        np.testing.assert_array_equal(row, expected, err_msg=f"snapshot {t}")


def test_it_is_sampled_as_dfs_is():
    """DfsSampler's graphs: the same batch as ``dfs``'s, with ``pi_rh`` added."""
    ours = sample_batch("dfs_reverse", 7, 3, seed=5)
    theirs = sample_batch("dfs", 7, 3, seed=5)
    assert list(ours.hints) == [n for n, p in FORK_SPEC.items() if p[0] == H]
    for name, value in theirs.hints.items():
        np.testing.assert_array_equal(ours.hints[name], value, err_msg=name)
    for group in ("inputs", "outputs"):
        for name, value in getattr(theirs, group).items():
            np.testing.assert_array_equal(getattr(ours, group)[name], value)
    assert ours.hints["pi_rh"].shape == (21, 3, 7)
    stream = train_batch("dfs_reverse", seed=1, step=2, lengths=(4, 5), batch_size=2)
    assert stream.num_nodes == 4 and "pi_rh" in stream.hints


def test_a_users_graph_and_its_refusals():
    batch = batch_from_graph("dfs_reverse", DISCONNECTED[0].astype(float) * 0.5)
    np.testing.assert_array_equal(batch.inputs["A"][0], DISCONNECTED[0])
    np.testing.assert_array_equal(batch.outputs["pi"][0], [0, 1, 1, 3])
    with pytest.raises(ValueError, match="dfs_reverse takes no source"):
        batch_from_graph("dfs_reverse", np.eye(3), 0)
    with pytest.raises(ValueError, match=r"square .* found \(2, 3\)"):
        algorithms.dfs_reverse(np.zeros((2, 3)))


def test_it_is_a_known_algorithm_that_dm_clrs_lacks():
    """nar_gap's own reference: dm-clrs 2.0.3 has no ``dfs_reverse``."""
    assert specs.ALGORITHMS[-1] == "dfs_reverse"
    assert "dfs_reverse" not in clrs.SPECS
    assert not hasattr(clrs_algorithms, "dfs_reverse")
