"""Where a model's BFS parent pointers go wrong, and which pointers its decoders read.

Counts over a BFS trace (pure numpy) and two readings of a model on it:

- :func:`hint_errors`: every wrong ``pi_h`` prediction by the node's state
  at the step it reads (not yet reached, reached at that step, reached
  before) and, for a node reached before, whether its pointer moved to a
  *child* (a neighbour one step farther from the source), by the parity of
  the node's distance from the source, and how soon after its reach;
- :func:`output_by_parent_pointer`: each node's output against whether its
  parent's fed pointer points back at it; :func:`wrong_outputs`: where the
  wrong ones point instead (a tied parent, a child, elsewhere);
- :func:`ties_by_age`: whether a node with tied parents still names the
  one BFS took, by how long ago it was reached; :func:`tie_margins`: by how
  much its output prefers that one;
- :func:`edited_cases`: an intervention that makes the last one causal: the
  true trace with the pointers around one interior node ``v`` edited from
  :data:`EDIT_AGE` steps after its reach (``parent_back``: ``v``'s parent
  points at ``v``; ``both``: also ``v``'s child points away, to its own
  child), counted by :func:`edit_counts` as the answers it breaks;
- :func:`fed_parent_mass`: how much of each old node's soft pointer, fed
  back running free, lies on its parent;
- :func:`age_counts`: how long after its reach a node keeps its pointer,
  over a set of traces (the training distribution's against a test set's);
- :func:`free_hardened_by_parity`: rollouts with one parity's fed pointers
  hardened, which ask whose soft pointers a memory reads;
  :func:`free_hardened_by_role`: one node at a time, its parent's, its
  children's or both, which ask which neighbour's;
- :func:`pointer_tables`: one model's rollouts (free with soft and hard
  feedback, teacher-forced), its hint errors both ways, its outputs by
  pointer, and the intervention's counts.

A decoder that names ``v``'s parent from ``v``'s own state is not moved by
the edits; one that reads which neighbour points at ``v`` is, and the sign
of the move says how it reads: naming the neighbour that does *not* point
at ``v`` is right on the true trace (only the child points at ``v``) and
broken by ``both``; naming the neighbour that does is wrong on the true
trace and mended by ``both``.  The compiled
network keeps each node's parent in its own state once the node is reached
(``pi_closed``, :mod:`nar_gap.programs.bfs`): the control that must break
nothing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from nar_gap.analysis.stats import CONFIDENCE_LEVEL
from nar_gap.model.activations import Patch, run_with_cache, teacher_forced
from nar_gap.model.decoders import feedback, postprocess
from nar_gap.model.model import Model
from nar_gap.model.seeds import forward
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.vocabulary import Type

ALGORITHMS = ("bfs",)
"""The algorithms whose traces this module reads: BFS's ``reach_h`` and ``pi_h``."""

EDIT_AGE = 4
"""Steps after ``v`` is reached at which the intervention's edits begin.

An age that graphs of the training sizes hold (``age_counts`` counts them),
so an edited trace asks about the pattern of pointers, not an age never
seen."""

EDITS = ("parent_back", "both")
ROLES = ("parent", "child", "both")
"""Whose fed pointers :func:`free_hardened_by_role` hardens around a node."""
AS_FORCED = ("free", "free_hard", "free_hard_both")
"""The rollouts :func:`pointer_tables` reads against teacher forcing
(:func:`same_as_forced`): soft feedback, every fed pointer hardened, and only
each node's neighbours' hardened."""
READINGS = (
    "not moved",
    "undecided",
    "names the neighbour not pointing at it",
    "names the neighbour pointing at it",
)
"""What :func:`edit_reading` can say of a decoder's answers under ``both``."""
STATES = ("unreached", "reached_now", "reached_before")


@dataclasses.dataclass(frozen=True)
class Trace:
    """What the counts read from a BFS batch's true trace.

    Attributes:
      pi_h: ``[T, B, N]`` the true parent pointers at each hint step.
      reached_at: ``[B, N]`` the hint step at which each node is first
        reached (its distance from the source), -1 if never.
      parent: ``[B, N]`` the output ``pi``.
      neighbours: ``[B, N, N]`` adjacency without self-loops.
      lengths: ``[B]`` hint steps of each graph.
      node_mask: ``[B, N]`` real nodes.
    """

    pi_h: np.ndarray
    reached_at: np.ndarray
    parent: np.ndarray
    neighbours: np.ndarray
    lengths: np.ndarray
    node_mask: np.ndarray

    @classmethod
    def of(cls, batch: Batch) -> Trace:
        """The facts of ``batch``'s true trace (a BFS batch; else one line)."""
        if batch.algorithm not in ALGORITHMS:
            raise ValueError(
                f"nar_gap.analysis.pointers reads BFS's reach and parent hints, "
                f"not {batch.algorithm}'s"
            )
        reach = np.asarray(batch.hints["reach_h"]) > 0.5
        adjacency = np.asarray(batch.inputs["adj"]) > 0
        eye = np.eye(adjacency.shape[-1], dtype=bool)
        return cls(
            pi_h=np.asarray(batch.hints["pi_h"]).astype(np.int64),
            reached_at=np.where(reach.any(0), reach.argmax(0), -1),
            parent=np.asarray(batch.outputs["pi"]).astype(np.int64),
            neighbours=adjacency & ~eye,
            lengths=np.asarray(batch.lengths).astype(np.int64),
            node_mask=np.asarray(batch.node_mask).astype(bool),
        )

    def is_child(self, graph: int, node: int, other: int) -> bool:
        """Whether ``other`` is a neighbour one step farther from the source."""
        at = self.reached_at[graph]
        return bool(
            self.neighbours[graph, node, other]
            and at[node] >= 0
            and at[other] == at[node] + 1
        )

    def is_nearer(self, graph: int, node: int, other: int) -> bool:
        """Whether ``other`` is a neighbour one step nearer the source.

        A parent BFS could have chosen for ``node``: more than one such
        neighbour is a tie (:func:`tied_nodes`), which dm-clrs breaks by the
        lowest id.
        """
        at = self.reached_at[graph]
        return bool(
            self.neighbours[graph, node, other]
            and at[node] >= 1
            and at[other] == at[node] - 1
        )


