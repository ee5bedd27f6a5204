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
    spec = get_spec(batch.algorithm)
    lengths = np.asarray(batch.lengths, np.int64)
    real = np.asarray(batch.node_mask, bool)
    found: list[Mismatch] = []
    for name, (stage, location, typ) in spec.items():
        if stage == "hint":
            truth = np.asarray(batch.hints[name])
            if name not in hint_preds:
                found.append(Mismatch(name, 0, -1, (), (), ()))
                continue
            preds = np.asarray(hint_preds[name])
            for b in range(truth.shape[1]):
                for t in range(lengths[b] - 1):
                    if t + 1 >= truth.shape[0] or t >= preds.shape[0]:
                        break
                    expected = _values(truth[t + 1, b], real[b], location, typ)
                    got = _values(preds[t, b], real[b], location, typ)
                    bad = _differs(typ, expected, got)
                    if bad.any():
                        found.append(_report(name, t + 1, b, bad, expected, got))
        elif stage == "output":
            if name not in outputs:
                found.append(Mismatch(name, -1, -1, (), (), ()))
                continue
            truth = np.asarray(batch.outputs[name])
            preds = np.asarray(outputs[name])
            for b in range(truth.shape[0]):
                expected = _values(truth[b], real[b], location, typ)
                got = _values(preds[b], real[b], location, typ)
                bad = _differs(typ, expected, got)
                if bad.any():
                    found.append(_report(name, -1, b, bad, expected, got))
    return found


def format_mismatches(mismatches: list[Mismatch], limit: int = 20) -> str:
    """A readable report of the first ``limit`` mismatches."""
    lines = [str(m) for m in mismatches[:limit]]
    if len(mismatches) > limit:
        lines.append(f"... and {len(mismatches) - limit} more")
    return "\n".join(lines)
