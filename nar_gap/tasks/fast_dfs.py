"""dm-clrs's DFS trace (and the fork's ``dfs_light``) for thousands of graphs at once.

dm-clrs's ``dfs`` snapshots ten hints after every event of the search, 3N
snapshots per graph.  Every graph has the same number of events, so all M
graphs of a training step can step through their searches in lockstep,
one event per tick, on arrays of M.  What each hint shows at tick ``t`` then
follows from a few per-node event ticks (pushed, discovered, finished) and
per-tick cursors (``s``, ``u``, ``v``, ``s_last``, the clock), and is written
with one broadcast comparison per hint, in the layout of
:mod:`nar_gap.tasks.fast_traces`.

The events of one graph, as dm-clrs's loop orders them (``for s``: a white
root; ``while``: discover, then push the first white out-neighbour or
finish and pop):

- *root* ``s``: ``u = v = s_last = s``; nothing else changes;
- *discover* ``u`` (a root, or a node just pushed): the clock ticks,
  ``d[u]`` is set, ``u`` turns grey; ``v == u`` here (the root itself, or
  the node the previous push broke the ``for v`` loop at);
- *push* ``v``, the least white out-neighbour of ``u``: ``pi[v] = u``, ``v``
  grey, ``s_prev[v] = s_last == u``, ``s_last = v``; then ``u = v``;
- *finish* ``u`` (no white out-neighbour): ``u`` black, the clock ticks,
  ``f[u]`` is set; ``v`` is ``N - 1``, where the finished ``for v`` loop
  left it; after the snapshot, a non-root pops (``s_prev[u] = u``,
  ``s_last = u = pi[u]``), a root ends its tree.

Each node is discovered and finished once and is a root or pushed once:
3N events.  The clock adds 0.01 per tick in float64, as dm-clrs does, so
``d`` and ``f`` are read from a table of those sums.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nar_gap.tasks.fast_traces import (
    FrameFor,
    Trace,
    blank_hint,
    check_nodes,
    lowest_node,
    node_bits,
    padded_nodes,
)

_ONE = np.uint64(1)
_ROOT, _DISCOVER, _SCAN = 0, 1, 2


def clock(ticks: int) -> np.ndarray:
    """dm-clrs's ``time`` after k ticks of ``time += 0.01``, k = 0..ticks (float64)."""
    values = [0.0]
    for _ in range(ticks):
        values.append(values[-1] + 0.01)
    return np.array(values)


@dataclasses.dataclass(frozen=True)
class Search:
    """The events of M depth-first searches: per-node ticks and per-tick cursors.

    Attributes:
        parent: [M, N] the output ``pi`` (a root is its own parent).
        pushed, discovered, finished: [M, N] the tick of each node's event;
            ``3N`` for one that never happens (roots are not pushed).
        discovered_clock, finished_clock: [M, N] how often the clock had
            ticked by then: ``d[n] = clock(2N)[discovered_clock[n]]``.
        root_ticks, discover_ticks: [3N, M] bool, which ticks are those events.
        s, u, v, s_last: [3N, M] the cursors each tick's snapshot shows.
        clock_ticks: [3N, M] how often the clock had ticked by each snapshot.
    """

    parent: np.ndarray
    pushed: np.ndarray
    discovered: np.ndarray
    finished: np.ndarray
    discovered_clock: np.ndarray
    finished_clock: np.ndarray
    root_ticks: np.ndarray
    discover_ticks: np.ndarray
    s: np.ndarray
    u: np.ndarray
    v: np.ndarray
    s_last: np.ndarray
    clock_ticks: np.ndarray