def hint_errors(predicted: np.ndarray, trace: Trace) -> dict[str, Any]:
    """Wrong ``pi_h`` predictions by node state, and the moves to a child.

    ``predicted``: ``[S, B, N]`` the pointer each step predicts (step ``t``
    predicts hint ``t + 1``).  Steps past a graph's trace are not counted.
    Returns ``errors_<state>`` and ``cells_<state>`` for each of
    :data:`STATES`, ``to_child_even`` and ``to_child_odd`` (errors of nodes
    reached before, pointing at a child, by the node's distance parity;
    the source, at distance 0, counts as even) and ``first_to_child_age``
    (the fewest steps after its reach at which a node pointed at a child;
    NaN if none did).
    """
    counts: dict[str, Any] = {f"errors_{s}": 0 for s in STATES}
    counts |= {f"cells_{s}": 0 for s in STATES}
    counts |= {"to_child_even": 0, "to_child_odd": 0}
    ages: list[int] = []
    steps, graphs, nodes = predicted.shape
    for t in range(steps):
        for b in range(graphs):
            if t + 1 >= trace.lengths[b]:
                continue
            for v in np.flatnonzero(trace.node_mask[b]):
                at = trace.reached_at[b, v]
                state = (
                    "reached_before"
                    if 0 <= at <= t
                    else ("reached_now" if at == t + 1 else "unreached")
                )
                counts[f"cells_{state}"] += 1
                guess = int(predicted[t, b, v])
                if guess == trace.pi_h[t + 1, b, v]:
                    continue
                counts[f"errors_{state}"] += 1
                if state == "reached_before" and trace.is_child(b, v, guess):
                    counts["to_child_odd" if at % 2 else "to_child_even"] += 1
                    ages.append(t + 1 - int(at))
    counts["first_to_child_age"] = float(min(ages)) if ages else float("nan")
    return counts


def fed_into_output_step(predicted: np.ndarray, trace: Trace) -> np.ndarray:
    """``[B, N]``: the ``pi_h`` each graph's output step reads, running free.

    The output is decoded at step ``L - 2`` of a trace of ``L`` hints, which
    reads hint ``L - 2``: the prediction of step ``L - 3``, or the true
    first hint when ``L - 2`` is 0.
    """
    fed = trace.pi_h[0].copy()
    for b, length in enumerate(trace.lengths):
        if length >= 3:
            fed[b] = predicted[length - 3, b]
    return fed


def output_by_parent_pointer(
    output: np.ndarray, fed: np.ndarray, trace: Trace
) -> dict[str, int]:
    """Each non-source reached node's output against its parent's fed pointer.

    ``output``: ``[B, N]`` the predicted parents; ``fed``: ``[B, N]`` the
    ``pi_h`` the output step read.  Returns ``{wrong,right}_parent_{back,on}``:
    ``back`` where the parent's pointer names the node itself.
    """
    counts = {f"{a}_parent_{b}": 0 for a in ("wrong", "right") for b in ("back", "on")}
    graphs, nodes = output.shape
    for b in range(graphs):
        for v in range(nodes):
            if trace.reached_at[b, v] <= 0 or not trace.node_mask[b, v]:
                continue
            parent = trace.parent[b, v]
            outcome = "wrong" if output[b, v] != parent else "right"
            side = "back" if fed[b, parent] == v else "on"
            counts[f"{outcome}_parent_{side}"] += 1
    return counts


WRONG_KINDS = ("tied", "child", "other")


def wrong_outputs(output: np.ndarray, trace: Trace) -> dict[str, int]:
    """Wrong output pointers of reached nodes, by where they point instead.

    ``output``: ``[B, N]`` the predicted parents.  ``wrong_tied``: another
    neighbour one step nearer the source, a parent BFS could have chosen
    (dm-clrs's takes the lowest id among them, so on graphs with ties, such
    as grids, a decoder that loses which one it took lands here);
    ``wrong_child``: a neighbour one step farther; ``wrong_other``: any other
    node.  ``nodes``: the reached non-source nodes counted.
    """
    counts = {"nodes": 0} | {f"wrong_{kind}": 0 for kind in WRONG_KINDS}
    for b, v in zip(*np.nonzero(trace.node_mask & (trace.reached_at > 0)), strict=True):
        counts["nodes"] += 1
        guess = int(output[b, v])
        if guess == trace.parent[b, v]:
            continue
        if trace.is_nearer(b, v, guess):
            counts["wrong_tied"] += 1
        elif trace.is_child(b, v, guess):
            counts["wrong_child"] += 1
        else:
            counts["wrong_other"] += 1
    return counts


def tied_nodes(trace: Trace) -> np.ndarray:
    """``[B, N]``: reached nodes with two or more neighbours one step nearer.

    Each of those neighbours is a parent BFS could choose; dm-clrs's takes
    the lowest id.  Paths and trees have none; on a grid, every node off its
    source's row and column is one.
    """
    at = trace.reached_at
    nearer = trace.neighbours & (at[:, None, :] == at[:, :, None] - 1)
    return (at > 0) & trace.node_mask & (nearer.sum(-1) >= 2)


