"""The fork's algorithm variants, written against dm-clrs's ``probing`` API.

All come from the author's fork ``LSaldyt/clrs`` (``clrs/_src/algorithms/
graphs.py``; ``bfs_seq`` and ``dfs_light`` at head ``e686e21``, ``dfs_reverse``
on branch ``dfs_reverse`` at ``1b93c22``), which adds them inside dm-clrs. Here
they live outside the library, so dm-clrs stays unmodified, and follow dm-clrs's
``graphs.py`` where they agree with it: same loops, same
tie-breaking by node index, same ``probing.initialize / push / finalize`` calls,
with the spec taken from :func:`nar_gap.tasks.specs.get_spec`.

- :func:`bfs_seq` makes BFS *sequential*: instead of one snapshot per round it
  emits one per scanned edge, so a model must update one pointer per step.
- :func:`dfs_light` keeps only DFS's ``pi_h`` and ``color`` hints, dropping the
  discovery/finish times, the explicit stack and the ``s``/``u``/``v`` cursors.
- :func:`dfs_reverse` keeps every DFS hint and adds ``pi_rh``, each node's
  last-pushed child: the parent pointer read backwards.

All return dm-clrs's ``(pi, probes)`` pair and can be handed to a dm-clrs
sampler (``BfsSampler`` / ``DfsSampler``) in place of the library's functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nar_gap.tasks._clrs import clrs_algorithms, clrs_probing
from nar_gap.tasks.specs import Stage, check_algorithm, get_spec

ReferenceAlgorithm = Callable[..., tuple[Any, dict]]
"""A dm-clrs probing function: ``(A, s) -> (pi, probes)`` or ``(A,) -> ...``."""


def _check_adjacency(A: np.ndarray) -> None:
    """Rejects anything but a square matrix, as dm-clrs's ``chex.assert_rank`` would."""
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"expected a square (n, n) adjacency matrix, found {A.shape}")


def _graph_inputs(A: np.ndarray) -> dict[str, np.ndarray]:
    """The inputs every dm-clrs graph algorithm pushes: ``pos``, ``A`` and ``adj``.

    ``pos = i / n`` is the node-id signal; ``adj = [A + I != 0]`` always has ones
    on the diagonal (dm-clrs's ``probing.graph``).
    """
    num_nodes = A.shape[0]
    return {
        "pos": np.arange(num_nodes) * 1.0 / num_nodes,
        "A": np.copy(A),
        "adj": clrs_probing.graph(np.copy(A)),
    }


def bfs_seq(A: np.ndarray, s: int) -> tuple[np.ndarray, dict]:
    """Breadth-first search with one hint snapshot per scanned edge (the fork's).

    The rounds and tie-breaking are dm-clrs ``bfs``'s: each round freezes
    ``prev_reach`` and scans ``i`` (outer) and ``j`` (inner) in index order; a pair
    with ``A[i, j] > 0`` and ``prev_reach[i] == 1`` reaches ``j`` and makes ``i``
    its parent if ``j`` has none yet and is not the source. What changes is when
    snapshots are taken:

    - one snapshot of the initial state (``reach = one_hot(s)``, ``pi = id``);
    - then one after **every** such scanned pair, including pairs whose target was
      already reached and self loops, in every round, including the final round
      that changes nothing.

    ``pi_h`` is therefore updated pair by pair (at most one entry changes per
    step), while ``reach_h`` is ``prev_reach``, the reach at the start of the
    round: it lags by a round. The number of snapshots is

        T = 1 + sum over rounds of #{(i, j) : A[i, j] > 0, i reached at round start}

    and the final ``pi`` equals dm-clrs ``bfs``'s. Why: the paper uses it as a
    task whose hints cannot be produced by one parallel message-passing round.

    Args:
        A: (n, n) adjacency; ``A[i, j] > 0`` is an edge i -> j.
        s: the source node.

    Returns:
        ``(pi, probes)``: the final parent pointers and the finalized probes.
    """
    _check_adjacency(A)
    probes = clrs_probing.initialize(get_spec("bfs_seq"))
    num_nodes = A.shape[0]

    clrs_probing.push(
        probes,
        Stage.INPUT,
        next_probe={"s": clrs_probing.mask_one(s, num_nodes), **_graph_inputs(A)},
    )

    reach = np.zeros(num_nodes)
    pi = np.arange(num_nodes)
    reach[s] = 1
    clrs_probing.push(
        probes, Stage.HINT, next_probe={"reach_h": np.copy(reach), "pi_h": np.copy(pi)}
    )
    while True:
        prev_reach = np.copy(reach)
        for i in range(num_nodes):
            for j in range(num_nodes):
                if A[i, j] > 0 and prev_reach[i] == 1:
                    if pi[j] == j and j != s:
                        pi[j] = i
                    reach[j] = 1
                    clrs_probing.push(
                        probes,
                        Stage.HINT,
                        next_probe={
                            "reach_h": np.copy(prev_reach),
                            "pi_h": np.copy(pi),
                        },
                    )
        if np.all(reach == prev_reach):
            break

    clrs_probing.push(probes, Stage.OUTPUT, next_probe={"pi": np.copy(pi)})
    clrs_probing.finalize(probes)
    return pi, probes


