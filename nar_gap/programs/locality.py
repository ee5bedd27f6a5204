"""Hints that depend on what a node cannot see, and the models they rule out.

**Graph programs.**  A graph program updates node ``i`` from its own
variables and the sender it selects among its candidates (``i`` and its
neighbours in ``sym(adj)``); its decoders read the new state of ``i`` and,
for a pointer, only the ``pos`` input of the target.  By induction on the
steps, the state of node v after k steps, and so every node hint the
program decodes at v for hint k, is a function of v's radius-k view: the
nodes within k hops, their node inputs, and the edge inputs between them
(:func:`view`; ``tests/programs/test_locality.py`` checks it on the interpreter).
So a pair of graphs in which some node ``v`` has the same radius-k view but
a different reference hint ``k`` at ``v`` proves that no graph program, of
any size, runs both exactly at one GATv2 step per hint step.  If the views
agree at every radius (``v`` has no edge in either graph), CLRS's
``nb_msg_passing_steps`` cannot help either.

**Networks that feed their hints back.**  CLRS's network encodes at step
``t`` the hints it decoded at step ``t - 1``, and some decoders are
argmaxes over all nodes (``mask_one``: a softmax over nodes; a pointer row:
a softmax over targets), so a choice made across the whole graph reaches
every node.  For a network that is exact and feeds back *hard* (argmax)
hints, the fed-back hints are dm-clrs's own, and what a node can know
after step ``k`` is :func:`feedback_views`: its own and its neighbours'
hints at every step so far, the graph hints, and what its neighbours knew
one message-passing step before.  The decoders that read one node (masks,
scalars, categoricals) are bounded by that view; a witness on one of them
rules out every exact network with hard feedback.  With *soft* feedback
(CLRS's default) the softmax's small probabilities carry more, and no view
bounds them (``tests/programs/test_locality.py`` shows an isolated node's state
moving with the rest of the graph).

**Argmax decoders and the graph size.**  A ``mask_one`` hint is a softmax
over per-node logits, each a function of one node's state; CLRS tells a
node its ``pos = i / N``, never ``N``.  So nodes of graphs of different
sizes with the same ``pos`` and history get the same logit, and two graphs
that need two such pairs ranked both ways rule out every exact network
with hard feedback whose weights serve every size
(:func:`find_argmax_witness`; DFS's ``v`` after a failed scan, which
dm-clrs leaves at ``N - 1``).

:func:`find_witness` searches every graph of a few nodes (or a sample) for
a witness.  What it finds is in ``results/locality_witnesses.csv``
(notebook 01) and docs/dfs.md; a search that finds none proves nothing
about larger graphs.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from nar_gap.programs.interpreter import attention_graph
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.graphs import batch_from_graph
from nar_gap.tasks.specs import (
    Location,
    Stage,
    Type,
    get_spec,
    has_source,
    samples_directed,
)

# Node inputs a program may read (dsl.NODE_INPUTS) that a graph's view carries.
_VIEW_INPUTS = ("pos", "s")
# Decoders that read one node's h_t (mask_one and pointers take an argmax
# over nodes, graph probes a max over nodes).
_LOCAL_DECODER_TYPES = (Type.MASK, Type.SCALAR, Type.CATEGORICAL)
# Beyond this many matrices the exhaustive search would take minutes.
MAX_GRAPHS = 1 << 16


def _edge_text(adjacency: np.ndarray) -> str:
    """A graph's edges as ``{u->v, ...}``, for witness messages."""
    pairs = [f"{u}->{v}" for u, v in zip(*np.nonzero(adjacency), strict=True)]
    return "{" + ", ".join(pairs) + "}" if pairs else "no edges"