def _tied_by_age(trace: Trace) -> Iterator[tuple[int, int, int]]:
    """``(graph, node, age)`` of each tied node, ``age`` steps old at the end.

    The age is ``lengths - 1 - reached_at``: how long the model had to keep
    which of its tied parents it took.
    """
    for b, v in zip(*np.nonzero(tied_nodes(trace)), strict=True):
        yield int(b), int(v), int(trace.lengths[b]) - 1 - int(trace.reached_at[b, v])


def ties_by_age(output: np.ndarray, trace: Trace) -> dict[int, tuple[int, int]]:
    """``{age: (tied nodes, naming another tied parent)}`` of an output.

    ``output``: ``[B, N]`` the predicted parents; a tied node
    (:func:`tied_nodes`) is ``age`` steps old at the end of its trace.  A
    decoder that takes the right one when the node is reached and loses it
    later names another tied parent at the larger ages only.
    """
    ages: dict[int, list[int]] = {}
    for b, v, age in _tied_by_age(trace):
        cell = ages.setdefault(age, [0, 0])
        cell[0] += 1
        guess = int(output[b, v])
        cell[1] += int(guess != trace.parent[b, v] and trace.is_nearer(b, v, guess))
    return {age: (n, k) for age, (n, k) in sorted(ages.items())}


def tie_margins(logits: np.ndarray, trace: Trace) -> dict[int, np.ndarray]:
    """``{age: margins}``: how much an output prefers the tied parent BFS took.

    ``logits``: ``[B, N, N]`` the output's pointer scores.  A tied node's
    margin is its parent's score less the highest score among its other
    tied parents (:func:`tied_nodes`; ages as :func:`ties_by_age`'s), so it
    is negative where another of them outscores the parent.  The counts of
    :func:`ties_by_age` see only where the margin changes sign; the margin
    says whether a memory fades before it does, and in which models.
    """
    ages: dict[int, list[float]] = {}
    for b, v, age in _tied_by_age(trace):
        others = [
            u
            for u in np.flatnonzero(trace.neighbours[b, v])
            if u != trace.parent[b, v] and trace.is_nearer(b, v, int(u))
        ]
        scores = logits[b, v]
        margin = float(scores[trace.parent[b, v]]) - float(scores[others].max())
        ages.setdefault(age, []).append(margin)
    return {age: np.array(m) for age, m in sorted(ages.items())}


def _output_logits(model: Model, batch: Batch) -> dict[str, np.ndarray]:
    """The output ``pi``'s scores ``[B, N, N]`` running free and teacher-forced."""
    free = forward(model.config, True, model.precision)(model.params, batch)
    run_forced = forward(teacher_forced(model.config), False, model.precision)
    forced = run_forced(model.params, batch)
    return {
        r: np.asarray(out.outputs["pi"])
        for r, out in (("free", free), ("forced", forced))
    }


def _ties_of(logits: np.ndarray, trace: Trace) -> dict[int, tuple[int, int, float]]:
    """``{age: (tied, lost, mean margin)}`` of one rollout's output scores."""
    margins = tie_margins(logits, trace)
    return {
        age: (n, k, float(margins[age].mean()))
        for age, (n, k) in ties_by_age(_pointers(logits), trace).items()
    }


def model_ties_by_age(
    model: Model, batch: Batch
) -> dict[str, dict[int, tuple[int, int, float]]]:
    """``{rollout: {age: (tied, lost, mean margin)}}``, free and teacher-forced.

    :func:`ties_by_age`'s counts and the mean of :func:`tie_margins` of
    ``model``'s output.  Teacher-forced, every step reads the true trace,
    which names the right parent: a tie lost there is lost in the model's
    own memory.
    """
    trace = Trace.of(batch)
    return {
        rollout: _ties_of(logits, trace)
        for rollout, logits in _output_logits(model, batch).items()
    }


def model_wrong_outputs(model: Model, batch: Batch) -> dict[str, int]:
    """:func:`wrong_outputs` of ``model`` running free on ``batch`` (BFS)."""
    out = forward(model.config, True, model.precision)(model.params, batch)
    return wrong_outputs(_pointers(out.outputs["pi"]), Trace.of(batch))


def model_tie_counts(model: Model, batch: Batch) -> dict[str, float]:
    """A model's ties on ``batch``: where its outputs go, and what it lost forced.

    :func:`wrong_outputs` running free (``nodes``, ``wrong`` of them and
    ``wrong_tied``), the tied nodes (``tied_nodes``) and of them those whose
    teacher-forced output names another tied parent (``forced_lost``, every
    age), and the lowest teacher-forced mean margin over ages
    (``forced_margin_min``: below 0, at some age another parent wins on
    average; NaN without ties): :func:`model_wrong_outputs` and the forced
    half of :func:`model_ties_by_age`, from one rollout of each kind.
    """
    trace = Trace.of(batch)
    logits = _output_logits(model, batch)
    wrong = wrong_outputs(_pointers(logits["free"]), trace)
    forced = _ties_of(logits["forced"], trace)
    return {
        "nodes": wrong["nodes"],
        "wrong": sum(wrong[f"wrong_{kind}"] for kind in WRONG_KINDS),
        "wrong_tied": wrong["wrong_tied"],
        "tied_nodes": sum(n for n, _, _ in forced.values()),
        "forced_lost": sum(k for _, k, _ in forced.values()),
        "forced_margin_min": min((m for *_, m in forced.values()), default=np.nan),
    }


@dataclasses.dataclass(frozen=True)
class Case:
    """One edited trace: graph ``graph``, node ``node`` at ``distance``.

    ``start``: the first hint step the edit changes.
    """

    graph: int
    node: int
    distance: int
    edit: str
    start: int


