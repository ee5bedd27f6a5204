"""Graph families at any size: the shapes users bring, for sweeps and tests.

CLRS samples Erdős–Rényi graphs of 4 to 64 nodes.  A user brings grids,
long paths, trees, power-law networks, thousands of nodes.  Each family here
is a seeded generator of a symmetric ``(n, n)`` float64 weight matrix
(0 = no edge), connected where the family is, with weights uniform in
(0, 1] (a zero weight would delete the edge) or rounded to a few decimals,
where equal decimal sums make float64 near-ties; or, with ``clrs_law``,
self-loops and weights as dm-clrs's samplers draw them
(:func:`with_clrs_law`), so a family differs from CLRS's test graphs in
structure alone.

Every family is sparse except the dense Erdős–Rényi ones and the two of
new structure at CLRS's test density (two blocks, geometric), so the same code
reaches 4096 nodes; the graph's diameter, not its size, sets the length of
the trace (paths: n - 1 steps, grids: about 2 sqrt(n), trees: about 2 log n).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Builder = Callable[[int, np.random.Generator], np.ndarray]


def _symmetric(n: int, edges: np.ndarray) -> np.ndarray:
    """A 0/1 adjacency matrix from an ``(m, 2)`` array of undirected edges."""
    adjacency = np.zeros((n, n))
    if len(edges):
        adjacency[edges[:, 0], edges[:, 1]] = 1.0
        adjacency[edges[:, 1], edges[:, 0]] = 1.0
    return adjacency


def erdos_renyi(n: int, p: float | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """G(n, p): each unordered pair an edge with probability p, no self-loops.

    ``p`` may be an ``(n, n)`` array of per-pair probabilities (a block model).

    Not dm-clrs's draw, which keeps a pair where both of its directions are
    drawn (density p², so its p = 0.5 is this p = 0.25) and draws self-loops.
    """
    upper = np.triu(rng.random((n, n)) < p, k=1)
    return (upper | upper.T).astype(np.float64)


def path(n: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """0 - 1 - ... - (n-1): the longest trace, n - 1 relaxation rounds."""
    k = np.arange(n - 1)
    return _symmetric(n, np.stack([k, k + 1], 1))


def grid(n: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """The largest square lattice of at most n nodes, padded by a path tail.

    Exactly n nodes: ``side = floor(sqrt(n))``; nodes past ``side**2`` hang
    off the last row as a path, so every size is connected.
    """
    side = math.isqrt(n)
    edges = []
    for r in range(side):
        for c in range(side):
            k = r * side + c
            if c + 1 < side:
                edges.append((k, k + 1))
            if r + 1 < side:
                edges.append((k, k + side))
    edges += [(k - 1, k) for k in range(side * side, n)]
    return _symmetric(n, np.array(edges, dtype=np.int64).reshape(-1, 2))


def random_tree(n: int, rng: np.random.Generator) -> np.ndarray:
    """A random recursive tree: node k joins a uniform earlier node (depth ~ log n)."""
    k = np.arange(1, n)
    parents = np.floor(rng.random(n - 1) * k).astype(np.int64)
    return _symmetric(n, np.stack([parents, k], 1))


def power_law(n: int, rng: np.random.Generator, links: int = 2) -> np.ndarray:
    """Barabási–Albert preferential attachment: a sparse, heavy-tailed network.

    Each new node links to ``links`` earlier ones chosen by degree.
    """
    edges: list[tuple[int, int]] = []
    ends: list[int] = list(range(min(links, n)))  # every edge end, for sampling
    for k in range(links, n):
        chosen: set[int] = set()
        while len(chosen) < links:
            chosen.add(ends[int(rng.integers(len(ends)))])
        for j in chosen:
            edges.append((j, k))
            ends += [j, k]
    return _symmetric(n, np.array(edges, dtype=np.int64).reshape(-1, 2))


def barbell(n: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Two cliques of n // 3 nodes joined by a path through the rest."""
    clique = max(2, n // 3)
    adjacency = np.zeros((n, n))
    for start in (0, n - clique):
        block = slice(start, start + clique)
        adjacency[block, block] = 1.0
    np.fill_diagonal(adjacency, 0.0)
    bridge = np.arange(clique - 1, n - clique + 1)
    adjacency[bridge[:-1], bridge[1:]] = adjacency[bridge[1:], bridge[:-1]] = 1.0
    return adjacency


def two_blocks(
    n: int, rng: np.random.Generator, inside: float = 0.45, across: float = 0.05
) -> np.ndarray:
    """Two communities: a stochastic block model, as dense as CLRS's test graphs.

    Nodes split at random into two halves; a pair is an edge with probability
    ``inside`` within a half and ``across`` between them (density about 0.25
    at the defaults: dm-clrs's p = 0.5 keeps an edge only where both of its
    directions are drawn, so its graphs join p² = 0.25 of the pairs); it
    differs from them in structure, not in density.
    """
    block = rng.permutation(n) < n // 2
    return erdos_renyi(
        n, np.where(block[:, None] == block[None, :], inside, across), rng
    )


def geometric(n: int, rng: np.random.Generator, radius: float = 0.33) -> np.ndarray:
    """A random geometric graph: points in the unit square, linked within ``radius``.

    Clustered and spatial (a longer diameter than G(n, p) of its density);
    at radius 0.33 a pair is an edge with probability about 0.25, as in
    CLRS's test graphs (:func:`two_blocks`).
    """
    points = rng.random((n, 2))
    near = np.linalg.norm(points[:, None] - points[None, :], axis=-1) < radius
    np.fill_diagonal(near, False)
    return near.astype(np.float64)


FAMILIES: dict[str, Builder] = {
    "er_p0.5": lambda n, rng: erdos_renyi(n, 0.5, rng),
    "er_p0.1": lambda n, rng: erdos_renyi(n, 0.1, rng),
    "er_p0.25": lambda n, rng: erdos_renyi(n, 0.25, rng),
    "er_sparse": lambda n, rng: erdos_renyi(n, min(1.0, 2 * math.log(n) / n), rng),
    "grid": grid,
    "path": path,
    "tree": random_tree,
    "power_law": power_law,
    "barbell": barbell,
    "two_blocks": two_blocks,
    "geometric": geometric,
}
TIE_FAMILIES = ("er_p0.5", "er_p0.1", "er_sparse", "grid", "path", "tree")
TIE_FAMILIES += ("power_law", "barbell")
"""Notebook 01's tie graphs: every family but the three added after its
table (``er_p0.25``, two blocks, geometric), whose exact ties the Erdős–Rényi
graphs already cover."""


def with_weights(
    adjacency: np.ndarray, rng: np.random.Generator, decimals: int | None = None
) -> np.ndarray:
    """Symmetric weights uniform in (0, 1] on the edges of ``adjacency``.

    ``decimals`` rounds them (at least ``10**-decimals``): 3-decimal weights
    are where dm-clrs's float64 sums make near-ties of decimal-equal paths.
    """
    n = adjacency.shape[0]
    draws = 1.0 - rng.random((n, n))  # (0, 1]
    if decimals is not None:
        draws = np.maximum(np.round(draws, decimals), 10.0**-decimals)
    upper = np.triu(draws, k=1)
    return (upper + upper.T) * (adjacency != 0)


def with_clrs_law(
    adjacency: np.ndarray, rng: np.random.Generator, weighted: bool, p: float = 0.5
) -> np.ndarray:
    """``adjacency``'s edges drawn as dm-clrs draws the rest of a test graph.

    dm-clrs's undirected Erdős–Rényi sampler at its ``p`` gives each node a
    self-loop with probability p and each edge the weight ``sqrt(u u' +
    1e-3)`` of two uniform draws (its ``samplers.py``, the Erdős–Rényi
    graph and the Bellman-Ford sampler); its test graphs take p = 0.5.
    Graphs of another structure drawn this way differ from them in
    structure alone.
    """
    n = adjacency.shape[0]
    edges = (adjacency != 0) | np.diag(rng.random(n) < p)
    if not weighted:
        return edges.astype(np.float64)
    draws = rng.random((n, n))
    return edges * np.sqrt(draws * draws.T + 1e-3)


def make_graph(
    family: str,
    n: int,
    seed: int,
    weighted: bool = True,
    decimals: int | None = None,
    clrs_law: bool = False,
    law_p: float = 0.5,
) -> np.ndarray:
    """Family ``family``'s graph of ``n`` nodes for ``seed``.

    ``clrs_law`` draws self-loops and weights as dm-clrs does
    (:func:`with_clrs_law`, self-loops with probability ``law_p``, the
    sampler's edge probability) rather than as :func:`with_weights` does.

    Raises:
      ValueError: an unknown family (the known ones listed), n < 2, or
        ``decimals`` with ``clrs_law``.
    """
    if family not in FAMILIES:
        raise ValueError(
            f"unknown graph family {family!r}; known: {', '.join(FAMILIES)}"
        )
    if n < 2:
        raise ValueError(f"a {family} graph needs at least 2 nodes, got {n}")
    if clrs_law and decimals is not None:
        raise ValueError("dm-clrs's weight law draws unrounded weights: no decimals")
    rng = np.random.default_rng([seed, n])
    adjacency = FAMILIES[family](n, rng)
    if clrs_law:
        return with_clrs_law(adjacency, rng, weighted, law_p)
    return with_weights(adjacency, rng, decimals) if weighted else adjacency


def tie_graphs(n: int, seed: int) -> list[np.ndarray]:
    """One unit-weight graph per :data:`TIE_FAMILIES` family, ids shuffled.

    Unit weights make equal-length paths tie *exactly* (sampled CLRS weights
    are continuous and never do), so these are the graphs on which a
    criterion that only breaks exact ties (Bellman-Ford's lowest id, BFS's
    too) is exercised; shuffled ids keep the structure's own numbering
    (0 - 1 - 2 ... along a path) from deciding every tie the same way.
    """
    rng = np.random.default_rng([seed, n, 7])
    out = []
    for family in TIE_FAMILIES:
        adjacency = make_graph(family, n, seed, weighted=False)
        order = rng.permutation(n)
        out.append(adjacency[np.ix_(order, order)])
    return out