@dataclasses.dataclass(frozen=True)
class LocalityWitness:
    """Two graphs in which ``node`` sees the same but must decode differently.

    Attributes:
      algorithm: the CLRS algorithm.
      graphs: the two ``(n, n)`` adjacency matrices (``A[u, v]``: edge u -> v).
      sources: the source of each run (None for algorithms without one).
      node: the node whose view agrees.
      hint: the hint index ``k`` (predicted by the ``k``-th GATv2 step).
      probe: the hint whose value at ``node`` differs.
      values: its value at ``node`` in each graph's reference trace.
      radius: the radius of the view that agrees (``k`` for one step per hint).
      every_radius: whether the views agree at every radius: then no number
        of message-passing steps per hint step can decode both.
      feedback: whether the view includes the hints fed back, exact and hard
        (:func:`feedback_views`); then ``radius`` counts message-passing steps.
    """

    algorithm: str
    graphs: tuple[np.ndarray, np.ndarray]
    sources: tuple[int | None, int | None]
    node: int
    hint: int
    probe: str
    values: tuple[object, object]
    radius: int
    every_radius: bool
    feedback: bool = False

    def __str__(self) -> str:
        where = "every radius" if self.every_radius else f"radius {self.radius}"
        if self.feedback:
            where += ", with the exact hints fed back"
        runs = [
            _edge_text(g) + ("" if s is None else f" from source {s}")
            for g, s in zip(self.graphs, self.sources, strict=True)
        ]
        return (
            f"{self.algorithm}: node {self.node} has the same view ({where}) in "
            f"graph 1 {runs[0]} and graph 2 {runs[1]} (n = {len(self.graphs[0])}), "
            f"but hint {self.hint}'s {self.probe} there is {self.values[0]} "
            f"against {self.values[1]}"
        )

    @property
    def isolated(self) -> bool:
        """Whether ``node`` has no edge in either graph.

        Then its view is its own at every radius, with or without feedback,
        so the witness holds at every number of message-passing steps.
        """
        return all(
            not np.delete(g[self.node], self.node).any()
            and not np.delete(g[:, self.node], self.node).any()
            for g in self.graphs
        )

    def edge_lists(self) -> tuple[str, str]:
        """Each graph's edges as ``u->v`` pairs, space separated (for tables)."""
        return tuple(  # type: ignore[return-value]
            " ".join(f"{u}->{v}" for u, v in zip(*np.nonzero(g), strict=True))
            for g in self.graphs
        )


def reach(adjacency: np.ndarray, node: int, radius: int) -> np.ndarray:
    """The nodes within ``radius`` hops of ``node`` in ``sym(adjacency) | I``."""
    linked = attention_graph(adjacency)
    inside = np.zeros(len(adjacency), bool)
    inside[node] = True
    for _ in range(radius):
        grown = inside | linked[inside].any(axis=0)
        if np.array_equal(grown, inside):
            break
        inside = grown
    return np.flatnonzero(inside)


def view(batch: Batch, node: int, radius: int) -> tuple:
    """What ``radius`` GATv2 steps can tell ``node`` about graph 0 of ``batch``.

    Everything a graph program's state at ``node`` after ``radius`` steps may
    depend on: the number of nodes, the ids within reach, their node inputs
    and the edge inputs among them (hashable, so views group in a dict).
    """
    adjacency = np.asarray(batch.inputs["adj"][0])
    ball = reach(adjacency, node, radius)
    block = np.ix_(ball, ball)
    parts: list = [len(adjacency), node, tuple(ball)]
    for name, array in batch.inputs.items():
        values = np.asarray(array[0])
        if name in _VIEW_INPUTS:
            parts.append((name, values[ball].tobytes()))
        elif values.ndim == 2:
            parts.append((name, values[block].tobytes()))
    return tuple(parts)


def node_hints(algorithm: str) -> tuple[str, ...]:
    """The hints located at nodes (graph-level hints have no node to blame)."""
    spec = get_spec(algorithm)
    return tuple(
        name
        for name, (stage, location, _) in spec.items()
        if stage == Stage.HINT and location == Location.NODE
    )


def _value(batch: Batch, probe: str, hint: int, node: int) -> object:
    value = np.asarray(batch.hints[probe][hint, 0, node])
    return value.tolist() if value.ndim else value.item()