def edited_cases(trace: Trace, age: int = EDIT_AGE) -> tuple[list[Case], np.ndarray]:
    """The intervention's cases and their ``pi_h`` traces (``[T, K, N]``).

    For every node ``v`` with exactly two neighbours (a path's interior),
    whose parent is not the source (the source points at itself), edited
    from step ``distance(v) + age`` to the end of its trace where the output
    step still reads an edited hint (step ``L - 2`` of ``L``; a later start
    would leave the output's input true): ``parent_back`` sets the parent's
    pointer to ``v``;
    ``both`` also sets ``v``'s child's pointer to the child's other
    neighbour (where it has one).  Every other pointer stays true.
    """
    cases: list[Case] = []
    traces: list[np.ndarray] = []
    for edit in EDITS:
        for b in range(trace.parent.shape[0]):
            for v in np.flatnonzero(trace.node_mask[b]):
                at = int(trace.reached_at[b, v])
                around = np.flatnonzero(trace.neighbours[b, v])
                if at < 1 or len(around) != 2:
                    continue
                parent = int(trace.parent[b, v])
                if trace.reached_at[b, parent] == 0:
                    continue
                start = at + age
                if start > trace.lengths[b] - 2:  # the output step reads L - 2
                    continue
                edited = trace.pi_h[:, b].copy()
                edited[start : trace.lengths[b], parent] = v
                if edit == "both":
                    child = int(next(u for u in around if u != parent))
                    away = [
                        u for u in np.flatnonzero(trace.neighbours[b, child]) if u != v
                    ]
                    if not away:
                        continue
                    edited[start : trace.lengths[b], child] = away[0]
                cases.append(Case(b, int(v), at, edit, start))
                traces.append(edited)
    if not traces:
        return [], np.zeros((trace.pi_h.shape[0], 0, trace.pi_h.shape[2]), np.int64)
    return cases, np.stack(traces, axis=1)


def graphs_of(batch: Batch, index: Sequence[int]) -> Batch:
    """``batch``'s graphs ``index`` (repeats allowed), in that order."""
    taken = np.asarray(index, dtype=np.int64)

    def pick(x: Any, axis: int) -> np.ndarray:
        return np.take(np.asarray(x), taken, axis=axis)

    return dataclasses.replace(
        batch,
        inputs={k: pick(x, 0) for k, x in batch.inputs.items()},
        hints={k: pick(x, 1) for k, x in batch.hints.items()},
        outputs={k: pick(x, 0) for k, x in batch.outputs.items()},
        lengths=pick(batch.lengths, 0),
        node_mask=pick(batch.node_mask, 0),
    )


def edited_batch(batch: Batch, cases: Sequence[Case], pi_h: np.ndarray) -> Batch:
    """``batch``'s graphs, one per case, with the case's ``pi_h`` trace."""
    picked = graphs_of(batch, [c.graph for c in cases])
    dtype = np.asarray(batch.hints["pi_h"]).dtype
    return dataclasses.replace(
        picked, hints={**picked.hints, "pi_h": pi_h.astype(dtype)}
    )


def edit_counts(
    output: np.ndarray, unedited: np.ndarray, cases: Sequence[Case], trace: Trace
) -> list[dict[str, Any]]:
    """Per edit and distance parity: the cases whose ``v`` the edit got wrong.

    ``output``: ``[K, N]`` the predicted parents of the edited batch;
    ``unedited``: ``[B, N]`` the same model's on the true trace.  ``wrong``
    counts ``v``'s wrong outputs under the edit, ``wrong_unedited`` those
    already wrong on the true trace, ``broken`` those the edit made wrong
    (right on the true trace): a model that misses ``v`` anyway is not
    moved by the edit; ``fixed`` those the edit made right (wrong on the
    true trace), the move of a decoder that reads the pointers the other
    way round.
    """

    def count(k: int, case: Case) -> tuple[int, ...]:
        truth = trace.parent[case.graph, case.node]
        wrong = bool(output[k, case.node] != truth)
        before = bool(unedited[case.graph, case.node] != truth)
        return wrong, before, wrong and not before, before and not wrong, 1

    names = ("wrong", "wrong_unedited", "broken", "fixed", "cases")
    return _by_edit_and_parity(cases, count, names)


def hint_edit_counts(
    predicted: np.ndarray, unedited: np.ndarray, cases: Sequence[Case], trace: Trace
) -> list[dict[str, Any]]:
    """Per edit and parity: ``v``'s ``pi_h`` predictions that name its parent.

    ``predicted``: ``[S, K, N]`` the edited batch's pointer predictions;
    ``unedited``: ``[S, B, N]`` the same model's on the true trace.  Counted
    at the steps that read an edited hint, from the edit's start to the
    last predicting step (``L - 2``): ``hint_steps`` of them,
    ``hint_parent_unedited`` naming ``v``'s parent on the true trace and
    ``hint_parent`` under the edit.  The output's counts
    (:func:`edit_counts`) ask the output decoder; these ask the hint
    decoder the same question.
    """

    def count(k: int, case: Case) -> tuple[int, ...]:
        parent = trace.parent[case.graph, case.node]
        steps = range(case.start, int(trace.lengths[case.graph]) - 1)
        before = sum(unedited[t, case.graph, case.node] == parent for t in steps)
        after = sum(predicted[t, k, case.node] == parent for t in steps)
        return len(steps), int(before), int(after)

    names = ("hint_steps", "hint_parent_unedited", "hint_parent")
    return _by_edit_and_parity(cases, count, names)


