"""A user's graph: an edge-list file -> a weight matrix -> a batch with its trace.

:func:`read_edge_list` reads a graph file; :func:`batch_from_graph` runs the
algorithm's reference implementation on a weight matrix and returns the
batch of one, hints and outputs included, ready for a compiled or trained
model.

The edge-list format is plain UTF-8 text, one edge per line::

The format is plain UTF-8 text, one edge per line::

    # a path 0 - 1 - 2 with a heavier last edge, and an isolated node 3
    nodes 4
    0 1          # weight defaults to 1
    1 2 0.5

* ``u v [w]``: an undirected edge between nodes ``u`` and ``v`` with weight
  ``w`` (default 1.0); both ``A[u, v]`` and ``A[v, u]`` are set.  ``u == v``
  is a self loop (``A[u, u] = w``).  Weights must be finite and > 0, since 0
  means "no edge".  Giving an edge again (in either direction) is allowed only
  with the same weight.
* ``u -> v [w]``: a directed edge (arc), ``A[u, v] = w`` only: DFS's graphs
  are directed, as its CLRS sampler draws them.  BFS and Bellman-Ford run
  undirected graphs, and refuse a file whose arcs make ``A`` asymmetric.
* Node ids are integers ``0..n-1``.  ``n`` is ``max id + 1``, or ``N`` if the
  file has a line ``nodes N`` (at most one; it may come anywhere), which also
  allows isolated nodes.
* ``#`` starts a comment, on its own line or after an edge; blank lines are
  ignored.

Every problem raises :class:`GraphFileError` (a ValueError) with a one-line
message naming the file and, where there is one, the line.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.tasks._clrs import clrs, clrs_probing
from nar_gap.tasks.algorithms import reference_algorithm
from nar_gap.tasks.batch import UNWEIGHTED, Batch, concat_batches
from nar_gap.tasks.families import make_graph
from nar_gap.tasks.feedback import from_clrs_feedback
from nar_gap.tasks.specs import (
    check_algorithm,
    get_spec,
    has_source,
)
from nar_gap.tasks.vocabulary import NODE_AXES, Type

DEFAULT_WEIGHT = 1.0
# A guard against a typo such as ``0 10000000`` allocating a huge matrix:
# 10^4 nodes is already an 800 MB float64 matrix.
MAX_NODES = 10_000


class GraphFileError(ValueError):
    """A graph file that cannot be read or parsed (the message names the line)."""


@dataclass(frozen=True)
class _Edge:
    """One parsed ``u v [w]`` (or ``u -> v [w]``: ``directed``) line."""

    u: int
    v: int
    weight: float
    line: int
    directed: bool = False

    def pairs(self) -> tuple[tuple[int, int], ...]:
        """The ``(row, column)`` entries of ``A`` the line sets."""
        if self.directed or self.u == self.v:
            return ((self.u, self.v),)
        return ((self.u, self.v), (self.v, self.u))


def _error(name: str, line: int | None, why: str) -> GraphFileError:
    """A one-line error naming the file and, if given, the line."""
    where = f"graph file {name}" if line is None else f"graph file {name}, line {line}"
    return GraphFileError(f"{where}: {why}")


def _strip_comment(text: str) -> str:
    """``text`` without its ``#`` comment and surrounding whitespace."""
    return text.split("#", 1)[0].strip()


def _parse_id(token: str) -> int | None:
    """A node id token as an integer, or None if it is not one."""
    try:
        return int(token)
    except ValueError:
        return None


def _parse_nodes(fields: list[str], name: str, line: int) -> int:
    """The ``N`` of a ``nodes N`` line, checked to be in 1..MAX_NODES."""
    count = _parse_id(fields[1]) if len(fields) == 2 else None
    if count is None:
        raise _error(
            name,
            line,
            f"expected 'nodes N' with an integer N, got {' '.join(fields)!r}",
        )
    if not 1 <= count <= MAX_NODES:
        raise _error(name, line, f"'nodes {count}': N must be in 1..{MAX_NODES}")
    return count


