"""Run a graph program symbolically, in float64 numpy, before any weight exists.

One interpreter step is one GATv2 step is one CLRS hint step: step ``t``
reads the state after ``t`` rounds (zero before step 0), the inputs and the
hints it reads back (dm-clrs's ``hint[0]`` at step 0, then its own decoded
prediction of hint ``t``, as CLRS's evaluation feeds them back), lets
every receiver select one sender by the program's criteria (compared exactly,
lexicographically), applies the updates and decodes hint ``t + 1``.  The
trace it returns has the shapes of a network's (``S = max(1, T - 1)`` steps),
so tests compare interpreter, compiled network and dm-clrs on the same keys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from nar_gap.programs.dsl import (
    NODE_INPUTS,
    Criterion,
    Decoder,
    Eligible,
    Expr,
    GraphProgram,
    Linked,
    LowestId,
    Minimise,
    Prefer,
    hint_category,
    hint_probe,
)
from nar_gap.tasks.batch import Batch

# Ids are stored as pos values; equal ids may differ by float64 rounding of
# the gates (x + 2 - 2), far below the 1/N spacing of ids.
ID_TOLERANCE = 1e-9
# Distances are recomputed through gates (d + 2 - 2) in float64, so a kept
# distance may differ from the same path's sum by ~1e-16; CLRS's own ties are
# exact, and sampled graphs have no candidates closer than ~1e-6.
SCORE_TOLERANCE = 1e-9


class AmbiguousSelectionError(ValueError):
    """Two senders tie on every criterion: the program leaves the choice open."""


@dataclasses.dataclass(frozen=True)
class Trace:
    """What a program (or a compiled network, decoded) did at every step.

    Attributes:
      variables: names of the hidden variables (last axis of ``state``).
      state: ``[S, B, N, V]`` variables after step ``t`` (= after t+1 rounds).
      selected: ``[S, B, N]`` the sender each receiver selected at step ``t``.
      hint_preds: ``[S, B, ...]`` decoded prediction of ``hint[t + 1]`` per
        name, shaped as the batch's hint (``[S, B, N]``, ``[S, B, N, C]`` for
        a categorical, ``[S, B]`` for a graph hint).
      outputs: ``[B, ...]`` decoded outputs, taken at step ``max(0, L - 2)``.
    """

    variables: tuple[str, ...]
    state: np.ndarray
    selected: np.ndarray
    hint_preds: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]


def _read(expr: Expr, columns: dict[str, np.ndarray]) -> np.ndarray:
    """Evaluate an affine expression; ``columns`` map names to arrays."""
    out = np.full(next(iter(columns.values())).shape, expr.const, np.float64)
    for name, coef in expr.terms:
        out = out + coef * columns[name]
    return out


def _edge_values(name: str, i: int, cand, weights) -> np.ndarray:
    """Edge input ``name`` from receiver ``i`` to each candidate.

    ``A`` is the weight matrix; ``adj`` is dm-clrs's ``A != 0`` with ones on
    the diagonal.
    """
    values = np.asarray(weights[i, cand], np.float64)
    if name == "adj":
        return ((values != 0) | (cand == i)).astype(np.float64)
    return values


def _eligible_key(c: Eligible, i: int, cand, node, weights) -> np.ndarray:
    value = _read(c.flag, node)[cand]
    if c.edge is not None:
        value = value + _edge_values(c.edge, i, cand, weights) - 1.0
    return (value <= 0.5).astype(np.float64)


def _linked_key(c: Linked, i: int, cand, node, weights) -> np.ndarray:
    # The interpreter attends over the input graph (and self) only, so every
    # candidate is joined; kept as a key so the criterion means the same here.
    joined = _edge_values(c.edge, i, cand, weights) != 0
    return (~joined).astype(np.float64)


def _minimise_key(c: Minimise, i: int, cand, node, weights) -> np.ndarray:
    score = _read(c.value, node)[cand]
    if c.edge is not None:
        score = score + weights[i, cand]
    among = _read(c.among, node)[cand] > 0.5
    if not among.any():
        return np.zeros(len(cand))
    # Scores equal up to the float64 rounding of the gates are ties.
    best = score[among].min()
    score = np.where(score <= best + SCORE_TOLERANCE, best, score)
    return np.where(among, score, -np.inf)


def _prefer_key(c: Prefer, i: int, cand, node, weights) -> np.ndarray:
    wanted = _read(c.receiver_id, node)[i]
    offered = _read(c.sender_id, node)[cand]
    return (np.abs(offered - wanted) > ID_TOLERANCE).astype(np.float64)


def _lowest_id_key(c: LowestId, i: int, cand, node, weights) -> np.ndarray:
    violations = np.zeros(len(cand))
    if c.among is not None:
        violations += _read(c.among, node)[cand] < 0.5
    if c.unless_receiver is not None:
        violations += _read(c.unless_receiver, node)[i] > 0.5
    return np.where(violations == 0, node["pos"][cand], 1.0 + violations)


# What each criterion kind means: a sort key over receiver i's candidates,
# smaller is better (tracr's evaluation table).  tests/compiler/test_compiler.py checks
# every kind of the language is here, in the validator and in the lowering.
SORT_KEYS: dict[type, Callable[..., np.ndarray]] = {
    Linked: _linked_key,
    Eligible: _eligible_key,
    Minimise: _minimise_key,
    Prefer: _prefer_key,
    LowestId: _lowest_id_key,
}


def _sort_key(
    criterion: Criterion, i: int, cand: np.ndarray, node: dict, weights: np.ndarray
) -> np.ndarray:
    """Smaller is better, for candidates ``cand`` of receiver ``i``."""
    key = SORT_KEYS.get(type(criterion))
    if key is None:
        raise TypeError(f"unknown selection criterion {criterion!r}")
    return key(criterion, i, cand, node, weights)


def select(
    program: GraphProgram,
    node: dict[str, np.ndarray],
    weights: np.ndarray,
    attend: np.ndarray,
) -> np.ndarray:
    """The sender each receiver selects: ``[N]`` indices.

    Args:
      program: the program whose selection criteria decide.
      node: ``[N]`` arrays of every variable and node input, by name.
      weights: ``[N, N]`` the edge input ``A``.
      attend: ``[N, N]`` bool, whom each receiver may attend to (its
        neighbours in ``sym(adj)`` and itself, real nodes only).
    """
    chosen = np.arange(attend.shape[0])
    for i in range(attend.shape[0]):
        cand = np.flatnonzero(attend[i])
        if len(cand) == 0:
            continue
        keys = [
            _sort_key(c, i, cand, node, weights)
            for c in reversed(program.selection.criteria)
        ]
        order = np.lexsort(keys)  # the last key is the primary one
        if len(cand) > 1 and all(k[order[0]] == k[order[1]] for k in keys):
            raise AmbiguousSelectionError(
                f"program {program.name!r}: receiver {i} cannot choose between "
                f"senders {cand[order[0]]} and {cand[order[1]]} (equal on every "
                "criterion; softmax would mix them)"
            )
        chosen[i] = cand[order[0]]
    return chosen


def decode(kind: str, value: np.ndarray, pos: np.ndarray, real: np.ndarray):
    """A per-node decoder's CLRS value from the expression value at every node."""
    if kind == "mask":
        return (value > 0.5).astype(np.float64)
    if kind == "scalar":
        return value
    if kind == "pointer":
        distance = np.abs(value[:, None] - pos[None, :])
        distance[:, ~real] = np.inf
        return np.argmin(distance, axis=1)
    raise ValueError(f"unknown decoder kind {kind!r}")