def search(edges: np.ndarray) -> Search:
    """Run dm-clrs's DFS on M graphs in lockstep, one event per tick.

    Args:
        edges: [M, N, N] bool, ``A[u, v] != 0`` (directed).
    """
    count, num_nodes = edges.shape[:2]
    check_nodes(num_nodes)
    ticks = 3 * num_nodes
    out = node_bits(edges)  # [M, N] out-neighbours of each u
    single = _ONE << np.arange(num_nodes, dtype=np.uint64)
    white = np.full(count, (1 << num_nodes) - 1, dtype=np.uint64)
    phase = np.full(count, _ROOT)
    s, u, v, last, clocks = (np.zeros(count, np.int64) for _ in range(5))
    parent = np.broadcast_to(np.arange(num_nodes), (count, num_nodes)).copy()
    is_root = np.zeros((count, num_nodes), dtype=bool)
    pushed, discovered, finished = (
        np.full((count, num_nodes), ticks, np.int64) for _ in range(3)
    )
    discovered_clock, finished_clock = (
        np.zeros((count, num_nodes), np.int64) for _ in "df"
    )
    cursors = np.zeros((5, ticks, count), dtype=np.int64)  # s, u, v, s_last, clock
    kinds = np.zeros((2, ticks, count), dtype=bool)  # root, discover
    for tick in range(ticks):
        roots, found, scanning = (np.flatnonzero(phase == k) for k in range(3))
        new = lowest_node(white[roots])
        s[roots] = u[roots] = v[roots] = last[roots] = new
        is_root[roots, new] = True
        phase[roots] = _DISCOVER

        at = u[found]
        clocks[found] += 1
        discovered[found, at] = tick
        discovered_clock[found, at] = clocks[found]
        white[found] &= ~single[at]
        v[found] = at
        phase[found] = _SCAN

        at = u[scanning]
        options = out[scanning, at] & white[scanning]
        going = options != 0
        pushing, ending = scanning[going], scanning[~going]
        child, done = lowest_node(options[going]), at[~going]
        parent[pushing, child] = at[going]
        pushed[pushing, child] = tick
        white[pushing] &= ~single[child]
        v[pushing] = last[pushing] = child
        clocks[ending] += 1
        finished[ending, done] = tick
        finished_clock[ending, done] = clocks[ending]
        v[ending] = num_nodes - 1

        cursors[:, tick] = s, u, v, last, clocks
        kinds[0, tick, roots] = True
        kinds[1, tick, found] = True

        u[pushing] = child  # after the snapshot: the next tick discovers it
        phase[pushing] = _DISCOVER
        back = ~is_root[ending, done]
        popping = ending[back]
        u[popping] = last[popping] = parent[popping, done[back]]
        phase[popping] = _SCAN
        phase[ending[~back]] = _ROOT
    return Search(
        parent=parent,
        pushed=pushed,
        discovered=discovered,
        finished=finished,
        discovered_clock=discovered_clock,
        finished_clock=finished_clock,
        root_ticks=kinds[0],
        discover_ticks=kinds[1],
        s=cursors[0],
        u=cursors[1],
        v=cursors[2],
        s_last=cursors[3],
        clock_ticks=cursors[4],
    )


# ------------------------------------------------------------------ rendering


def _per_node(values: np.ndarray, lanes: int, batch: int) -> np.ndarray:
    """[M, N] -> [L, 1, B, N], to broadcast against ticks."""
    return values.reshape(lanes, 1, batch, values.shape[-1])


def _per_tick(values: np.ndarray, lanes: int, batch: int) -> np.ndarray:
    """[T, M] -> [L, T, B] (a view)."""
    return values.reshape(len(values), lanes, batch).transpose(1, 0, 2)


