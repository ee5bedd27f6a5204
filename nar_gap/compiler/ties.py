"""Near-ties: selections dm-clrs decides by a gap the compiled network cannot see.

A ``Minimise`` criterion turns scores into logits at ``lambda`` logit units per
unit of score and must win by ``margin`` plus the span of the criteria after
it, so two candidates whose scores differ by less than its *resolution*
(``CriterionScale.resolution``: that margin over ``(1 - LEAK) lambda``) are a
tie to the network, broken by the later criteria (the current predecessor,
the lowest id).  dm-clrs compares float64 scores exactly, so on such a pair
the two may choose differently and both follow the algorithm.  This module
tells those cases apart from errors, from dm-clrs's own trace:

* a pointer that differs from dm-clrs's is a **near-tie** when, under the
  reference values of the step before, the two candidates' scores
  (``value_j + A_ij``) differ by at most the resolution;
* it is a **split near-tie** when the model's attention at that receiver
  put all but :data:`SPLIT_MASS` of its mass on candidates whose scores lie
  within the resolution of dm-clrs's choice, and some on two or more of
  them: the softmax of two logits the Minimise criterion could not separate
  (their difference is comparable to the later criteria's) splits its mass,
  and the stored pointer is the attention-weighted mean of their ids,
  which names some third node (1.8 % of the mass on a candidate 559 ids
  away moves it by 10 ids).  The model chose among the tied candidates; no
  single id can say so;
* a value that differs is a near-tie's consequence when a pointer of the same
  sample tied at or before that step and the difference is at most the
  resolution times the steps so far (each step can add one tie's gap along a
  path);
* everything else stays a mismatch.

Only a ``Minimise`` whose value the program decodes verbatim as a CLRS scalar
(Bellman-Ford's ``d``) can be read off the reference; a program without one
has no near-ties.

The attention is read only for a pointer that differs by more than the
resolution (a split, or an error), and only its receiver's row at that step.
A run that does not keep its attention (:meth:`~nar_gap.compiler.
compiled_model.CompiledModel.run`) hands each step's to a
:class:`SplitRecorder`, which judges those rows there and then; :func:`classify`
reads its verdicts once the trace is compared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from nar_gap.compiler.selection import CriterionScale
from nar_gap.programs.dsl import GraphProgram, Minimise, var
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.exactness import Mismatch
from nar_gap.tasks.specs import Type, get_spec

# Attention mass a split near-tie may leave outside the tied candidates, and
# the mass below which a sender counts as not attended to.
SPLIT_MASS = 1e-3
_NO_MASS = 1e-12


@dataclasses.dataclass(frozen=True)
class NearTie:
    """One node at one step where the model and dm-clrs chose within ``resolution``.

    ``gap``: the difference of the two choices' scores (pointers) or of the two
    values (scalars), under dm-clrs's values.
    """

    probe: str
    step: int  # the hint index (t + 1), or -1 for an output
    sample: int
    node: int
    expected: float
    found: float
    gap: float
    resolution: float
    split: int = 0  # candidates the attention split over (0: it chose one)

    def __str__(self) -> str:
        where = "output" if self.step < 0 else f"hint step {self.step}"
        how = f", attention split over {self.split} candidates" if self.split else ""
        return (
            f"{self.probe} ({where}, sample {self.sample}): node {self.node} tie "
            f"within ε = {self.resolution:.1e}: dm-clrs {self.expected:g}, model "
            f"{self.found:g}, gap {self.gap:.1e}{how}"
        )


def minimise_resolution(scales: tuple[CriterionScale, ...]) -> float:
    """The compiled Minimise criterion's resolution (0 without one)."""
    return max((s.resolution for s in scales if s.criterion == "Minimise"), default=0.0)