def _unique_argmax(values: np.ndarray, what: str) -> int:
    """The index of the largest value; an exact tie would split a softmax."""
    order = np.argsort(-values, kind="stable")
    if len(values) > 1 and values[order[1]] >= values[order[0]] - ID_TOLERANCE:
        raise AmbiguousSelectionError(
            f"{what}: {order[0]} and {order[1]} tie at {values[order[0]]:g} (a "
            "compiled softmax would split between them)"
        )
    return int(order[0])


def decode_probe(
    decoder: Decoder, node: dict[str, np.ndarray], real: np.ndarray
) -> np.ndarray:
    """Decoder ``decoder``'s CLRS value on one graph: ``[N]``, ``[N, C]`` or ``[]``.

    ``node`` holds every variable, input and fed-back hint at every node.
    """
    if decoder.kind == "categorical":
        scores = np.stack([_read(e, node) for e in decoder.classes], -1)
        out = np.zeros_like(scores)
        for i in np.flatnonzero(real):
            out[i, _unique_argmax(scores[i], f"{decoder.probes} at node {i}")] = 1.0
        return out
    value = _read(decoder.expr, node)
    if decoder.kind == "mask_one":
        out = np.zeros_like(value)
        real_nodes = np.flatnonzero(real)
        out[real_nodes[_unique_argmax(value[real], str(decoder.probes))]] = 1.0
        return out
    if decoder.kind == "graph_scalar":
        total = decoder.expr.const
        for ref, coef in decoder.expr.terms:
            total += coef * float(np.max(node[ref][real]))
        return np.asarray(total, np.float64)
    return decode(decoder.kind, value, node["pos"], real)