def dfs(edges: np.ndarray, frame_for: FrameFor) -> Trace:
    """dm-clrs ``dfs`` on M graphs: its ten hints and ``pi``, every trace 3N long.

    Args:
        edges: [M, N, N] bool, ``A[u, v] != 0``.
        frame_for: the frame, given the longest trace (3N).
    """
    num_nodes = edges.shape[1]
    events = search(edges)
    ticks = 3 * num_nodes
    frame = frame_for(ticks)
    lanes, batch = frame.lanes, frame.batch

    def node(values: np.ndarray) -> np.ndarray:
        return _per_node(values, lanes, batch)

    tick = np.arange(ticks).reshape(1, ticks, 1, 1)
    nodes = np.arange(num_nodes)
    times = clock(2 * num_nodes)
    hints = {}

    def hint(name: str, dtype: type, pointer: bool = False, extra=()) -> np.ndarray:
        hints[name] = blank_hint(frame, num_nodes, dtype, pointer=pointer, extra=extra)
        return hints[name][:, :ticks, :, :num_nodes]

    pi_h = hint("pi_h", np.int32, pointer=True)
    pi_h[...] = nodes
    np.copyto(pi_h, node(events.parent), where=node(events.pushed) <= tick)
    color = hint("color", np.float32, extra=(3,))
    white = tick < node(np.minimum(events.pushed, events.discovered))
    black = tick >= node(events.finished)
    color[..., 0], color[..., 2] = white, black
    color[..., 1] = ~(white | black)
    for name, at, value in (
        ("d", events.discovered, events.discovered_clock),
        ("f", events.finished, events.finished_clock),
    ):
        np.copyto(hint(name, np.float32), node(times[value]), where=tick >= node(at))
    s_prev = hint("s_prev", np.int32, pointer=True)
    s_prev[...] = nodes
    stacked = (node(events.pushed) <= tick) & (tick <= node(events.finished))
    np.copyto(s_prev, node(events.parent), where=stacked)
    for name in ("s", "u", "v", "s_last"):
        cursor = _per_tick(getattr(events, name), lanes, batch)
        hint(name, np.float32)[...] = cursor[..., None] == nodes
    time = np.zeros((lanes, frame.num_steps, batch), dtype=np.float32)
    time[:, :ticks] = _per_tick(times[events.clock_ticks], lanes, batch)
    hints["time"] = time
    return Trace(
        frame=frame,
        hints=hints,
        outputs={"pi": padded_nodes(events.parent.astype(np.int32), frame, True)},
        lengths=np.full((lanes, batch), ticks, dtype=np.int32),
    )


def dfs_light(edges: np.ndarray, frame_for: FrameFor) -> Trace:
    """The fork's ``dfs_light`` on M graphs: ``pi_h``, ``color`` and ``pi``.

    Its snapshots are dfs's without the discoveries of pushed nodes, which
    change neither ``pi`` nor ``color`` (see
    :func:`nar_gap.tasks.algorithms.dfs_light`): each kept event moves back
    by the discoveries dropped before it, and a trace is ``2N + roots`` long.

    Args:
        edges: [M, N, N] bool, ``A[u, v] != 0``.
        frame_for: the frame, given the longest trace.
    """
    count, num_nodes = edges.shape[:2]
    events = search(edges)
    ticks = 3 * num_nodes
    dropped = events.discover_ticks.copy()
    dropped[1:] &= ~events.root_ticks[:-1]  # a root's discovery stays
    moved = np.arange(ticks)[:, None] - np.cumsum(dropped, axis=0)  # [3N, M]
    moved = np.concatenate([moved, np.full((1, count), ticks)])  # "never" stays
    steps = ticks - dropped.sum(axis=0)
    frame = frame_for(int(steps.max()))
    lanes, batch = frame.lanes, frame.batch

    def node(values: np.ndarray) -> np.ndarray:
        return _per_node(np.take_along_axis(moved, values.T, axis=0).T, lanes, batch)

    live = steps.max()
    tick = np.arange(live).reshape(1, live, 1, 1)
    running = tick < _per_node(steps[:, None], lanes, batch)  # [L, T, B, 1]
    nodes = np.arange(num_nodes)
    pi_h = blank_hint(frame, num_nodes, np.int32, pointer=True)
    view = pi_h[:, :live, :, :num_nodes]
    view[...] = np.where(running, nodes, 0)
    adopted = running & (node(events.pushed) <= tick)
    np.copyto(view, _per_node(events.parent, lanes, batch), where=adopted)
    color = blank_hint(frame, num_nodes, np.float32, extra=(3,))
    view = color[:, :live, :, :num_nodes]
    white = running & (tick < node(np.minimum(events.pushed, events.discovered)))
    black = running & (tick >= node(events.finished))
    view[..., 0], view[..., 2] = white, black
    view[..., 1] = running & ~(white | black)
    return Trace(
        frame=frame,
        hints={"pi_h": pi_h, "color": color},
        outputs={"pi": padded_nodes(events.parent.astype(np.int32), frame, True)},
        lengths=steps.astype(np.int32).reshape(lanes, batch),
    )