def _by_edit_and_parity(
    cases: Sequence[Case],
    count: Callable[[int, Case], tuple[int, ...]],
    names: Sequence[str],
) -> list[dict[str, Any]]:
    """``count(k, case)`` summed per edit and ``v``'s distance parity, one row each.

    Rows in (edit, parity) order, so that :func:`edit_counts` and
    :func:`hint_edit_counts` of the same cases line up row by row.
    """
    tally: dict[tuple[str, str], list[int]] = {}
    for k, case in enumerate(cases):
        cell = tally.setdefault((case.edit, _parity(case)), [0] * len(names))
        for i, value in enumerate(count(k, case)):
            cell[i] += int(value)
    return [
        {"edit": edit, "parity": parity, **dict(zip(names, cell, strict=True))}
        for (edit, parity), cell in sorted(tally.items())
    ]


def edit_reading(
    broken: int, mended: int, level: float = CONFIDENCE_LEVEL
) -> tuple[str, float]:
    """How a decoder reads its neighbours' pointers, from ``both``'s moved answers.

    Under ``both`` only ``v``'s parent points at ``v``; on the true trace
    only its child does.  A decoder naming the neighbour that does not point
    at ``v`` is right on the true trace and broken by the edit; one naming
    the neighbour that does is wrong there and mended.  The cases the edit
    moved (``broken``, ``mended``: the discordant pairs of an exact McNemar
    test) decide which, by a two-sided binomial test of ``broken`` against
    half of them at ``level``.  Returns one of :data:`READINGS` and the p
    (NaN when nothing moved: a decoder that keeps ``v``'s parent in ``v``'s
    own state, or one wrong both ways).
    """
    moved = broken + mended
    if moved == 0:
        return READINGS[0], float("nan")
    p = float(stats.binomtest(broken, moved, 0.5).pvalue)
    if p >= 1 - level:
        return READINGS[1], p
    return (READINGS[2] if broken > mended else READINGS[3]), p


def source_moved(batch: Batch) -> Batch:
    """``batch`` with its input ``s`` on each graph's farthest node; the same trace.

    An intervention on what marks the source.  Teacher-forced, every node
    still reads the true trace, so a pointer that turns only here was held
    by the mark.  The farthest node (the largest distance: a path's far
    end) is no neighbour of a node at distance 1 once the trace has 4 or
    more steps.  A network that reads ``s`` at every step, as the compiled
    BFS does (``reached = reached_not_source + s``), is changed everywhere:
    no control for this one.
    """
    trace = Trace.of(batch)
    far = np.where(trace.node_mask, trace.reached_at, -1).argmax(-1)
    mark = np.zeros_like(np.asarray(batch.inputs["s"]))
    mark[np.arange(far.size), far] = 1
    return dataclasses.replace(batch, inputs={**batch.inputs, "s": mark})


def _parity(case: Case) -> str:
    return "odd" if case.distance % 2 else "even"


def _old_node_steps(
    trace: Trace, steps: int, age: int
) -> Iterator[tuple[int, int, int, int]]:
    """``(t, graph, node, distance)`` of every prediction ``age`` or more steps old.

    Step ``t`` predicts hint ``t + 1``, where a node reached at step
    ``distance`` (the source, at 0, left out) is ``t + 1 - distance`` old;
    steps past a graph's trace are left out.
    """
    for b in range(trace.lengths.shape[0]):
        for t in range(min(steps, int(trace.lengths[b]) - 1)):
            for v in np.flatnonzero(trace.node_mask[b]):
                at = int(trace.reached_at[b, v])
                if at >= 1 and t + 1 - at >= age:
                    yield t, b, int(v), at


def flips_by_distance(
    predicted: np.ndarray, trace: Trace, age: int = EDIT_AGE
) -> dict[int, tuple[int, int]]:
    """``{distance: (node-steps, to a child)}`` for nodes ``age`` or more steps old.

    ``predicted``: ``[S, B, N]`` as in :func:`hint_errors`.  Every node other
    than the source is counted, per distance from the source: how many of
    its predictions at that age or more (:func:`_old_node_steps`) named a
    child.  Running free, a node whose pointer already turned shows whether
    its neighbours' turn with it; teacher-forced, each node reads the true
    trace, so the count is its own memory's.
    """
    counts: dict[int, list[int]] = {}
    for t, b, v, at in _old_node_steps(trace, predicted.shape[0], age):
        cell = counts.setdefault(at, [0, 0])
        cell[0] += 1
        cell[1] += int(trace.is_child(b, v, int(predicted[t, b, v])))
    return {d: (n, k) for d, (n, k) in sorted(counts.items())}


def fed_parent_mass(
    logits: np.ndarray, trace: Trace, age: int = EDIT_AGE
) -> np.ndarray:
    """The mass each old node's own soft pointer puts on its parent, one per node-step.

    ``logits``: ``[S, B, N, N]``, the ``pi_h`` decoder's raw output running
    free; with soft feedback the next step reads its softmax
    (:func:`~nar_gap.model.decoders.postprocess`), the same node-steps as
    :func:`flips_by_distance`.  Near 1 everywhere, the fed pointers carry
    what the true trace does; far below it, the model runs on inputs the
    one-hot trace (teacher forcing) and hard feedback never give it.
    """
    soft = np.asarray(postprocess(Type.POINTER, jnp.asarray(logits), hard=False))
    return np.asarray(
        [
            soft[t, b, v, trace.parent[b, v]]
            for t, b, v, _ in _old_node_steps(trace, soft.shape[0], age)
        ],
        dtype=np.float64,
    )


def reached_before_by_parity(trace: Trace, steps: int) -> dict[str, np.ndarray]:
    """``{"even", "odd"}``: ``[S, B, N, 1]``, rows of nodes reached before each step.

    The fed pointer rows of the nodes at an even or odd distance from the
    source that were reached before the step.  Step ``t`` feeds hint ``t``;
    a node reached at step ``d < t`` holds its pointer there.  The source
    (distance 0) counts as even.
    """
    step = np.arange(steps)[:, None, None]
    at = trace.reached_at[None]
    before = (at >= 0) & (at < step) & trace.node_mask[None]
    return {
        "even": (before & (at % 2 == 0))[..., None],
        "odd": (before & (at % 2 == 1))[..., None],
    }


