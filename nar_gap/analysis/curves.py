"""Means over seeds of curves: what a figure's bold line draws.

Figures draw per-seed curves thin and their mean bold (Figures 2, 4 and 11,
the validation curves, notebook 07's training curves).  The means are
computed here, beside the other statistics across seeds, and handed to
:mod:`nar_gap.paper.plots`, which only draws.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True)
class SeedCurves:
    """Per-seed curves and their mean over seeds.

    Attributes:
      per_seed: ``[K, S]`` float64, one row per seed; NaN where a seed has
        no sample that counts.
      mean: ``[S]``, the mean over the seeds that count at each point; NaN
        where none does (a gap in the drawn line, not a 0).
    """

    per_seed: np.ndarray
    mean: np.ndarray


def seed_curves(values: np.ndarray) -> SeedCurves:
    """``values`` (``[K, S]``, or one curve ``[S]``) and their NaN-skipping mean."""
    per_seed = np.atleast_2d(np.asarray(values, np.float64))
    counted = np.sum(~np.isnan(per_seed), axis=0)
    mean = np.where(
        counted > 0, np.nansum(per_seed, axis=0) / np.maximum(counted, 1), np.nan
    )
    return SeedCurves(per_seed, mean)


def step_means(rows: Iterable[Mapping[str, Any]], key: str) -> dict[int, float]:
    """The mean of ``key`` over the rows of each step, steps in increasing order.

    ``rows`` hold ``step`` and ``key`` as numbers or as the strings of a
    results CSV.  A NaN (step 0's training loss: the untrained model has
    none) makes its step's mean NaN.
    """
    rows = list(rows)
    steps = sorted({int(r["step"]) for r in rows})
    return {
        s: np.mean([float(r[key]) for r in rows if int(r["step"]) == s]) for s in steps
    }
