"""The case table for compiled models: sampled CLRS graphs and hand-made ones.

Sampled cases come from dm-clrs's own samplers (several sizes and edge
probabilities); hand-made cases pin down where compiled models disagree
first: one node, an isolated source, disconnected parts, self loops, and ties
(BFS parent choice; Bellman-Ford equal distances, where CLRS keeps the old
predecessor unless strictly better and otherwise takes the lowest id).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nar_gap.programs.interpreter import run_program
from nar_gap.tasks.batch import Batch, concat_batches, pad_batch
from nar_gap.tasks.exactness import compare_with_clrs, format_mismatches
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.sampling import sample_batch

COMPILED_ALGORITHMS = ("bfs", "bellman_ford")


@dataclasses.dataclass(frozen=True)
class SampledCase:
    algorithm: str
    num_nodes: int
    p: float
    seed: int
    batch_size: int = 4

    def batch(self) -> Batch:
        return sample_batch(
            self.algorithm, self.num_nodes, self.batch_size, self.seed, p=(self.p,)
        )


def case_id(case) -> str:
    if isinstance(case, SampledCase):
        return f"{case.algorithm}-n{case.num_nodes}-p{case.p}-s{case.seed}"
    return f"{case.algorithm}-{case.name}"


SAMPLED_CASES = tuple(
    SampledCase(alg, n, p, seed=10 + n)
    for alg in COMPILED_ALGORITHMS
    for n in (4, 8, 16, 32, 64)
    for p in (0.2, 0.5)
)
LARGE_CASES = tuple(
    SampledCase(alg, n, p, seed=n, batch_size=1)
    for alg in COMPILED_ALGORITHMS
    for n, p in ((128, 0.5), (256, 0.1))
)


def _undirected(n: int, edges: list[tuple[int, int, float]]) -> np.ndarray:
    a = np.zeros((n, n))
    for u, v, w in edges:
        a[u, v] = a[v, u] = w
    return a


@dataclasses.dataclass(frozen=True)
class HandCase:
    algorithm: str
    name: str
    weights: np.ndarray
    source: int
    why: str

    def batch(self) -> Batch:
        return batch_from_graph(self.algorithm, self.weights, self.source)


def _hand_cases() -> tuple[HandCase, ...]:
    shared = {
        "one_node": (np.zeros((1, 1)), 0, "N = 1, T = 1: output from step 0"),
        "isolated_source": (
            _undirected(5, [(1, 2, 0.5), (2, 3, 0.25), (3, 4, 1.0)]),
            0,
            "nothing is reached; everyone keeps pi = self",
        ),
        "disconnected_parts": (
            _undirected(7, [(0, 1, 0.5), (1, 2, 0.5), (4, 5, 0.25), (5, 6, 0.75)]),
            1,
            "the other component stays unreached",
        ),
        "self_loops": (
            _undirected(
                5,
                [
                    (0, 0, 0.5),
                    (0, 1, 0.25),
                    (1, 1, 0.125),
                    (1, 2, 1.0),
                    (3, 3, 1.0),
                    (2, 4, 0.5),
                ],
            ),
            0,
            "self loops at the source, on the path, and at an unreached node",
        ),
        "isolated_source_with_loop": (
            _undirected(3, [(0, 0, 0.75), (1, 2, 1.0)]),
            0,
            "the source's own loop is its only edge",
        ),
        "path_source_in_middle": (
            _undirected(6, [(k, k + 1, 0.5) for k in range(5)]),
            3,
            "a long trace both ways",
        ),
    }
    cases = [
        HandCase(alg, name, w, s, why)
        for alg in COMPILED_ALGORITHMS
        for name, (w, s, why) in shared.items()
    ]
    cases += [
        HandCase(
            "bfs",
            "parent_tie_lowest_id",
            _undirected(6, [(0, 4, 1), (0, 2, 1), (4, 5, 1), (2, 5, 1), (1, 5, 1)]),
            0,
            "5 is reached by 2 and 4 in the same round: CLRS takes 2; 1 then "
            "hangs off 5",
        ),
        HandCase(
            "bfs",
            "parent_tie_high_source",
            _undirected(5, [(4, 0, 1), (4, 1, 1), (0, 3, 1), (1, 3, 1), (2, 3, 1)]),
            4,
            "ties between ids 0 and 1 below the source's id",
        ),
        HandCase(
            "bellman_ford",
            "equal_distance_lowest_id",
            _undirected(
                5, [(0, 3, 1.0), (0, 1, 1.0), (3, 4, 1.0), (1, 4, 1.0), (4, 2, 0.5)]
            ),
            0,
            "4 is reached with d = 2 via 1 and 3 in the same round (tie: CLRS takes 1)",
        ),
        HandCase(
            "bellman_ford",
            "equal_distance_keeps_old_parent",
            _undirected(
                10,
                [
                    (0, 5, 1.0),
                    (5, 4, 1.0),
                    (0, 1, 0.5),
                    (1, 2, 0.5),
                    (2, 4, 1.0),
                    (0, 6, 1.0),
                    (6, 7, 1.0),
                    (7, 8, 1.0),
                    (8, 9, 1.0),
                ],
            ),
            0,
            "4 gets d = 2 via 5 in round 2; in round 3 node 2 offers d = 2 too, "
            "with a lower id: CLRS keeps 5 (not strictly better); the path "
            "0-6-7-8-9 keeps the trace going so round 3 is observed",
        ),
        HandCase(
            "bellman_ford",
            "strictly_better_replaces",
            _undirected(
                6, [(0, 5, 1.0), (5, 4, 1.0), (0, 1, 0.25), (1, 2, 0.25), (2, 4, 1.0)]
            ),
            0,
            "4 first gets d = 2 via 5, then d = 1.5 via 2",
        ),
        HandCase(
            "bellman_ford",
            "longer_path_shorter_distance",
            _undirected(
                5,
                [
                    (0, 4, 1.0),
                    (0, 1, 0.125),
                    (1, 2, 0.125),
                    (2, 3, 0.125),
                    (3, 4, 0.125),
                ],
            ),
            0,
            "the direct edge is replaced round after round",
        ),
    ]
    return tuple(cases)


HAND_CASES = _hand_cases()


def hand_batch(algorithm: str) -> Batch:
    """Every hand-made case of ``algorithm`` in one padded batch (one compile)."""
    batches = [c.batch() for c in HAND_CASES if c.algorithm == algorithm]
    nodes = max(b.num_nodes for b in batches)
    return concat_batches([pad_batch(b, num_nodes=nodes) for b in batches])


def hand_names(algorithm: str) -> list[str]:
    return [c.name for c in HAND_CASES if c.algorithm == algorithm]


def three_way(model, batch) -> None:
    """Assert interpreter == dm-clrs, network == dm-clrs, network == interpreter."""
    trace = run_program(model.program, batch)
    wrong = compare_with_clrs(trace.hint_preds, trace.outputs, batch)
    assert not wrong, "interpreter:\n" + format_mismatches(wrong)
    net = model.trace(batch)
    wrong = compare_with_clrs(net.hint_preds, net.outputs, batch)
    assert not wrong, "compiled network:\n" + format_mismatches(wrong)
    real = np.asarray(batch.node_mask)
    for t in range(trace.selected.shape[0]):
        differ = (trace.selected[t] != net.selected[t]) & real
        assert not differ.any(), (
            f"step {t}: attention selects {net.selected[t][differ]} where the "
            f"program selects {trace.selected[t][differ]}"
        )
    # The hidden state is the program's state: float32 against float64, and a
    # stored id may carry e^{-tie_margin} ~ 5e-5 of a tied rival (Bellman-Ford's
    # parent and the receiver's loop-less self pair tie every round), far below
    # the 1/(2N) that would change a decoded pointer.
    np.testing.assert_allclose(
        net.state * real[None, :, :, None],
        trace.state * real[None, :, :, None],
        atol=2e-4,
    )