def _scored_probe(program: GraphProgram) -> tuple[Minimise, str] | None:
    """The Minimise criterion and the CLRS scalar probe that is its value."""
    criterion = next(
        (c for c in program.selection.criteria if isinstance(c, Minimise)), None
    )
    if criterion is None or len(criterion.value.terms) != 1:
        return None
    ((name, coef),) = criterion.value.terms
    if coef != 1.0 or criterion.value.const != 0.0:
        return None
    for decoder in program.decoders:
        if decoder.kind == "scalar" and decoder.expr == var(name):
            return criterion, decoder.probes[0]
    return None


def _split(
    row: np.ndarray,
    scores: np.ndarray,
    chosen: int,
    candidate: np.ndarray,
    resolution: float,
) -> tuple[float, int]:
    """``(largest score gap, count)`` of a split over near-tied candidates.

    The near-tied candidates are those of dm-clrs's (``candidate``: reached
    and joined in the input graph, or the receiver itself) whose scores lie
    within ``resolution`` of dm-clrs's choice.  A split leaves at most
    :data:`SPLIT_MASS` of the attention outside them and puts some on at least
    two of them; ``(inf, 0)`` otherwise.  Even a small share matters: on 2048
    nodes, 6e-4 of the mass on a tied candidate 1000 ids away moves the
    stored id by 0.6 and the decoded pointer to a neighbouring id.
    """
    tied = candidate & (np.abs(scores - scores[chosen]) <= resolution)
    if row[~tied].sum() > SPLIT_MASS:
        return np.inf, 0
    held = np.flatnonzero(tied & (row > _NO_MASS))
    if held.size < 2:
        return np.inf, 0
    return float(np.max(np.abs(scores[held] - scores[chosen]))), int(held.size)


def _compared(m: Mismatch, hint_preds, outputs, batch: Batch):
    """(dm-clrs's, the model's) values of ``m``'s probe at its step: ``[N]`` each."""
    if m.step >= 0:
        truth = np.asarray(batch.hints[m.probe])[m.step, m.sample]
        found = np.asarray(hint_preds[m.probe])[m.step - 1, m.sample]
    else:
        truth = np.asarray(batch.outputs[m.probe])[m.sample]
        found = np.asarray(outputs[m.probe])[m.sample]
    return np.asarray(truth, np.float64), np.asarray(found, np.float64)


# A split's verdict (:func:`_split`'s ``(gap, count)``) per (probe, hint index
# or -1 for an output, sample, receiver): what :func:`classify` reads of the
# attention, made step by step while the model runs (:class:`SplitRecorder`).
SplitKey = tuple[str, int, int, int]
Splits = Mapping[SplitKey, tuple[float, int]]


@dataclasses.dataclass(frozen=True)
class TieReference:
    """dm-clrs's side of a near-tie: the scores, from the reference alone.

    ``values``: dm-clrs's Minimise value, ``[T, B, N]``; ``reached``: its
    candidates (reached senders, ``msk``, where it has them); ``last``: each
    sample's last hint index (an output is judged at that step).
    """

    resolution: float
    edge_scored: bool
    values: np.ndarray
    weights: np.ndarray
    real: np.ndarray
    reached: np.ndarray
    last: np.ndarray

    @classmethod
    def of(
        cls, program: GraphProgram, resolution: float, batch: Batch
    ) -> TieReference | None:
        """The reference of ``batch``; None where nothing can tie (no Minimise)."""
        scored = _scored_probe(program)
        if scored is None or resolution <= 0:
            return None
        criterion, value_probe = scored
        values = np.asarray(batch.hints[value_probe], np.float64)  # [T, B, N]
        # dm-clrs's candidates are reached senders (``msk``) where it has them.
        reached = (
            np.asarray(batch.hints["msk"]) > 0.5
            if "msk" in batch.hints
            else np.ones(values.shape, bool)
        )
        return cls(
            resolution=resolution,
            edge_scored=bool(criterion.edge),
            values=values,
            weights=np.asarray(batch.inputs["A"], np.float64),
            real=np.asarray(batch.node_mask, bool),
            reached=reached,
            last=np.asarray(batch.lengths, np.int64) - 1,
        )

    def scores(self, step: int, sample: int, node: int) -> np.ndarray:
        """Each sender's score for ``node`` under dm-clrs's values before ``step``."""
        edge = self.weights[sample, node] if self.edge_scored else 0.0
        return self.values[step - 1, sample] + edge

    def differing(
        self, sample: int, truth: np.ndarray, found: np.ndarray
    ) -> list[tuple[int, int, int]]:
        """``(receiver, dm-clrs's pointer, the model's)`` where they differ."""
        differ = np.flatnonzero((truth != found) & self.real[sample])
        return [(int(i), int(truth[i]), int(found[i])) for i in differ]

    def split_at(
        self, step: int, sample: int, node: int, chosen: int, row: np.ndarray
    ) -> tuple[float, int]:
        """:func:`_split` of ``node``'s attention ``row`` at hint index ``step``."""
        scores = self.scores(step, sample, node)
        joined = (self.weights[sample, node] != 0) | (np.arange(len(scores)) == node)
        return _split(
            row,
            scores,
            chosen,
            joined & self.reached[step - 1, sample],
            self.resolution,
        )