def _parse_edge(fields: list[str], name: str, line: int) -> _Edge:
    """A ``u v [w]`` line as an :class:`_Edge`, with ids >= 0 and a weight > 0."""
    shown = " ".join(fields)
    directed = len(fields) >= 2 and fields[1] == "->"
    if directed:
        fields = [fields[0], *fields[2:]]
    if len(fields) not in (2, 3):
        raise _error(
            name,
            line,
            f"expected 'u v [w]' or 'u -> v [w]' (2 or 3 fields), got "
            f"{len(fields)}: {shown!r}",
        )
    u, v = _parse_id(fields[0]), _parse_id(fields[1])
    if u is None or v is None:
        raise _error(name, line, f"node ids must be integers, got {shown!r}")
    if u < 0 or v < 0:
        raise _error(name, line, f"node ids must be >= 0, got {shown!r}")
    if max(u, v) >= MAX_NODES:
        raise _error(
            name, line, f"node id {max(u, v)} is too large (at most {MAX_NODES - 1})"
        )
    weight = DEFAULT_WEIGHT
    if len(fields) == 3:
        try:
            weight = float(fields[2])
        except ValueError:
            raise _error(name, line, f"weight {fields[2]!r} is not a number") from None
        if not math.isfinite(weight) or weight <= 0:
            raise _error(
                name,
                line,
                f"weight {fields[2]!r} must be finite and > 0 (0 would mean no edge)",
            )
    return _Edge(u, v, weight, line, directed)


def _parse_lines(text: str, name: str) -> tuple[list[_Edge], tuple[int, int] | None]:
    """Every edge, and ``(N, line)`` of the ``nodes`` line if there is one."""
    edges: list[_Edge] = []
    nodes: tuple[int, int] | None = None
    for line, raw in enumerate(text.splitlines(), start=1):
        fields = _strip_comment(raw).split()
        if not fields:
            continue
        if fields[0] == "nodes":
            if nodes is not None:
                raise _error(
                    name, line, f"second 'nodes' line (the first is line {nodes[1]})"
                )
            nodes = (_parse_nodes(fields, name, line), line)
        else:
            edges.append(_parse_edge(fields, name, line))
    return edges, nodes


def _check_duplicates(edges: list[_Edge], name: str) -> None:
    """Refuse an entry of ``A`` given twice with different weights."""
    seen: dict[tuple[int, int], _Edge] = {}
    for edge in edges:
        for key in edge.pairs():
            first = seen.setdefault(key, edge)
            if first.weight != edge.weight:
                raise _error(
                    name,
                    edge.line,
                    f"edge {edge.u} {edge.v} has weight {edge.weight:g}, but line "
                    f"{first.line} gave it weight {first.weight:g}",
                )


def _num_nodes(edges: list[_Edge], nodes: tuple[int, int] | None, name: str) -> int:
    """``N`` from the ``nodes`` line (every id checked against it) or max id + 1."""
    if nodes is None:
        if not edges:
            raise _error(name, None, "empty graph: no edges and no 'nodes N' line")
        return max(max(edge.u, edge.v) for edge in edges) + 1
    count, _ = nodes
    for edge in edges:
        if max(edge.u, edge.v) >= count:
            raise _error(
                name,
                edge.line,
                f"node id {max(edge.u, edge.v)} is out of range for 'nodes {count}' "
                f"(ids are 0..{count - 1})",
            )
    return count


def parse_edge_list(text: str, name: str = "<text>") -> np.ndarray:
    """Parse edge-list text (see the module docstring) into a weight matrix.

    Args:
      text: the file's contents.
      name: how error messages name the source (usually the file path).

    Returns:
      The ``(n, n)`` float64 weight matrix (symmetric unless the text has
      arcs ``u -> v``); 0 means no edge.

    Raises:
      GraphFileError: naming the line of the first problem found.
    """
    edges, nodes = _parse_lines(text, name)
    _check_duplicates(edges, name)
    count = _num_nodes(edges, nodes, name)
    matrix = np.zeros((count, count), dtype=np.float64)
    for edge in edges:
        for row, column in edge.pairs():
            matrix[row, column] = edge.weight
    return matrix


def read_edge_list(path: str | os.PathLike) -> np.ndarray:
    """Read an edge-list file (see the module docstring) into a weight matrix.

    Args:
      path: the file to read (UTF-8; a byte-order mark is ignored).

    Returns:
      The ``(n, n)`` float64 weight matrix (symmetric unless the file has
      arcs ``u -> v``); 0 means no edge.

    Raises:
      GraphFileError: if the file cannot be read or parsed.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise _error(str(path), None, "no such file") from None
    except IsADirectoryError:
        raise _error(str(path), None, "is a directory") from None
    except UnicodeDecodeError as error:
        raise _error(
            str(path), None, f"not UTF-8 text (byte {error.start} cannot be decoded)"
        ) from None
    except OSError as error:
        raise _error(str(path), None, error.strerror or str(error)) from None
    return parse_edge_list(text, str(path))


__all__ = [
    "DEFAULT_WEIGHT",
    "MAX_NODES",
    "GraphFileError",
    "parse_edge_list",
    "read_edge_list",
]


# ----------------------------------------------------------------- a user's graph


class GraphInputError(ValueError):
    """A user's graph or source that the reference algorithm cannot run on."""


