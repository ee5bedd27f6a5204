"""dm-clrs's BFS and Bellman-Ford traces for thousands of graphs at once.

dm-clrs runs an algorithm graph by graph in Python loops and records every
hint with ``probing.push`` (a copy per probe per step), then stacks, splits
and pads the records: ~80 % of a training batch's time.  Here each
algorithm runs on all M graphs of a training step together, as whole-array
numpy operations, and writes its hints straight into the padded, stacked
layout the trainer consumes.  The loops are dm-clrs's
(``clrs/_src/algorithms/graphs.py``); each builder says why its array form
makes the same choices, ties included, and the arithmetic is the same
float64 arithmetic, so the hints are the same bytes
(``tests/tasks/test_fast_sampling.py`` compares them with dm-clrs's).

Node sets are uint64 bit sets (bit ``n`` for node ``n``), so graphs have at
most :data:`~nar_gap.tasks.fast_graphs.MAX_NODES` nodes.  DFS, whose trace
is a different shape of problem, is in :mod:`nar_gap.tasks.fast_dfs`; the
helpers here (bit sets, layout) serve both.

Layout (a :class:`Frame`): M = L lanes x B samples (lane-major); hints
``[L, T, B, N, ...]``, inputs and outputs ``[L, B, N, ...]``, padded to
the frame's N and T by :func:`nar_gap.tasks.batch.pad_batch`'s rules: zero,
except node pointers of padded nodes, which point to themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from nar_gap.tasks.fast_graphs import MAX_NODES

_ONE = np.uint64(1)


@dataclasses.dataclass(frozen=True)
class Frame:
    """The padded, stacked shape a trace is written into.

    Attributes:
        lanes: L, the leading axis (one lane per seed).
        batch: B, samples per lane.
        num_nodes: the padded N (at least the graphs').
        num_steps: the padded T (at least the longest trace's).
    """

    lanes: int
    batch: int
    num_nodes: int
    num_steps: int


FrameFor = Callable[[int], Frame]
"""The frame to write a trace into, given its longest trace (its T)."""


@dataclasses.dataclass(frozen=True)
class Trace:
    """Hints, outputs and trace lengths of M graphs, in a :class:`Frame`'s layout.

    Attributes:
        frame: the layout the arrays are written in.
        hints: name -> ``[L, T, B, N, ...]`` in nar_gap's dtypes.
        outputs: name -> ``[L, B, N, ...]``.
        lengths: ``[L, B]`` int32 hint steps of each graph.
    """

    frame: Frame
    hints: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    lengths: np.ndarray


# ------------------------------------------------------------------ bit sets


def node_bits(mask: np.ndarray) -> np.ndarray:
    """``[..., N]`` bool -> ``[...]`` uint64 with bit n set where ``mask[..., n]``."""
    packed = np.packbits(mask, axis=-1, bitorder="little")
    wide = np.zeros((*mask.shape[:-1], 8), dtype=np.uint8)
    wide[..., : packed.shape[-1]] = packed
    return wide.view("<u8")[..., 0]


def lowest_node(bits: np.ndarray) -> np.ndarray:
    """The least node in each set (int64), -1 for an empty set.

    ``bits & -bits`` keeps the lowest bit, a power of two that float64 holds
    exactly, so its exponent is the node's index.
    """
    lowest = bits & (~bits + _ONE)
    return np.frexp(lowest.astype(np.float64))[1].astype(np.int64) - 1


def has_node(bits: np.ndarray, num_nodes: int) -> np.ndarray:
    """``[...]`` uint64 sets -> ``[..., N]`` bool membership."""
    return ((bits[..., None] >> np.arange(num_nodes, dtype=np.uint64)) & _ONE) != 0


# -------------------------------------------------------------------- layout


def check_nodes(num_nodes: int) -> None:
    """Rejects graph sizes the bit sets cannot hold."""
    if not 2 <= num_nodes <= MAX_NODES:
        raise ValueError(f"expected 2 <= num_nodes <= {MAX_NODES}, found {num_nodes}")


def blank_hint(
    frame: Frame,
    num_nodes: int,
    dtype: type,
    *,
    pointer: bool = False,
    extra: tuple[int, ...] = (),
) -> np.ndarray:
    """A zero ``[L, T, B, N, *extra]`` hint; pointers of padded nodes point home."""
    shape = (frame.lanes, frame.num_steps, frame.batch, frame.num_nodes, *extra)
    hint = np.zeros(shape, dtype=dtype)
    if pointer:
        hint[..., num_nodes:] = np.arange(num_nodes, frame.num_nodes, dtype=dtype)
    return hint


def padded_nodes(
    values: np.ndarray, frame: Frame, pointer: bool = False, node_axes: int = 1
) -> np.ndarray:
    """``[M, N, ...]`` -> ``[L, B, frame N, ...]`` padded by pad_batch's rules.

    ``node_axes`` node axes follow M (2 for edge probes), all padded.
    """
    num_nodes = values.shape[1]
    trailing = values.shape[1 + node_axes :]
    out = np.zeros(
        (frame.lanes, frame.batch, *(frame.num_nodes,) * node_axes, *trailing),
        values.dtype,
    )
    real = (slice(None), slice(None), *(slice(num_nodes),) * node_axes)
    out[real] = values.reshape(frame.lanes, frame.batch, *values.shape[1:])
    if pointer:
        out[:, :, num_nodes:] = np.arange(num_nodes, frame.num_nodes)
    return out


def _write(hint: np.ndarray, step: int, values: np.ndarray, active: np.ndarray) -> None:
    """Write step ``step`` of the graphs still running (``active``) into a hint."""
    lanes, _, batch = hint.shape[:3]
    num_nodes = values.shape[1]
    rows = np.where(active[:, None], values, 0)
    hint[:, step, :, :num_nodes] = rows.reshape(lanes, batch, num_nodes)


def _lengths(counts: np.ndarray, frame: Frame) -> np.ndarray:
    return counts.astype(np.int32).reshape(frame.lanes, frame.batch)


# ----------------------------------------------------------------------- BFS


def bfs(edges: np.ndarray, sources: np.ndarray, frame_for: FrameFor) -> Trace:
    """dm-clrs ``bfs`` on M graphs: hints ``reach_h``, ``pi_h``; output ``pi``.

    dm-clrs snapshots ``(reach, pi)`` at the start of each round, then scans
    ``i`` (outer) and ``j`` (inner) with the round's reach frozen: an edge
    ``i -> j`` from a reached ``i`` reaches ``j``, and sets ``pi[j] = i`` while
    ``pi[j] == j`` and ``j`` is not the source.  Setting ``pi[j] = j`` (a
    self loop) leaves ``pi[j] == j``, so ``j``'s parent is its least reached
    in-neighbour other than itself -- in the round where ``pi[j] == j``
    still, and only for ``j`` unreached so far (a node reached earlier got a
    parent other than itself then).  It stops after the first round that
    reaches nothing new; that round is still snapshotted.

    Args:
        edges: [M, N, N] bool, ``A[i, j] > 0``.
        sources: [M] source nodes.
        frame_for: the frame, given the longest trace.
    """
    count, num_nodes = edges.shape[:2]
    check_nodes(num_nodes)
    nodes = np.arange(num_nodes)
    single = _ONE << nodes.astype(np.uint64)  # [N] {n}
    into = node_bits(np.swapaxes(edges, 1, 2))  # [M, N] in-neighbours of each j
    into_others = into & ~single
    reach = single[sources]  # [M]
    pi = np.broadcast_to(nodes, (count, num_nodes)).copy()
    not_source = nodes != sources[:, None]
    active = np.ones(count, dtype=bool)
    steps = np.zeros(count, dtype=np.int64)
    history = []
    while active.any():
        history.append((reach, pi, active.copy()))
        steps += active
        from_reached = into_others & reach[:, None]  # [M, N]
        adopt = (from_reached != 0) & (pi == nodes) & not_source
        pi = np.where(adopt, lowest_node(from_reached), pi)
        grown = reach | node_bits((into & reach[:, None]) != 0)
        active &= grown != reach
        reach = grown
    frame = frame_for(len(history))
    reach_h = blank_hint(frame, num_nodes, np.float32)
    pi_h = blank_hint(frame, num_nodes, np.int32, pointer=True)
    for step, (reached, parents, running) in enumerate(history):
        _write(reach_h, step, has_node(reached, num_nodes), running)
        _write(pi_h, step, parents, running)
    return Trace(
        frame=frame,
        hints={"reach_h": reach_h, "pi_h": pi_h},
        outputs={"pi": padded_nodes(pi.astype(np.int32), frame, pointer=True)},
        lengths=_lengths(steps, frame),
    )


# -------------------------------------------------------------- Bellman-Ford


def bellman_ford(
    weights: np.ndarray, sources: np.ndarray, frame_for: FrameFor
) -> Trace:
    """dm-clrs ``bellman_ford`` on M graphs: hints ``pi_h``, ``d``, ``msk``; ``pi``.

    dm-clrs snapshots ``(pi, d, msk)`` at the start of each round, then for
    ``u`` (outer) and ``v`` (inner) relaxes ``d[v]`` from the round's frozen
    ``prev_d[u]`` when ``prev_msk[u]`` and ``A[u, v] != 0``: it takes the
    candidate ``prev_d[u] + A[u, v]`` if ``v`` is still unmarked or the
    candidate is strictly smaller.  Only ``v``'s own entries change ``d[v]``,
    so ``v`` ends the round with the least candidate, the first ``u`` on ties
    (``argmin``), if it was unmarked or that beats ``prev_d[v]``; else it
    keeps its values.  Candidates are the same float64 sums.  It stops after
    the first round that leaves ``d`` unchanged (still snapshotted); a graph
    that stopped never changes again (weights are positive, so any change
    moves ``d``), so finished graphs drop out of the arrays.

    Args:
        weights: [M, N, N] float64 ``A`` (0: no edge).
        sources: [M] source nodes.
        frame_for: the frame, given the longest trace.
    """
    count, num_nodes = weights.shape[:2]
    check_nodes(num_nodes)
    nodes = np.arange(num_nodes)
    edge_length = np.where(weights != 0, weights, np.inf)  # [M, u, v] no edge: inf
    d = np.zeros((count, num_nodes))
    pi = np.broadcast_to(nodes, (count, num_nodes)).copy()
    msk = nodes == sources[:, None]
    steps = np.zeros(count, dtype=np.int64)
    running = np.arange(count)  # graphs still relaxing
    history = []
    while running.size:
        history.append((d.copy(), pi.copy(), msk.copy(), running))
        steps[running] += 1
        prev_d, prev_msk = d[running], msk[running]
        start = np.where(prev_msk, prev_d, np.inf)
        candidates = start[:, :, None] + edge_length[running]  # [R, u, v]
        best_u = candidates.argmin(axis=1)  # [R, v] first u on ties
        best = np.take_along_axis(candidates, best_u[:, None], axis=1)[:, 0]
        reached = best < np.inf
        take = reached & (~prev_msk | (best < prev_d))
        new_d = np.where(take, best, prev_d)
        d[running] = new_d
        pi[running] = np.where(take, best_u, pi[running])
        msk[running] = prev_msk | reached
        running = running[np.any(new_d != prev_d, axis=1)]
    frame = frame_for(len(history))
    hints = {
        "pi_h": blank_hint(frame, num_nodes, np.int32, pointer=True),
        "d": blank_hint(frame, num_nodes, np.float32),
        "msk": blank_hint(frame, num_nodes, np.float32),
    }
    for step, (dist, parents, marked, alive) in enumerate(history):
        active = np.zeros(count, dtype=bool)
        active[alive] = True
        _write(hints["pi_h"], step, parents, active)
        _write(hints["d"], step, dist, active)
        _write(hints["msk"], step, marked, active)
    return Trace(
        frame=frame,
        hints=hints,
        outputs={"pi": padded_nodes(pi.astype(np.int32), frame, pointer=True)},
        lengths=_lengths(steps, frame),
    )
