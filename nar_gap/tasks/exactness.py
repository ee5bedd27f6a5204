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
from collections.abc import Mapping

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


def _differences(
    hint_preds: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    batch: Batch,
):
    """Per probe: ``(name, stage, location, typ, flagged)``.

    ``flagged``: None where the probe is missing from the predictions; a
    hint's ``[S, B]`` (step ``t`` against hint ``t + 1``, only steps below
    the sample's length), an output's ``[B]``.  Vectorised: the exactness
    checks of a minimality search ran this comparison a sample and a step at
    a time in Python, 86 s of its 235 s at the cpu profile.
    """
    spec = get_spec(batch.algorithm)
    lengths = np.asarray(batch.lengths, np.int64)
    real = np.asarray(batch.node_mask, bool)
    for name, (stage, location, typ) in spec.items():
        if stage == "hint":
            if name not in hint_preds:
                yield name, stage, location, typ, None
                continue
            truth = np.asarray(batch.hints[name])
            preds = np.asarray(hint_preds[name])
            steps = max(min(truth.shape[0] - 1, preds.shape[0]), 0)
            flagged = _flagged(
                truth[1 : steps + 1], preds[:steps], real, location, typ, lead=1
            )
            counted = np.arange(steps)[:, None] < (lengths - 1)[None, :]
            yield name, stage, location, typ, flagged & counted
        elif stage == "output":
            if name not in outputs:
                yield name, stage, location, typ, None
                continue
            truth = np.asarray(batch.outputs[name])
            preds = np.asarray(outputs[name])
            flagged = _flagged(truth, preds, real, location, typ, lead=0)
            yield name, stage, location, typ, flagged


def agrees_with_clrs(
    hint_preds: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    batch: Batch,
) -> bool:
    """Whether :func:`compare_with_clrs` would find nothing, without its reports."""
    return all(
        flagged is not None and not flagged.any()
        for *_, flagged in _differences(hint_preds, outputs, batch)
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
    found: list[Mismatch] = []
    for name, stage, location, typ, flagged in _differences(hint_preds, outputs, batch):
        if flagged is None:
            found.append(Mismatch(name, 0 if stage == "hint" else -1, -1, (), (), ()))
            continue
        if stage == "hint":
            truth, preds = np.asarray(batch.hints[name]), np.asarray(hint_preds[name])
            where = [
                (b, t)
                for b in range(flagged.shape[1])
                for t in np.flatnonzero(flagged[:, b])
            ]
            pairs = [(t + 1, b, truth[t + 1, b], preds[t, b]) for b, t in where]
        else:
            truth, preds = np.asarray(batch.outputs[name]), np.asarray(outputs[name])
            pairs = [(-1, b, truth[b], preds[b]) for b in np.flatnonzero(flagged)]
        for step, b, expected, got in pairs:
            expected = _values(expected, real[b], location, typ)
            got = _values(got, real[b], location, typ)
            found.append(
                _report(
                    name, int(step), int(b), _differs(typ, expected, got), expected, got
                )
            )
    return found


def format_mismatches(mismatches: list[Mismatch], limit: int = 20) -> str:
    """A readable report of the first ``limit`` mismatches."""
    lines = [str(m) for m in mismatches[:limit]]
    if len(mismatches) > limit:
        lines.append(f"... and {len(mismatches) - limit} more")
    return "\n".join(lines)