def hardened(rows: jax.Array) -> jax.Array:
    """Each pointer row as its argmax, one-hot: what hard feedback feeds.

    The hint loop's own hard feedback (:func:`~nar_gap.model.decoders.feedback`):
    the argmax of a softmax row is its logits'.
    """
    return feedback(rows, Type.POINTER, hard=True)


def free_hardened_by_parity(model: Model, batch: Batch) -> dict[str, np.ndarray]:
    """``{"free_hard_even", "free_hard_odd"}``: ``[S, B, N]`` predicted pointers.

    Running free with soft feedback, except the fed pointers of the nodes
    :func:`reached_before_by_parity` marks, hardened (:func:`hardened`,
    through the ``fed_pi_h`` site).  On a path a node's neighbours lie at
    the other parity: a node that turns when the other parity's rows are
    hardened and holds when its own are reads its memory from its
    neighbours' soft pointers, not from its own.
    """
    trace = Trace.of(batch)
    masks = reached_before_by_parity(trace, batch.num_steps - 1)
    out = {}
    for parity, where in masks.items():
        patch = Patch("fed_pi_h", hardened, where=where)
        run, _ = run_with_cache(
            model.config, model.params, batch, [patch], precision=model.precision
        )
        out[f"free_hard_{parity}"] = _pointers(run.hint_preds["pi_h"])
    return out


def role_targets(
    trace: Trace, steps: int, age: int = EDIT_AGE
) -> list[tuple[int, int]]:
    """``(graph, node)`` of every node with a prediction ``age`` or more steps old.

    The nodes :func:`flips_by_distance` counts (:func:`_old_node_steps`),
    each once, in order.
    """
    return sorted({(b, v) for _, b, v, _ in _old_node_steps(trace, steps, age)})


def role_rows(
    trace: Trace, targets: Sequence[tuple[int, int]], steps: int, age: int = EDIT_AGE
) -> dict[str, np.ndarray]:
    """Per role of :data:`ROLES`: ``[S, K, N, 1]``, the rows hardened for each target.

    Target ``k``, node ``v`` of graph ``b``: the fed pointer row of ``v``'s
    parent (``parent``), of its children (``child``: the neighbours one step
    farther from the source, :meth:`Trace.is_child`'s), or both, from step
    ``distance(v) + age - 1`` on, the first whose prediction of ``v`` is
    ``age`` old; the rows before it, and every other row, stay as the model
    fed them.
    """
    nodes = trace.reached_at.shape[1]
    parent = np.zeros((steps, len(targets), nodes, 1), bool)
    child = np.zeros_like(parent)
    for k, (b, v) in enumerate(targets):
        at = trace.reached_at[b]
        start = max(int(at[v]) + age - 1, 0)
        parent[start:, k, trace.parent[b, v], 0] = True
        child[start:, k, trace.neighbours[b, v] & (at == at[v] + 1), 0] = True
    return {"parent": parent, "child": child, "both": parent | child}


def free_hardened_by_role(
    model: Model, batch: Batch, age: int = EDIT_AGE
) -> dict[str, np.ndarray]:
    """``{"free_hard_parent", "free_hard_child", "free_hard_both"}``: ``[S, B, N]``.

    Which neighbour's soft pointer a node's memory reads, where
    :func:`free_hardened_by_parity` says only that it is a neighbour's:
    running free with soft feedback, one rollout per node ``v`` that
    :func:`flips_by_distance` counts (:func:`role_targets`) and role, with
    only the rows :func:`role_rows` marks around ``v`` hardened
    (:func:`hardened`, through the ``fed_pi_h`` site).  Entry ``[t, b, v]``
    is ``v``'s prediction in its own rollout, so each rollout's counts cover
    the node-steps of ``free`` exactly; the other entries name the node
    itself (never a child).  The rollouts run on copies of ``batch``'s
    graphs, ``batch.batch_size`` at a time (:func:`_hardened_copies`).
    """
    trace = Trace.of(batch)
    steps = batch.num_steps - 1
    targets = role_targets(trace, steps, age)
    itself = np.broadcast_to(
        np.arange(batch.num_nodes), (steps, *trace.node_mask.shape)
    )
    out = {f"free_hard_{role}": itself.copy() for role in ROLES}
    if not targets:
        return out
    rows = role_rows(trace, targets, steps, age)
    where = np.concatenate([rows[role] for role in ROLES], axis=1)
    index = [b for _ in ROLES for b, _ in targets]
    predicted = _hardened_copies(model, batch, index, where)  # [S, 3K, N]
    graphs, nodes = (np.asarray(t) for t in zip(*targets, strict=True))
    for i, role in enumerate(ROLES):
        copy = i * len(targets) + np.arange(len(targets))
        out[f"free_hard_{role}"][:, graphs, nodes] = predicted[:, copy, nodes]
    return out


