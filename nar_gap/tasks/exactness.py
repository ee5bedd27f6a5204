"""Compare a decoded trace with dm-clrs's ground truth, probe by probe.

A compiled model is *exact* when, for every sample ``b``, every step ``t``
below its length (``t < L_b - 1``: step ``t`` predicts ``hint[t + 1]``), every
hint and every output agree: pointers, masks and categories equal, scalars
(node or graph, such as DFS's ``time``) within :data:`DISTANCE_TOLERANCE`.
Mismatches name the probe, the step and the sample, so a broken weight block
is found from the report alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import NamedTuple

import numpy as np

from nar_gap.tasks.batch import Batch
from nar_gap.tasks.specs import Location, Type, get_spec

# Distances: CLRS sums float64 weights; a network stores them in float32, and
# the compiled update adds and removes a gate of 2 (x + 2 - 2), so each step
# may round to 2.4e-7 (ulp of 2) and a path of k edges to about k * 5e-7.
# 1e-4 absolute covers paths of 200 edges; relative 1e-6 covers long distances.
DISTANCE_TOLERANCE = 1e-4
DISTANCE_RELATIVE_TOLERANCE = 1e-6


@dataclasses.dataclass(frozen=True)
class Mismatch:
    """One probe at one step of one sample that differs from dm-clrs."""

    probe: str
    step: int  # the hint index compared (t + 1), or -1 for an output
    sample: int
    nodes: tuple[int, ...]
    expected: tuple[float, ...]
    found: tuple[float, ...]

    def __str__(self) -> str:
        where = "output" if self.step < 0 else f"hint step {self.step}"
        return (
            f"{self.probe} ({where}, sample {self.sample}): nodes {list(self.nodes)} "
            f"expected {list(self.expected)} found {list(self.found)}"
        )


def _values(data: np.ndarray, real: np.ndarray, location: str, typ: str):
    """One sample's values to compare: real nodes, or the graph's one value.

    Categorical probes (one-hot ``[..., C]``) compare as class indices, so a
    mismatch reports the class each side chose.
    """
    data = np.asarray(data)
    if typ == Type.CATEGORICAL:
        data = np.argmax(data, axis=-1)
    if location == Location.GRAPH:
        return np.atleast_1d(data)
    return data[real]


def _differs(typ: str, expected: np.ndarray, found: np.ndarray) -> np.ndarray:
    if typ == "scalar":
        tol = DISTANCE_TOLERANCE + DISTANCE_RELATIVE_TOLERANCE * np.abs(expected)
        return ~(np.abs(expected - found) <= tol)
    return expected != found


def _report(probe, step, sample, bad, expected, found, limit=8) -> Mismatch:
    nodes = np.flatnonzero(bad)[:limit]
    return Mismatch(
        probe,
        step,
        sample,
        tuple(int(n) for n in nodes),
        tuple(float(expected[n]) for n in nodes),
        tuple(float(found[n]) for n in nodes),
    )


def _flagged(
    truth: np.ndarray,
    preds: np.ndarray,
    real: np.ndarray,
    location: str,
    typ: str,
    lead: int,
) -> np.ndarray:
    """``[*lead, B]``: whether each (step,) sample differs on its real nodes.

    ``truth``, ``preds``: ``[*lead, B, ...]``, aligned; what :func:`_values`
    and :func:`_differs` compare one sample at a time, for all at once (a
    node or edge probe masked by ``real`` on its first node axis).
    """
    if typ == Type.CATEGORICAL:
        truth, preds = np.argmax(truth, axis=-1), np.argmax(preds, axis=-1)
    bad = _differs(typ, truth, preds)
    if location != Location.GRAPH:
        trailing = bad.ndim - lead - real.ndim
        bad = bad & real.reshape((1,) * lead + real.shape + (1,) * trailing)
    return bad.any(axis=tuple(range(lead + 1, bad.ndim)))


class _Compared(NamedTuple):
    """One probe compared: its aligned values and where they differ.

    ``expected``, ``found``: a hint's ``[S, B, ...]`` (row ``t`` is hint
    ``t + 1`` against step ``t``'s prediction), an output's ``[B, ...]``;
    ``flagged`` ``[S, B]`` or ``[B]``; all three None where the predictions
    lack the probe.
    """

    name: str
    stage: str
    location: str
    typ: str
    expected: np.ndarray | None
    found: np.ndarray | None
    flagged: np.ndarray | None


def _differences(
    hint_preds: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    batch: Batch,
) -> Iterator[_Compared]:
    """Every hint and output of the spec, compared for all samples at once.

    Only steps below a sample's length count, and real nodes.  Vectorised:
    the exactness checks of a minimality search ran this comparison a
    sample and a step at a time in Python, 86 s of its 235 s at the cpu
    profile.
    """
    lengths = np.asarray(batch.lengths, np.int64)
    real = np.asarray(batch.node_mask, bool)
    sources = {"hint": (batch.hints, hint_preds), "output": (batch.outputs, outputs)}
    for name, (stage, location, typ) in get_spec(batch.algorithm).items():
        if stage not in sources:
            continue
        truths, predicted = sources[stage]
        if name not in predicted:
            yield _Compared(name, stage, location, typ, None, None, None)
            continue
        expected, found = np.asarray(truths[name]), np.asarray(predicted[name])
        if stage == "hint":
            steps = max(min(expected.shape[0] - 1, found.shape[0]), 0)
            expected, found = expected[1 : steps + 1], found[:steps]
        lead = 1 if stage == "hint" else 0
        flagged = _flagged(expected, found, real, location, typ, lead)
        if stage == "hint":
            flagged &= np.arange(len(flagged))[:, None] < (lengths - 1)[None, :]
        yield _Compared(name, stage, location, typ, expected, found, flagged)


def agrees_with_clrs(
    hint_preds: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    batch: Batch,
) -> bool:
    """Whether :func:`compare_with_clrs` would find nothing, without its reports."""
    return all(
        c.flagged is not None and not c.flagged.any()
        for c in _differences(hint_preds, outputs, batch)
    )


def compare_with_clrs(
    hint_preds: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    batch: Batch,
) -> list[Mismatch]:
    """Every mismatch of decoded predictions against the batch's ground truth.

    Args:
      hint_preds: ``[S, B, N]`` decoded hint predictions (step t -> hint t+1),
        pointers as node indices, masks as 0/1.
      outputs: ``[B, N]`` decoded outputs.
      batch: the ground truth (dm-clrs's hints and outputs).

    Returns:
      One :class:`Mismatch` per (probe, step, sample) that differs; empty if
      the trace is exact.  Hints or outputs missing from the predictions are
      reported as mismatches too, so nothing is compared by omission.
    """
    real = np.asarray(batch.node_mask, bool)
    reports: list[Mismatch] = []
    for c in _differences(hint_preds, outputs, batch):
        if c.flagged is None:
            reports.append(
                Mismatch(c.name, 0 if c.stage == "hint" else -1, -1, (), (), ())
            )
            continue
        if c.stage == "hint":  # sample by sample, each one's steps in order
            where = [
                (t, b)
                for b in range(c.flagged.shape[1])
                for t in np.flatnonzero(c.flagged[:, b])
            ]
            pairs = [(t + 1, b, (t, b)) for t, b in where]
        else:
            pairs = [(-1, b, b) for b in np.flatnonzero(c.flagged)]
        for step, b, at in pairs:
            expected = _values(c.expected[at], real[b], c.location, c.typ)
            found = _values(c.found[at], real[b], c.location, c.typ)
            bad = _differs(c.typ, expected, found)
            reports.append(_report(c.name, int(step), int(b), bad, expected, found))
    return reports


def format_mismatches(mismatches: list[Mismatch], limit: int = 20) -> str:
    """A readable report of the first ``limit`` mismatches."""
    lines = [str(m) for m in mismatches[:limit]]
    if len(mismatches) > limit:
        lines.append(f"... and {len(mismatches) - limit} more")
    return "\n".join(lines)