def graphs(algorithm: str, num_nodes: int, self_loops: bool = False) -> Iterator:
    """Every 0/1 adjacency matrix on ``num_nodes`` nodes the algorithm takes.

    Directed for ``dfs``/``dfs_light``, symmetric otherwise; the diagonal is
    zero unless ``self_loops``.
    """
    directed = samples_directed(algorithm)
    pairs = [
        (u, v)
        for u in range(num_nodes)
        for v in range(num_nodes)
        if (u != v or self_loops) and (directed or u <= v)
    ]
    if 2 ** len(pairs) > MAX_GRAPHS:
        raise ValueError(
            f"{2 ** len(pairs)} graphs on {num_nodes} nodes is more than the "
            f"exhaustive search's {MAX_GRAPHS}; use fewer nodes or no self loops"
        )
    for bits in itertools.product((0, 1), repeat=len(pairs)):
        matrix = np.zeros((num_nodes, num_nodes))
        for (u, v), bit in zip(pairs, bits, strict=True):
            matrix[u, v] = bit
            if not directed:
                matrix[v, u] = bit
        yield matrix


def random_graphs(
    algorithm: str,
    num_nodes: int,
    count: int,
    self_loops: bool = False,
    seed: int = 0,
    edge_probability: float = 0.5,
) -> Iterator[np.ndarray]:
    """``count`` Erdős–Rényi matrices of the kind :func:`graphs` enumerates.

    With ``edge_probability = 0.5`` every one of them is equally likely.
    """
    rng = np.random.default_rng(seed)
    directed = samples_directed(algorithm)
    for _ in range(count):
        matrix = (rng.random((num_nodes, num_nodes)) < edge_probability).astype(float)
        if not directed:
            matrix = np.triu(matrix) + np.triu(matrix, 1).T
        if not self_loops:
            np.fill_diagonal(matrix, 0.0)
        yield matrix


def local_hints(algorithm: str) -> tuple[str, ...]:
    """Node hints whose CLRS decoder reads one node (``h_t`` of that node only).

    ``mask_one`` and pointer decoders are argmaxes over all nodes, so their
    value at a node is not bounded by what that node can see.
    """
    spec = get_spec(algorithm)
    return tuple(
        name for name in node_hints(algorithm) if spec[name][2] in _LOCAL_DECODER_TYPES
    )


def _fed_back_hints(algorithm: str) -> tuple[list[str], list[str]]:
    """``(pointers, graph hints)``: fed back, they add edges or enter logits."""
    spec = get_spec(algorithm)
    hint_spec = {
        n: (loc, typ) for n, (st, loc, typ) in spec.items() if st == Stage.HINT
    }
    pointers = [n for n, (_, typ) in hint_spec.items() if typ == Type.POINTER]
    graph_hints = [n for n, (loc, _) in hint_spec.items() if loc == Location.GRAPH]
    return pointers, graph_hints


def _node_name(x: int, num_nodes: int, size_free: bool) -> object:
    """How a node is known: its id and the graph size, or its pos alone."""
    return Fraction(int(x), num_nodes) if size_free else int(x)


def _attended(linked: np.ndarray, targets: dict[str, np.ndarray]) -> np.ndarray:
    """The attention graph at one step: the input graph and every fed-back pointer."""
    num_nodes = len(linked)
    attend = linked.copy()
    for target in targets.values():
        attend[np.arange(num_nodes), target] = True
        attend[target, np.arange(num_nodes)] = True
    return attend


def _features(
    batch: Batch,
    step: int,
    attend: np.ndarray,
    inputs: dict[str, np.ndarray],
    size_free: bool,
) -> list[tuple]:
    """What each node knows at ``step`` before message passing.

    The graph size (unless ``size_free``), its name, the graph hints (only
    with two candidates or more: they enter the logits alone), its inputs
    and its own hints, a pointer naming its target as nodes are named.
    """
    num_nodes = len(attend)
    pointers, graph_hints = _fed_back_hints(batch.algorithm)
    hints = node_hints(batch.algorithm)

    def name(x: int) -> object:
        return _node_name(x, num_nodes, size_free)

    def hint_at(probe: str, x: int) -> object:
        value = np.asarray(batch.hints[probe][step, 0, x])
        return name(int(value)) if probe in pointers else value.tobytes()

    shared = tuple(np.asarray(batch.hints[g][step, 0]).tobytes() for g in graph_hints)
    return [
        (
            () if size_free else num_nodes,
            name(x),
            shared if attend[x].sum() > 1 else (),
            tuple(float(v[x]) for v in inputs.values()),
            tuple(hint_at(h, x) for h in hints),
        )
        for x in range(num_nodes)
    ]