def step(
    program: GraphProgram,
    state: dict[str, np.ndarray],
    inputs: dict[str, np.ndarray],
    weights: np.ndarray,
    attend: np.ndarray,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One round: selection, then every update at once."""
    node = {**inputs, **state}
    chosen = select(program, node, weights, attend)
    receivers = np.arange(len(chosen))
    new_state = {}
    for update in program.updates:
        total = _read(update.own, node) + _read(update.selected, node)[chosen]
        if update.edge is not None:
            total = total + weights[receivers, chosen]
        new_state[update.target] = np.maximum(total, 0.0)
    return new_state, chosen


def attention_graph(adjacency: np.ndarray) -> np.ndarray:
    """``sym(adjacency) | I``: whom each node attends to, before pointer links.

    dm-clrs's ``accum_adj_mat`` symmetrises the input graph's edges and adds
    the self loop; decoded pointers add more links at run time.
    """
    linked = (np.asarray(adjacency) != 0) | np.eye(len(adjacency), dtype=bool)
    return linked | linked.T


def run_program(program: GraphProgram, batch: Batch) -> Trace:
    """Run ``program`` on every sample of ``batch`` for the batch's hint steps."""
    if batch.algorithm != program.algorithm:
        raise ValueError(
            f"program {program.name!r} runs {program.algorithm!r} batches, "
            f"got a {batch.algorithm!r} batch"
        )
    program.check_size(np.asarray(batch.node_mask).sum(axis=1))
    names = program.variable_names()
    first_hint = next(iter(batch.hints.values()))
    num_steps = max(1, first_hint.shape[0] - 1)
    batch_size, num_nodes = np.asarray(batch.node_mask).shape
    state_out = np.zeros((num_steps, batch_size, num_nodes, len(names)))
    selected = np.zeros((num_steps, batch_size, num_nodes), np.int64)
    shapes = {
        **{p: np.shape(v)[2:] for p, v in batch.hints.items()},
        **{p: np.shape(v)[1:] for p, v in batch.outputs.items()},
    }
    preds = {
        probe: np.zeros((num_steps, batch_size, *shapes[probe]))
        for d in program.decoders
        for probe in d.probes
    }
    fed_back = program.hint_inputs()
    fed_back_graph = program.graph_hint_inputs()
    for b in range(batch_size):
        real = np.asarray(batch.node_mask[b], bool)
        weights = np.asarray(batch.inputs["A"][b], np.float64)
        attend = attention_graph(np.asarray(batch.inputs["adj"][b]))
        attend = attend & real[:, None] & real[None, :] | np.eye(num_nodes, dtype=bool)
        inputs = {
            name: np.asarray(batch.inputs[name][b], np.float64)
            for name in NODE_INPUTS
            if name in batch.inputs  # DFS has no source s
        }
        state = {name: np.zeros(num_nodes) for name in names}
        for t in range(num_steps):
            for ref in (*fed_back, *fed_back_graph):
                # Step 0 encodes dm-clrs's hint[0]; later steps what the
                # program's decoders predicted for hint t at step t - 1.
                probe, category = hint_probe(ref), hint_category(ref)
                fed = batch.hints[probe][0, b] if t == 0 else preds[probe][t - 1, b]
                fed = np.asarray(fed, np.float64)
                if category is not None:
                    fed = fed[:, category]
                # A graph hint is held at every node, so that the graph
                # decoder's max over nodes reads the value itself.
                inputs[ref] = np.full(num_nodes, fed) if fed.ndim == 0 else fed
            state, chosen = step(program, state, inputs, weights, attend)
            state_out[t, b] = np.stack([state[n] for n in names], -1)
            selected[t, b] = chosen
            node = {**inputs, **state}
            for decoder in program.decoders:
                value = decode_probe(decoder, node, real)
                for probe in decoder.probes:
                    preds[probe][t, b] = value
    output_names = set(batch.outputs)
    lengths = np.asarray(batch.lengths, np.int64)
    last = np.clip(lengths - 2, 0, num_steps - 1)
    outputs = {
        probe: preds[probe][last, np.arange(batch_size)]
        for probe in preds
        if probe in output_names
    }
    hint_names = set(batch.hints)
    hint_preds = {p: v for p, v in preds.items() if p in hint_names}
    return Trace(names, state_out, selected, hint_preds, outputs)