def _check_weights(weights: Any) -> np.ndarray:
    """The weight matrix as float64, or a GraphInputError naming the problem."""
    try:
        matrix = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise GraphInputError(
            f"expected a numeric (n, n) weight matrix, found {type(weights).__name__} "
            f"that numpy cannot read as numbers: {error}"
        ) from error
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise GraphInputError(
            f"expected a square (n, n) weight matrix, found shape {matrix.shape}"
        )
    if matrix.shape[0] == 0:
        raise GraphInputError(
            "expected at least one node, found an empty 0x0 weight matrix"
        )
    bad = np.argwhere(~np.isfinite(matrix))
    if len(bad):
        i, j = bad[0]
        raise GraphInputError(
            f"expected finite weights, found {matrix[i, j]} at ({i}, {j}) "
            f"({len(bad)} non-finite entries)"
        )
    negative = np.argwhere(matrix < 0)
    if len(negative):
        i, j = negative[0]
        raise GraphInputError(
            f"expected non-negative weights (0 = no edge), found {matrix[i, j]} at "
            f"({i}, {j}) ({len(negative)} negative entries): BFS counts only A > 0 as "
            "edges while adj counts A != 0, and Bellman-Ford never stops on a negative "
            "cycle (an undirected negative edge is one)"
        )
    return matrix


def _check_source(algorithm: str, source: Any, num_nodes: int) -> int | None:
    """The source node for algorithms that take one; None for those that do not."""
    if not has_source(algorithm):
        if source is not None:
            raise GraphInputError(
                f"{algorithm} takes no source node (it starts from every unvisited "
                f"node in index order), found source={source!r}"
            )
        return None
    if source is None:
        raise GraphInputError(
            f"{algorithm} needs a source node: pass source=<0..{num_nodes - 1}>"
        )
    if isinstance(source, bool) or not isinstance(source, numbers.Integral):
        raise GraphInputError(f"expected an integer source node, found {source!r}")
    if not 0 <= source < num_nodes:
        raise GraphInputError(
            f"source {source} is out of range: expected 0..{num_nodes - 1} for a graph "
            f"of {num_nodes} nodes"
        )
    return int(source)