def _message_step(
    state: list[int],
    features: list[tuple],
    attend: np.ndarray,
    a: np.ndarray,
    targets: dict[str, np.ndarray],
    size_free: bool,
    intern: Callable[[tuple], int],
) -> list[int]:
    """Every node's interned view after one more GATv2 step.

    Its features and state, and each attended neighbour's name, the edge
    inputs both ways, the fed-back pointers between them, and the
    neighbour's features and state.
    """
    num_nodes = len(state)
    return [
        intern(
            (
                features[x],
                state[x],
                tuple(
                    (
                        _node_name(y, num_nodes, size_free),
                        float(a[x, y]),
                        float(a[y, x]),
                        tuple(
                            (int(t[x] == y), int(t[y] == x)) for t in targets.values()
                        ),
                        features[y],
                        state[y],
                    )
                    for y in np.flatnonzero(attend[x])
                ),
            )
        )
        for x in range(num_nodes)
    ]


def feedback_views(
    batch: Batch,
    steps_per_hint: int,
    interned: dict[tuple, int],
    size_free: bool = False,
) -> np.ndarray:
    """``views[k, v]``: what node v's state after step k may depend on, with feedback.

    The network is assumed exact with *hard* hint feedback (``hint_repred_mode
    = "hard"``), so step ``j`` encodes dm-clrs's own hint ``j``: every node
    then knows its hint values and the pointer edges CLRS adds to the
    attention graph.  Graph hints (``time``) enter only the attention logits,
    so they count for a node with two candidates or more; a node that attends
    to itself alone gets the same state whatever its logits.  That is
    generous: logits choose among the candidates' values, they do not carry
    ``time`` into them, so "no witness" here is necessary for an exact
    network, not sufficient.  A node's state
    after a message-passing step is a function of its own features and
    previous state and of its neighbours' (GATv2's ``z_j = [n_j ; h_j]``)
    across edges with their inputs.  Views are interned to
    integers; ``interned`` is shared, so equal integers are equal views
    across graphs.

    With ``size_free`` a node knows its ``pos`` (``x / N``), not ``x`` and
    ``N``: CLRS's inputs carry nothing else about the graph's size, so
    nodes of graphs of different sizes at the same ``pos`` with the same
    history get the same view (what :func:`find_argmax_witness` compares).
    """
    a = np.asarray(batch.inputs["A"][0])
    num_nodes = len(a)
    linked = attention_graph(np.asarray(batch.inputs["adj"][0]))
    inputs = {
        name: np.asarray(batch.inputs[name][0])
        for name in _VIEW_INPUTS
        if name in batch.inputs
    }
    pointers, _ = _fed_back_hints(batch.algorithm)

    def intern(key: tuple) -> int:
        return interned.setdefault(key, len(interned))

    length = int(batch.lengths[0])
    views = np.zeros((max(1, length - 1), num_nodes), np.int64)
    state = [intern(("zero",))] * num_nodes
    for step in range(max(1, length - 1)):
        targets = {p: np.asarray(batch.hints[p][step, 0]) for p in pointers}
        attend = _attended(linked, targets)
        features = _features(batch, step, attend, inputs, size_free)
        for _ in range(steps_per_hint):
            state = _message_step(
                state, features, attend, a, targets, size_free, intern
            )
        views[step] = state
    return views


class _Observed(NamedTuple):
    """One node hint of one searched run, keyed by what the node can know."""

    key: tuple
    values: tuple
    matrix: np.ndarray
    source: int | None
    node: int
    hint: int
    radius: int


def _check_steps_per_hint(steps_per_hint: int | None, feedback: bool) -> None:
    if steps_per_hint is None and feedback:
        raise ValueError("feedback views need a number of steps per hint")
    if steps_per_hint is not None and steps_per_hint < 1:
        raise ValueError(f"steps_per_hint must be >= 1 or None, got {steps_per_hint}")