def dfs_light(A: np.ndarray) -> tuple[np.ndarray, dict]:
    """Depth-first search with only the ``pi_h`` and ``color`` hints (the fork's).

    The traversal is dm-clrs ``dfs``'s: roots in index order, out-neighbours
    scanned in index order one at a time, a node turned grey (``color = 1``)
    already when it is pushed, black (``color = 2``) when finished. Snapshots:

    - *new root* ``s`` (white): one snapshot before anything changes;
    - *discover* ``u``: only when ``u`` is still white, which after the push rule
      above happens only for roots (dm-clrs ``dfs`` also discovers pushed nodes,
      through its ``d[u] == 0`` test; this variant has no ``d``);
    - *push* ``v``: one snapshot after ``pi[v] = u`` and ``color[v] = 1``;
    - *finish* ``u``: one snapshot after ``color[u] = 2``.

    Hence ``T = 2N + #roots`` (dm-clrs ``dfs``: ``3N``), and the snapshots are
    dm-clrs ``dfs``'s ``(pi_h, color)`` snapshots with the non-root discovery
    ones removed (those change neither ``pi`` nor ``color``). The final ``pi``
    equals dm-clrs ``dfs``'s.

    Args:
        A: (n, n) adjacency; ``A[u, v] != 0`` is an edge u -> v (directed).

    Returns:
        ``(pi, probes)``: the final parent pointers and the finalized probes.
    """
    _check_adjacency(A)
    probes = clrs_probing.initialize(get_spec("dfs_light"))
    num_nodes = A.shape[0]

    clrs_probing.push(probes, Stage.INPUT, next_probe=_graph_inputs(A))

    color = np.zeros(num_nodes, dtype=np.int32)
    pi = np.arange(num_nodes)
    s_prev = np.arange(num_nodes)  # stack links: s_prev[v] = node below v

    def snapshot() -> dict[str, np.ndarray]:
        return {"pi_h": np.copy(pi), "color": clrs_probing.array_cat(color, 3)}

    for s in range(num_nodes):
        if color[s] != 0:
            continue
        s_last = s  # top of the stack
        u = s
        clrs_probing.push(probes, Stage.HINT, next_probe=snapshot())
        while True:
            if color[u] == 0:  # only roots are still white here
                color[u] = 1
                clrs_probing.push(probes, Stage.HINT, next_probe=snapshot())

            for v in range(num_nodes):
                if A[u, v] != 0 and color[v] == 0:
                    pi[v] = u
                    color[v] = 1
                    s_prev[v] = s_last
                    s_last = v
                    clrs_probing.push(probes, Stage.HINT, next_probe=snapshot())
                    break

            if s_last == u:  # nothing pushed: u is finished
                color[u] = 2
                clrs_probing.push(probes, Stage.HINT, next_probe=snapshot())
                if s_prev[u] == u:  # u was the bottom of the stack: root done
                    break
                below = s_prev[s_last]
                s_prev[s_last] = s_last
                s_last = below

            u = s_last

    clrs_probing.push(probes, Stage.OUTPUT, next_probe={"pi": np.copy(pi)})
    clrs_probing.finalize(probes)
    return pi, probes


class _DfsState:
    """dm-clrs ``dfs``'s variables, plus ``pi_r`` (each node's last-pushed child).

    One snapshot of them is a hint step of ``dfs_reverse``.
    """

    def __init__(self, num_nodes: int) -> None:
        """Every node white, undiscovered, its own parent, child and stack link."""
        self.num_nodes = num_nodes
        self.color = np.zeros(num_nodes, dtype=np.int32)
        self.pi = np.arange(num_nodes)
        self.pi_r = np.arange(num_nodes)
        self.d = np.zeros(num_nodes)
        self.f = np.zeros(num_nodes)
        self.s_prev = np.arange(num_nodes)  # stack links: s_prev[v] = node below v
        self.time = 0  # an int until the first tick, as dm-clrs pushes it
        self.s = self.u = self.v = self.s_last = 0

    def tick(self) -> float:
        """The next time stamp: dm-clrs adds 0.01 per event, rounding as it goes."""
        self.time += 0.01
        return self.time

    def snapshot(self) -> dict[str, Any]:
        """The hint probes, keyed as the spec names them."""
        n = self.num_nodes
        return {
            "pi_h": np.copy(self.pi),
            "pi_rh": np.copy(self.pi_r),
            "color": clrs_probing.array_cat(self.color, 3),
            "d": np.copy(self.d),
            "f": np.copy(self.f),
            "s_prev": np.copy(self.s_prev),
            "s": clrs_probing.mask_one(self.s, n),
            "u": clrs_probing.mask_one(self.u, n),
            "v": clrs_probing.mask_one(self.v, n),
            "s_last": clrs_probing.mask_one(self.s_last, n),
            "time": self.time,
        }