def _hardened_copies(
    model: Model, batch: Batch, index: Sequence[int], where: np.ndarray
) -> np.ndarray:
    """``[S, len(index), N]``: copies ``index`` of ``batch``'s graphs run free.

    Copy ``k`` runs with soft feedback but the fed pointer rows
    ``where[:, k]`` marks hardened.  The copies go ``batch.batch_size`` at
    a time, the last pass filled with graph 0, nothing hardened, and those
    dropped: one node per copy makes the copies a multiple of ``batch``'s
    graphs, so one batch of them would hold that many times the
    activations ``run_with_cache`` keeps of ``batch``; a pass of its size
    holds what a rollout of ``batch`` itself does, in its compiled shape.
    """
    size = batch.batch_size
    fill = -len(index) % size
    index = [*index, *[0] * fill]
    unmarked = np.zeros((where.shape[0], fill, *where.shape[2:]), bool)
    where = np.concatenate([where, unmarked], axis=1)
    passes = []
    for start in range(0, len(index), size):
        patch = Patch("fed_pi_h", hardened, where=where[:, start : start + size])
        copies = graphs_of(batch, index[start : start + size])
        run, _ = run_with_cache(
            model.config, model.params, copies, [patch], precision=model.precision
        )
        passes.append(_pointers(run.hint_preds["pi_h"]))
    return np.concatenate(passes, axis=1)[:, : len(index) - fill]


def same_as_forced(
    predicted: np.ndarray, forced: np.ndarray, trace: Trace, age: int = EDIT_AGE
) -> float:
    """The share of old node-steps at which a rollout names what teacher forcing does.

    ``predicted`` and ``forced``: ``[S, B, N]`` pointers; the node-steps
    :func:`flips_by_distance` counts (``age`` or more steps after the
    reach).  Teacher-forced, every fed pointer is the true trace's, one-hot;
    a rollout that hardens only a node's neighbours' fed pointers
    (:func:`free_hardened_by_role`'s ``both``) and names what teacher
    forcing names at every old node-step keeps or loses the node's pointer
    on what those rows carry, not on anything else it fed itself.  NaN
    where no node is that old.
    """
    same = [
        predicted[t, b, v] == forced[t, b, v]
        for t, b, v, _ in _old_node_steps(trace, predicted.shape[0], age)
    ]
    return float(np.mean(same)) if same else math.nan


def age_counts(
    traces: Iterable[Trace], select: Callable[[Trace], np.ndarray] | None = None
) -> dict[int, int]:
    """``{age: node-steps}``: reached nodes ``age`` ≥ 1 steps after their reach.

    Counted over each graph's hint steps 1 to ``L - 1`` (those a step
    predicts), every real node reached before that step, or only the nodes
    ``select(trace)`` marks (``[B, N]``; e.g. :func:`tied_nodes`: how long
    training asks a node to keep which of its tied parents it took).
    """
    counts: dict[int, int] = {}
    for trace in traces:
        chosen = trace.node_mask if select is None else select(trace) & trace.node_mask
        for b, length in enumerate(trace.lengths):
            at = trace.reached_at[b][chosen[b]]
            for t in range(1, int(length)):
                for age in (t - at[(at >= 0) & (at < t)]).tolist():
                    counts[age] = counts.get(age, 0) + 1
    return counts


def age_rows(sources: Mapping[str, Mapping[int, int]]) -> list[dict[str, Any]]:
    """Per age, each source's node-steps at that age and its share at or above it.

    ``sources``: ``{name: age_counts(...)}``, e.g. the training
    distribution's traces and a test set's; columns ``<name>_node_steps``
    and ``<name>_share_at_least``.
    """
    rows = []
    oldest = max((a for counts in sources.values() for a in counts), default=0)
    for age in range(1, oldest + 1):
        row: dict[str, Any] = {"age": age}
        for name, counts in sources.items():
            total = sum(counts.values())
            above = sum(n for a, n in counts.items() if a >= age)
            row[f"{name}_node_steps"] = counts.get(age, 0)
            row[f"{name}_share_at_least"] = above / total if total else 0.0
        rows.append(row)
    return rows


def _pointers(logits: Any) -> np.ndarray:
    return np.asarray(logits).argmax(-1)


@dataclasses.dataclass(frozen=True)
class Readings:
    """One model's pointer anatomy on one batch (:func:`pointer_tables`).

    Attributes:
      row: rollouts, hint errors both ways, outputs by their parent's
        pointer, old pointers as teacher forcing names them.
      edits: per edit and parity, :func:`edit_counts` and
        :func:`hint_edit_counts` side by side.
      distances: per rollout (``free``; ``free_hard``; ``free_hard_even``
        and ``free_hard_odd``, :func:`free_hardened_by_parity`'s;
        ``free_hard_parent``, ``free_hard_child`` and ``free_hard_both``,
        :func:`free_hardened_by_role`'s; ``forced``;
        and ``forced_source_moved``, teacher-forced on :func:`source_moved`'s
        batch) and distance, :func:`flips_by_distance`'s node-steps and
        moves to a child.
    """

    row: dict[str, Any]
    edits: list[dict[str, Any]]
    distances: list[dict[str, Any]]