def _restore_batch_shape(point: Any, num_nodes: int) -> Any:
    """Undoes dm-clrs's squeeze of size-1 axes in inputs/outputs of one-node graphs.

    ``probing.finalize`` squeezes every size-1 axis of inputs and outputs, which for
    N = 1 also removes the node axes; reshape to ``[1, N...(, C)]`` by location.
    """
    prefix = (1,) + (num_nodes,) * NODE_AXES[point.location]
    data = np.asarray(point.data)
    shape = prefix + (
        (data.size // math.prod(prefix),) if point.type_ == Type.CATEGORICAL else ()
    )
    return clrs_probing.DataPoint(
        point.name, point.location, point.type_, data.reshape(shape)
    )


def batch_from_graph(
    algorithm: str,
    weights: Any,
    source: int | None = None,
    float_dtype: Any = np.float32,
) -> Batch:
    """A user's graph as a batch of one, with hints and outputs from the reference.

    Inputs are built as dm-clrs's probing does (``pos = i / n``, ``s`` one-hot,
    ``A``, ``adj = [A + I != 0]``) by running the reference probing function
    itself (:func:`nar_gap.tasks.algorithms.reference_algorithm`), so hints
    and outputs are dm-clrs's. On a sampled graph and source this equals that sample of
    :func:`sample_batch` (with hints cut to its length).

    - ``bfs``, ``bfs_seq``, ``dfs``, ``dfs_light`` are unweighted: their samplers
      give 0/1 matrices, so ``A`` becomes ``[weights != 0]`` (every nonzero weight
      is an edge of weight 1), matching the training distribution.
    - ``bellman_ford`` keeps the weights as ``A``.
    - ``A[u, v]`` is the edge u -> v; directed (asymmetric) input is accepted and
      run as given, although the bfs/bellman_ford samplers only draw symmetric
      graphs. Diagonal entries are self loops, as in the samplers.

    Args:
        algorithm: one of :data:`nar_gap.tasks.specs.ALGORITHMS`.
        weights: (n, n) array-like; 0 = no edge, nonzero = edge weight.
        source: the source node for bfs, bfs_seq and bellman_ford; must be None
            for dfs and dfs_light (rejected rather than ignored, so a caller who
            expects a search from that node finds out).
        float_dtype: the batch's float (float64 keeps the weights and
            dm-clrs's distances unrounded, for float64 compiled runs).

    Returns:
        A batch of one sample with ``N = n`` and ``T`` = its own hint length.

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
        GraphInputError: (a ValueError) if ``weights`` is not a square non-empty
            numeric matrix, has NaN/inf or negative entries, or ``source`` is
            missing, not an integer, out of range, or given to dfs/dfs_light.
    """
    check_algorithm(algorithm)
    matrix = _check_weights(weights)
    num_nodes = matrix.shape[0]
    source = _check_source(algorithm, source, num_nodes)
    if algorithm in UNWEIGHTED:
        adjacency = (matrix != 0).astype(np.int64)
    else:
        adjacency = matrix
    args = (adjacency,) if source is None else (adjacency, source)
    _, probes = reference_algorithm(algorithm)(*args)
    inputs, outputs, hints = clrs_probing.split_stages(probes, get_spec(algorithm))
    lengths = np.array([hints[0].data.shape[0]], dtype=np.float64)
    features = clrs.Features(
        inputs=[_restore_batch_shape(point, num_nodes) for point in inputs],
        hints=hints,
        lengths=lengths,
    )
    feedback = clrs.Feedback(
        features=features,
        outputs=[_restore_batch_shape(point, num_nodes) for point in outputs],
    )
    return from_clrs_feedback(feedback, algorithm, float_dtype)


def family_batch(
    algorithm: str,
    family: str,
    num_nodes: int,
    count: int,
    first: int = 0,
    clrs_law: bool = False,
    shuffled_ids: bool = False,
    source_kept: bool = False,
) -> Batch:
    """``count`` graphs of ``family`` with ``num_nodes`` nodes, sources drawn.

    Graph ``k`` (from ``first``) is :func:`~nar_gap.tasks.families.make_graph`'s
    for seed ``k`` (``clrs_law`` passed on), weighted for Bellman-Ford, its
    source drawn from ``[k, num_nodes]``: ``first`` past another batch's
    count gives graphs that batch does not hold.  Each trace is dm-clrs's.

    ``shuffled_ids`` renumbers each graph's nodes by a permutation drawn from
    ``[k, num_nodes, 7]``: a family numbers its nodes by its structure (a
    grid row by row), and dm-clrs breaks ties by the lowest id, so unshuffled
    every tie of a lattice is broken toward the same direction, and the
    ``pos`` input a model reads lines up with the geometry.  The drawn
    source index then names another node of the graph (as uniform a draw);
    ``source_kept`` renumbers the source with its graph instead, so the
    shuffled draw is the unshuffled one relabelled and nothing else: a
    count on both numberings then differs by the numbering alone.
    """
    if source_kept and not shuffled_ids:
        raise ValueError(
            "source_kept keeps the source through a renumbering: it needs shuffled_ids"
        )
    weighted = algorithm == "bellman_ford"
    graphs = []
    for k in range(first, first + count):
        weights = make_graph(
            family, num_nodes, seed=k, weighted=weighted, clrs_law=clrs_law
        )
        source = int(np.random.default_rng([k, num_nodes]).integers(num_nodes))
        if shuffled_ids:
            order = np.random.default_rng([k, num_nodes, 7]).permutation(num_nodes)
            weights = weights[np.ix_(order, order)]  # new id i is old node order[i]
            if source_kept:
                source = int(np.argsort(order)[source])
        graphs.append(batch_from_graph(algorithm, weights, source))
    return concat_batches(graphs)


def grid_batches(
    algorithm: str,
    cells: Sequence[tuple[bool, int]],
    count: int,
    first: int = 0,
    shuffled_ids: bool = False,
    source_kept: bool = False,
) -> list[tuple[bool, Batch]]:
    """:func:`family_batch`'s grids of each ``(clrs_law, num_nodes)`` cell.

    Each with the law it was drawn by, the form ``analysis.pointers.
    tie_count_rows`` counts on: the grids' lowest-id ties are where a
    trained model's pointers are put to the test.
    """
    return [
        (
            law,
            family_batch(
                algorithm,
                "grid",
                n,
                count,
                first=first,
                clrs_law=law,
                shuffled_ids=shuffled_ids,
                source_kept=source_kept,
            ),
        )
        for law, n in cells
    ]


def families_batch(
    algorithm: str,
    families: Sequence[str],
    num_nodes: int,
    count: int,
    clrs_law: bool = False,
) -> Batch:
    """:func:`family_batch` of each of ``families``, ``count`` graphs split evenly."""
    each = count // len(families)
    return concat_batches(
        [
            family_batch(algorithm, f, num_nodes, each, clrs_law=clrs_law)
            for f in families
        ]
    )