def _scan(A: np.ndarray, state: _DfsState) -> bool:
    """``u`` pushes its lowest white out-neighbour, if any; whether it did.

    ``v`` is left where dm-clrs's ``for v in range(n)`` leaves it: the pushed
    node, or ``n - 1`` after a scan that pushes nothing.
    """
    u = state.u
    for v in range(state.num_nodes):
        state.v = v
        if A[u, v] != 0 and state.color[v] == 0:
            state.pi[v] = u
            state.pi_r[u] = v
            state.color[v] = 1  # grey the moment it is pushed
            state.s_prev[v] = state.s_last
            state.s_last = v
            return True
    return False


def _walk_tree(A: np.ndarray, state: _DfsState, probes: dict) -> None:
    """The DFS from root ``state.s``: one snapshot per discovery, push, finish."""
    while True:
        u = state.u
        # A pushed node is grey already; its d = 0 says it is not discovered.
        if state.color[u] == 0 or state.d[u] == 0.0:
            state.d[u] = state.tick()
            state.color[u] = 1
            clrs_probing.push(probes, Stage.HINT, next_probe=state.snapshot())
        pushed = _scan(A, state)
        if pushed:
            clrs_probing.push(probes, Stage.HINT, next_probe=state.snapshot())
        else:  # nothing pushed: u is on top of the stack and finishes
            state.color[u] = 2
            state.f[u] = state.tick()
            clrs_probing.push(probes, Stage.HINT, next_probe=state.snapshot())
            if state.s_prev[u] == u:  # u was the bottom of the stack: tree done
                return
            below = state.s_prev[u]
            state.s_prev[u] = u
            state.s_last = below
        state.u = state.s_last


def dfs_reverse(A: np.ndarray) -> tuple[np.ndarray, dict]:
    """dm-clrs's DFS with one more hint, ``pi_rh`` (the fork's ``dfs_reverse``).

    The walk, its snapshots and every ``dfs`` hint are dm-clrs ``dfs``'s
    (the fork's ``dfs`` on that branch is dm-clrs 2.0.3's): roots in index
    order, a node grey the moment it is pushed, (re-)entered while white or
    while its ``d`` is still 0, so that a pushed node gets its own discovery
    snapshot; ``T = 3N``. ``pi_rh[u]`` is the node ``u`` pushed last
    (``pi_r[u] = v`` whenever ``pi[v] = u`` is set), itself until then: the
    pointer that leads from a parent to the child whose finish calls it back.

    Args:
        A: (n, n) adjacency; ``A[u, v] != 0`` is an edge u -> v (directed).

    Returns:
        ``(pi, probes)``: the final parent pointers and the finalized probes.
    """
    _check_adjacency(A)
    probes = clrs_probing.initialize(get_spec("dfs_reverse"))
    clrs_probing.push(probes, Stage.INPUT, next_probe=_graph_inputs(A))
    state = _DfsState(A.shape[0])
    for s in range(state.num_nodes):
        if state.color[s] != 0:
            continue
        state.s = state.u = state.v = state.s_last = s
        clrs_probing.push(probes, Stage.HINT, next_probe=state.snapshot())
        _walk_tree(A, state, probes)
    clrs_probing.push(probes, Stage.OUTPUT, next_probe={"pi": np.copy(state.pi)})
    clrs_probing.finalize(probes)
    return state.pi, probes


_VARIANTS: dict[str, ReferenceAlgorithm] = {
    "bfs_seq": bfs_seq,
    "dfs_light": dfs_light,
    "dfs_reverse": dfs_reverse,
}


def reference_algorithm(algorithm: str) -> ReferenceAlgorithm:
    """The numpy probing function that defines ``algorithm``'s data.

    dm-clrs's own function for ``bfs``, ``bellman_ford`` and ``dfs``; ours from
    :mod:`nar_gap.tasks.algorithms` for the fork's variants.

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
    """
    check_algorithm(algorithm)
    if algorithm in _VARIANTS:
        return _VARIANTS[algorithm]
    return getattr(clrs_algorithms, algorithm)