class SplitRecorder:
    """The split verdicts :func:`classify` will read, made one step at a time.

    A run that does not keep its attention hands each step's attention to
    :meth:`hint_step` (and each sample's output step's to :meth:`output`);
    for every pointer that differs from dm-clrs's by more than the
    resolution, the receiver's attention row is judged there and then
    (:func:`_split`) and only the verdict is kept.  ``attention`` is a
    function of the sample giving its ``[N, N]`` float64 attention (heads
    averaged), called only where a verdict is needed.
    """

    def __init__(self, program: GraphProgram, resolution: float, batch: Batch):
        self.reference = TieReference.of(program, resolution, batch)
        spec = get_spec(batch.algorithm)
        self._pointers = {n for n, (_, _, t) in spec.items() if t == Type.POINTER}
        self._batch = batch
        self.splits: dict[SplitKey, tuple[float, int]] = {}

    @property
    def active(self) -> bool:
        """Whether the program can tie at all (else nothing is ever read)."""
        return self.reference is not None

    def hint_step(self, index: int, hints: Mapping[str, np.ndarray], attention):
        """Step ``index``'s decoded hints, ``[B, N]``, against hint ``index + 1``."""
        if self.reference is None:
            return
        lengths = np.asarray(self._batch.lengths)
        for probe in self._pointers & set(hints):
            truth = np.asarray(self._batch.hints[probe][index + 1], np.float64)
            found = np.asarray(hints[probe], np.float64)
            for b in np.flatnonzero(index < lengths - 1):
                self._judge(
                    probe, index + 1, index + 1, int(b), truth[b], found[b], attention
                )

    def output(self, outputs: Mapping[str, np.ndarray], attention) -> None:
        """The decoded outputs, each sample judged at its last hint index."""
        if self.reference is None:
            return
        for probe in self._pointers & set(outputs):
            truth = np.asarray(self._batch.outputs[probe], np.float64)
            found = np.asarray(outputs[probe], np.float64)
            for b, last in enumerate(self.reference.last):
                if last > 0:
                    self._judge(probe, -1, int(last), b, truth[b], found[b], attention)

    def _judge(self, probe, key_step, step, sample, truth, found, attention) -> None:
        ref = self.reference
        rows = None
        for i, p, q in ref.differing(sample, truth, found):
            scores = ref.scores(step, sample, i)
            if abs(scores[q] - scores[p]) <= ref.resolution:
                continue
            rows = attention(sample) if rows is None else rows
            self.splits[(probe, key_step, sample, i)] = ref.split_at(
                step, sample, i, p, rows[i]
            )