def _observations(
    algorithm: str,
    matrices: Iterable[np.ndarray],
    num_nodes: int,
    steps_per_hint: int | None,
    feedback: bool,
    probes: tuple[str, ...],
) -> Iterator[_Observed]:
    """Every node hint ``k >= 1`` of every run, lazily, in search order.

    A run is dm-clrs's reference on one matrix from every source (or none);
    a node's key is its feedback view (:func:`feedback_views`) or its
    radius-``steps_per_hint * k`` view (every radius: the whole graph).
    """
    interned: dict[tuple, int] = {}
    for matrix in matrices:
        sources = range(num_nodes) if has_source(algorithm) else (None,)
        for source in sources:
            batch = batch_from_graph(algorithm, matrix, source)
            length = int(batch.lengths[0])
            views = (
                feedback_views(batch, steps_per_hint, interned) if feedback else None
            )
            for node in range(num_nodes):
                for hint in range(1, length):
                    if steps_per_hint is None:
                        radius = num_nodes
                    else:
                        radius = steps_per_hint * hint
                    key = (
                        (hint, int(views[hint - 1, node]))
                        if feedback
                        else (hint, view(batch, node, radius))
                    )
                    values = tuple(_value(batch, p, hint, node) for p in probes)
                    yield _Observed(key, values, matrix, source, node, hint, radius)


def find_witness(
    algorithm: str,
    num_nodes: int,
    self_loops: bool = False,
    steps_per_hint: int | None = 1,
    feedback: bool = False,
    samples: int | None = None,
    seed: int = 0,
    edge_probability: float = 0.5,
) -> LocalityWitness | None:
    """The first pair of graphs that cannot both be run exactly, at one node.

    Runs dm-clrs's reference on every graph of :func:`graphs` (or on
    ``samples`` :func:`random_graphs`, drawn with ``seed`` and
    ``edge_probability``), and every source for
    algorithms with one, and groups each node hint ``k`` by what the node
    can know when it is decoded; two equal views with different hints are
    the witness.

    - ``feedback=False``: a graph program's view, the node's neighbourhood at
      radius ``steps_per_hint * k`` (CLRS's ``nb_msg_passing_steps`` GATv2
      steps per hint step; None: every radius, the whole connected
      component).  Every node hint is compared.
    - ``feedback=True``: an exact network with hard hint feedback
      (:func:`feedback_views`, ``steps_per_hint`` >= 1).  Only the hints
      whose decoder reads one node are compared (:func:`local_hints`).

    Returns:
      The witness, or None when every view decides its hints (on the graphs
      searched, which proves nothing about others).
    """
    _check_steps_per_hint(steps_per_hint, feedback)
    every_radius = steps_per_hint is None
    probes = local_hints(algorithm) if feedback else node_hints(algorithm)
    seen: dict[tuple, tuple[object, np.ndarray, int | None]] = {}
    matrices = (
        graphs(algorithm, num_nodes, self_loops)
        if samples is None
        else random_graphs(
            algorithm, num_nodes, samples, self_loops, seed, edge_probability
        )
    )
    for observed in _observations(
        algorithm, matrices, num_nodes, steps_per_hint, feedback, probes
    ):
        if observed.key not in seen:
            seen[observed.key] = (observed.values, observed.matrix, observed.source)
            continue
        first, other, other_source = seen[observed.key]
        for probe, a, b in zip(probes, first, observed.values, strict=True):
            if a != b:
                return LocalityWitness(
                    algorithm=algorithm,
                    graphs=(other, observed.matrix),
                    sources=(other_source, observed.source),
                    node=observed.node,
                    hint=observed.hint,
                    probe=probe,
                    values=(a, b),
                    radius=observed.radius,
                    every_radius=every_radius,
                    feedback=feedback,
                )
    return None