def pointer_tables(model: Model, batch: Batch) -> Readings:
    """One model's readings on ``batch`` (BFS).

    The row: the output's accuracy running free (soft and hard feedback)
    and teacher-forced; hint errors (:func:`hint_errors`) running free and
    teacher-forced (``forced_``), where every step reads the true trace, so
    a pointer that moves there moves in the model's own memory, not in what
    it fed itself; outputs by their parent's fed pointer; the median mass
    old nodes' soft pointers put on their parent running free, and the share
    below a half (:func:`fed_parent_mass`); and, per rollout of
    :data:`AS_FORCED`, the share of old node-steps naming what teacher
    forcing names (:func:`same_as_forced`, ``as_forced_<rollout>``).  The
    edits: :func:`edit_counts` and :func:`hint_edit_counts` of the edited traces
    (:func:`edited_cases`) against the same teacher-forced pass on the true
    trace.  The distances: :func:`flips_by_distance` running free (soft and
    hard feedback: a pointer kept with soft feedback and lost with hard
    needs the mass the fed pointers put off their argmax; the state alone
    does not keep it; hard for one parity's rows only,
    :func:`free_hardened_by_parity`, which says whose mass; and hard for one
    node's parent, children or both, :func:`free_hardened_by_role`, which
    says which neighbour's) and
    teacher-forced, on the batch and with its source mark moved
    (:func:`source_moved`).  Each pass runs at the model's own
    matmul precision (``Model.precision``).
    """
    trace = Trace.of(batch)
    config, precision = model.config, model.precision
    free = forward(config, True, precision)(model.params, batch)
    hard = forward(
        dataclasses.replace(config, hint_repred_mode="hard"), True, precision
    )(model.params, batch)
    run_forced = forward(teacher_forced(config), False, precision)
    forced = run_forced(model.params, batch)
    predicted = _pointers(free.hint_preds["pi_h"])
    forced_predicted = _pointers(forced.hint_preds["pi_h"])

    def accuracy(out: Any) -> float:
        hits = _pointers(out.outputs["pi"]) == trace.parent
        return float(hits[trace.node_mask].mean())

    row = {
        "output_free": accuracy(free),
        "output_free_hard": accuracy(hard),
        "output_forced": accuracy(forced),
        **hint_errors(predicted, trace),
        **{f"forced_{k}": v for k, v in hint_errors(forced_predicted, trace).items()},
        **output_by_parent_pointer(
            _pointers(free.outputs["pi"]),
            fed_into_output_step(predicted, trace),
            trace,
        ),
    }
    mass = fed_parent_mass(np.asarray(free.hint_preds["pi_h"]), trace)
    row["fed_parent_median"] = float(np.median(mass)) if mass.size else math.nan
    row["fed_parent_below_half"] = float((mass < 0.5).mean()) if mass.size else 0.0
    moved = _pointers(run_forced(model.params, source_moved(batch)).hint_preds["pi_h"])
    rollouts = {"free": predicted, "free_hard": _pointers(hard.hint_preds["pi_h"])}
    rollouts |= free_hardened_by_parity(model, batch)
    rollouts |= free_hardened_by_role(model, batch)
    for name in AS_FORCED:
        row[f"as_forced_{name}"] = same_as_forced(
            rollouts[name], forced_predicted, trace
        )
    rollouts |= {"forced": forced_predicted, "forced_source_moved": moved}
    distances = [
        {"rollout": rollout, "distance": d, "node_steps": n, "to_child": k}
        for rollout, pointers in rollouts.items()
        for d, (n, k) in flips_by_distance(pointers, trace).items()
    ]
    edits = _edit_rows(partial(run_forced, model.params), batch, forced, trace)
    return Readings(row, edits, distances)


def _edit_rows(
    run_forced: Callable[[Batch], Any], batch: Batch, forced: Any, trace: Trace
) -> list[dict[str, Any]]:
    """:func:`pointer_tables`'s edits: outputs and hints side by side.

    ``run_forced``: the model's teacher-forced pass; ``forced``: its output
    on ``batch``'s true trace.
    """
    cases, pi_h = edited_cases(trace)
    if not cases:
        return []
    edited = run_forced(edited_batch(batch, cases, pi_h))
    outputs = edit_counts(
        _pointers(edited.outputs["pi"]), _pointers(forced.outputs["pi"]), cases, trace
    )
    hints = hint_edit_counts(
        _pointers(edited.hint_preds["pi_h"]),
        _pointers(forced.hint_preds["pi_h"]),
        cases,
        trace,
    )
    return [{**o, **h} for o, h in zip(outputs, hints, strict=True)]


def tie_count_rows(
    arms: Mapping[str, tuple[str, Sequence[Any]]],
    grids: Sequence[tuple[bool, Batch]],
) -> list[dict[str, Any]]:
    """:func:`model_tie_counts` of each seed of each arm on each grid, a row each.

    ``arms``: contender -> (recipe, its runs' :class:`~nar_gap.analysis.
    models.Models`); ``grids``: ``(clrs_law, batch)``, the law each batch was
    drawn by (notebook 07's section 6c and notebook 09 count this way).
    """
    return [
        {"contender": contender, "recipe": recipe, "seed": int(seed)}
        | {"clrs_law": law, "num_nodes": batch.num_nodes}
        | {"graphs": batch.batch_size}
        | model_tie_counts(model, batch)
        for law, batch in grids
        for contender, (recipe, runs) in arms.items()
        for models in runs
        for seed, model in zip(models.seeds, models.each(), strict=True)
    ]


def tie_count_table(
    rows: Sequence[Mapping[str, Any]], measure: str, clrs_law: bool, num_nodes: int
) -> dict[str, dict]:
    """``{contender: {seed: measure}}`` of :func:`tie_count_rows`, one law and size."""
    counts: dict[str, dict[int, float]] = {}
    for r in rows:
        if str(r["clrs_law"]) == str(clrs_law) and int(r["num_nodes"]) == num_nodes:
            by_seed = counts.setdefault(str(r["contender"]), {})
            by_seed[int(r["seed"])] = float(r[measure])
    return counts


def paired_tie_counts(
    rows: Sequence[Mapping[str, Any]],
    measure: str,
    clrs_law: bool,
    num_nodes: int,
    arm: str,
    against: str,
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """``(seeds, arm's, against's)``: :func:`tie_count_table`, paired by seed.

    The seeds both contenders have, in order, and their ``measure`` on one
    law's grids of one size (empty where either is absent).
    """
    counts = tie_count_table(rows, measure, clrs_law, num_nodes)
    return paired_by_seed(counts.get(arm, {}), counts.get(against, {}))


def paired_by_seed(
    a: Mapping[int, float], b: Mapping[int, float]
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """``(seeds, a's, b's)``: the seeds both have, in order, and their values."""
    seeds = sorted(a.keys() & b.keys())
    return seeds, *(np.asarray([t[s] for s in seeds], np.float64) for t in (a, b))