def _pointer_ties(
    ref: TieReference, splits: Splits | None, m: Mismatch, truth, found, step
) -> list[NearTie] | None:
    """A pointer mismatch's near-ties, one per differing node; None: an error.

    A node is a near-tie when the two choices' scores under dm-clrs's values
    of the step before differ by at most the resolution, or, failing that,
    when the attention split over near-tied candidates (:func:`_split`, as
    ``splits`` recorded it).
    """
    resolution = ref.resolution
    tied = []
    for i, p, q in ref.differing(m.sample, truth, found):
        scores = ref.scores(step, m.sample, i)
        gap = abs(scores[q] - scores[p])
        split = 0
        # An output is the last step's pointer: judged at that step.
        if gap > resolution and splits is not None and step > 0:
            gap, split = splits.get((m.probe, m.step, m.sample, i), (np.inf, 0))
        if gap > resolution:
            return None
        tied.append(NearTie(m.probe, m.step, m.sample, i, p, q, gap, resolution, split))
    return tied


def _value_ties(
    ref: TieReference, m: Mismatch, truth, found, step, kind, first_tie
) -> list[NearTie] | None:
    """A scalar mismatch's near-ties (a tied pointer's consequence); None: an error.

    Only after a pointer of the same sample tied at or before its step, and
    only within the resolution times the steps so far.
    """
    tolerance = ref.resolution * max(step, 1)
    differ = np.flatnonzero((truth != found) & ref.real[m.sample])
    gaps = np.abs(found - truth)[differ]
    if (
        kind == Type.SCALAR
        and first_tie.get(m.sample, step + 1) <= step
        and np.all(gaps <= tolerance)
    ):
        return [
            NearTie(m.probe, m.step, m.sample, int(i), truth[i], found[i], g, tolerance)
            for i, g in zip(differ, gaps, strict=True)
        ]
    return None


def classify(
    program: GraphProgram,
    resolution: float,
    hint_preds: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    batch: Batch,
    mismatches: list[Mismatch],
    splits: Splits | None = None,
) -> tuple[list[Mismatch], list[NearTie]]:
    """``(mismatches that stay errors, near-ties)`` of one compared trace.

    Args:
      program: the compiled program (its Minimise criterion gives the scores).
      resolution: :func:`minimise_resolution` of the model that ran.
      hint_preds: the model's decoded hints, ``[S, B, N]``.
      outputs: the model's decoded outputs, ``[B, N]``.
      batch: dm-clrs's reference.
      mismatches: :func:`~nar_gap.tasks.exactness.compare_with_clrs`'s.
      splits: :class:`SplitRecorder`'s verdicts on the model's attention, to
        recognise split near-ties; None: only single choices.
    """
    ref = TieReference.of(program, resolution, batch)
    if ref is None or not mismatches:
        return list(mismatches), []
    spec = get_spec(batch.algorithm)

    def step_of(m: Mismatch) -> int:
        return m.step if m.step >= 0 else int(ref.last[m.sample])

    ties: list[NearTie] = []
    errors: list[Mismatch] = []
    first_tie: dict[int, int] = {}
    kinds = {m.probe: spec[m.probe][2] for m in mismatches if m.probe in spec}
    pointers = [m for m in mismatches if kinds.get(m.probe) == Type.POINTER]
    for m in sorted(pointers, key=step_of):
        compared = _compared(m, hint_preds, outputs, batch)
        tied = _pointer_ties(ref, splits, m, *compared, step_of(m))
        if tied is None:
            errors.append(m)
            continue
        ties += tied
        first_tie[m.sample] = min(first_tie.get(m.sample, step_of(m)), step_of(m))
    for m in mismatches:
        if kinds.get(m.probe) == Type.POINTER:
            continue
        compared = _compared(m, hint_preds, outputs, batch)
        tied = _value_ties(ref, m, *compared, step_of(m), kinds.get(m.probe), first_tie)
        if tied is None:
            errors.append(m)
        else:
            ties += tied
    return errors, ties