@dataclasses.dataclass(frozen=True)
class ArgmaxWitness:
    """Two graphs in which two nodes see the same but a global argmax must flip.

    A ``mask_one`` decoder is a softmax over nodes of per-node logits, each
    a function of that node's state alone.  If node ``a`` of graph 1 and
    node ``b`` of graph 1 have the views that node ``a'`` and ``b'`` of graph 2
    have, and dm-clrs's hint picks ``b`` over ``a`` in graph 1 but ``a'``
    over ``b'`` in graph 2, the logits would have to order two equal pairs
    both ways.

    Attributes:
      algorithm: the CLRS algorithm.
      probe: the ``mask_one`` hint.
      hint: the hint index ``k`` (decoded by the ``k``-th GATv2 step).
      graphs: the two adjacency matrices (they may differ in size).
      winners: the node dm-clrs's hint ``k`` picks in each graph.
      losers: the node of each graph whose view is the other graph's winner's.
      steps_per_hint: message-passing steps per hint step of the views.
    """

    algorithm: str
    probe: str
    hint: int
    graphs: tuple[np.ndarray, np.ndarray]
    winners: tuple[int, int]
    losers: tuple[int, int]
    steps_per_hint: int

    def __str__(self) -> str:
        (g1, g2), (w1, w2), (l1, l2) = self.graphs, self.winners, self.losers
        n1, n2 = len(g1), len(g2)
        return (
            f"{self.algorithm}: hint {self.hint}'s {self.probe} is node {w1} "
            f"(pos {w1}/{n1}) over node {l1} (pos {l1}/{n1}) in graph 1 "
            f"{_edge_text(g1)} (n = {n1}), but node {w2} (pos {w2}/{n2}) over node "
            f"{l2} (pos {l2}/{n2}) in graph 2 {_edge_text(g2)} (n = {n2}); node {w1} "
            f"and node {l2} see the same, and so do node {l1} and node {w2} "
            "(hard feedback, size-free views)"
        )


def argmax_hints(algorithm: str) -> tuple[str, ...]:
    """Node hints CLRS decodes as an argmax over nodes (``mask_one``)."""
    spec = get_spec(algorithm)
    return tuple(n for n in node_hints(algorithm) if spec[n][2] == Type.MASK_ONE)


def find_argmax_witness(
    algorithm: str,
    matrices: Iterable[np.ndarray],
    steps_per_hint: int = 1,
    probes: tuple[str, ...] | None = None,
) -> ArgmaxWitness | None:
    """The first pair of graphs whose ``mask_one`` hint no size-free network decodes.

    For every graph of ``matrices`` (any sizes; the algorithm must take no
    source), every hint ``k`` and every ``mask_one`` probe, dm-clrs's
    winner must get a larger logit than every other node.  A logit is a
    function of the node's state, bounded by its size-free view
    (:func:`feedback_views` with ``size_free``: a node knows its ``pos``,
    its history and its neighbours', not ``N``).  Two graphs that need
    ``view_A > view_B`` and ``view_B > view_A`` at the same hint are the
    witness: no exact network with hard feedback, of any width and with
    ``steps_per_hint`` message-passing steps per hint step, runs both.
    ``probes`` limits the search to some ``mask_one`` hints (default: all).
    """
    if has_source(algorithm):
        raise ValueError(f"{algorithm!r} takes a source; argmax witnesses need none")
    if steps_per_hint < 1:
        raise ValueError(f"steps_per_hint must be >= 1, got {steps_per_hint}")
    probes = argmax_hints(algorithm) if probes is None else probes
    unknown = sorted(set(probes) - set(argmax_hints(algorithm)))
    if unknown:
        raise ValueError(f"{algorithm} has no mask_one hint named {unknown}")
    interned: dict[tuple, int] = {}
    # (probe, hint, winner view, loser view) -> (graph, winner, loser)
    beats: dict[tuple, tuple[np.ndarray, int, int]] = {}
    for matrix in matrices:
        batch = batch_from_graph(algorithm, matrix, None)
        views = feedback_views(batch, steps_per_hint, interned, size_free=True)
        for hint in range(1, int(batch.lengths[0])):
            row = views[hint - 1]
            for probe in probes:
                winner = int(np.argmax(np.asarray(batch.hints[probe][hint, 0])))
                for loser in range(len(matrix)):
                    if row[loser] == row[winner]:
                        continue
                    reverse = beats.get((probe, hint, row[loser], row[winner]))
                    if reverse is not None:
                        other, w, l_ = reverse
                        return ArgmaxWitness(
                            algorithm=algorithm,
                            probe=probe,
                            hint=hint,
                            graphs=(other, matrix),
                            winners=(w, winner),
                            losers=(l_, loser),
                            steps_per_hint=steps_per_hint,
                        )
                    beats.setdefault(
                        (probe, hint, row[winner], row[loser]), (matrix, winner, loser)
                    )
    return None
