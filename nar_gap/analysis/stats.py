"""Statistics across seeds: correlations, fitted lines, clusters, table cells.

Table 1's correlations, the fitted line of Figures 1 and 10, the Ward clusters
of learned solutions (Figure 5), and the paper's ``mean ± std (max)`` cells.

numpy and scipy only, on per-seed numbers that :mod:`nar_gap.analysis.faithfulness`
computed; nothing here runs a network.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform


def correlation_table(
    accuracy: np.ndarray, measures: Mapping[str, np.ndarray]
) -> list[dict[str, Any]]:
    """Table 1: Pearson and Spearman of each measure against accuracy, with p-values.

    A constant input has no correlation: its row holds NaN and says so in
    ``note`` (scipy would warn and return NaN too).
    """
    accuracy = np.asarray(accuracy, np.float64)
    rows = []
    for name, values in measures.items():
        values = np.asarray(values, np.float64)
        row: dict[str, Any] = {"measure": name, "n": int(len(values))}
        if len(values) < 3 or np.ptp(values) == 0 or np.ptp(accuracy) == 0:
            row.update(
                pearson_r=np.nan,
                pearson_p=np.nan,
                spearman_rho=np.nan,
                spearman_p=np.nan,
                note="undefined: fewer than 3 seeds or a constant input",
            )
        else:
            pearson = stats.pearsonr(values, accuracy)
            spearman = stats.spearmanr(values, accuracy)
            row.update(
                pearson_r=float(pearson.statistic),
                pearson_p=float(pearson.pvalue),
                spearman_rho=float(spearman.statistic),
                spearman_p=float(spearman.pvalue),
                note="",
            )
        rows.append(row)
    return rows


@dataclasses.dataclass(frozen=True)
class FitBand:
    """Least-squares line with a pointwise confidence band for the mean."""

    x: np.ndarray
    fit: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    slope: float
    intercept: float


def linear_fit_band(
    x: np.ndarray, y: np.ndarray, level: float = 0.95, points: int = 100
) -> FitBand:
    """The fitted line of Figures 1 and 10 and its ``level`` confidence band.

    The band is the t-interval of the fitted mean, ``ŷ ± t·s·sqrt(1/n +
    (x - x̄)² / Sxx)`` with ``n - 2`` degrees of freedom (seaborn's regplot
    draws a bootstrap version of the same thing).
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    grid = np.linspace(x.min(), x.max(), points) if len(x) else np.zeros(0)
    if len(x) < 3 or np.ptp(x) == 0:
        flat = np.full_like(grid, np.mean(y) if len(y) else np.nan)
        return FitBand(grid, flat, flat, flat, np.nan, float(np.mean(y)))
    fit = stats.linregress(x, y)
    predicted = fit.intercept + fit.slope * grid
    residual = y - (fit.intercept + fit.slope * x)
    dof = len(x) - 2
    scale = np.sqrt(np.sum(residual**2) / dof)
    sxx = np.sum((x - x.mean()) ** 2)
    half = (
        stats.t.ppf(0.5 + level / 2, dof)
        * scale
        * np.sqrt(1 / len(x) + (grid - x.mean()) ** 2 / sxx)
    )
    return FitBand(
        grid,
        predicted,
        predicted - half,
        predicted + half,
        float(fit.slope),
        float(fit.intercept),
    )


@dataclasses.dataclass(frozen=True)
class Clusters:
    """Ward clustering of learned solutions by their internal distances.

    Attributes:
      linkage: scipy's ``[K - 1, 4]`` linkage matrix.
      labels: ``[K]`` cluster of every seed (1-based, in scipy's numbering).
      count: the number of clusters.
      threshold: the cut height that defines them.
    """

    linkage: np.ndarray
    labels: np.ndarray
    count: int
    threshold: float


def cluster_solutions(distances: np.ndarray) -> Clusters:
    """Ward-linkage clusters of solutions, and the rule that counts them.

    Rule (ours; the paper does not state its own): cut the dendrogram in the
    widest gap between successive merge heights, halfway across it.  Merges
    below the cut join near-identical solutions, merges above it join groups
    that are far apart, so the groups below the cut are the "consistent"
    clusters.  The figure colours clusters at the same height, so its colours
    match the count.  Merge heights do not depend on the order of the seeds,
    so neither do the count and the partition.  With fewer than three
    solutions, or when all are identical, there is no gap to read: one cluster.
    Ward on a non-Euclidean distance (ours is a total-variation distance) is
    usual practice and what the paper reports; the heights are then not
    variances.
    """
    distances = np.asarray(distances, np.float64)
    k = distances.shape[0]
    if distances.shape != (k, k) or not np.allclose(distances, distances.T):
        raise ValueError(
            f"distances must be a symmetric square matrix, got {distances.shape}"
        )
    if k == 1:
        return Clusters(np.zeros((0, 4)), np.ones(1, int), 1, 0.0)
    linkage = hierarchy.linkage(squareform(distances, checks=False), method="ward")
    heights = linkage[:, 2]
    if k < 3 or heights[-1] <= 0:
        top = float(heights[-1])
        return Clusters(linkage, np.ones(k, int), 1, top + max(top, 1e-12))
    gaps = np.diff(heights)
    widest = int(np.argmax(gaps))  # cut between merge `widest` and `widest + 1`
    threshold = float(0.5 * (heights[widest] + heights[widest + 1]))
    labels = hierarchy.fcluster(linkage, t=threshold, criterion="distance")
    return Clusters(linkage, labels, int(len(np.unique(labels))), threshold)


def score_summary(scores: Sequence[float]) -> dict[str, Any]:
    """Columns of a results table over seeds: count, the paper's cell, the numbers."""
    scores = np.asarray(scores, np.float64)
    return {
        "seeds": int(len(scores)),
        "performance": mean_std_max(scores),
        "mean": float(scores.mean()),
        "std": float(scores.std()),
        "max": float(scores.max()),
        "min": float(scores.min()),
    }


def mean_std_max(values: Sequence[float]) -> str:
    """The paper's table cell: ``mean ± std (max)`` (population std, 3 decimals)."""
    values = np.asarray(values, np.float64)
    return f"{values.mean():.3f} ± {values.std():.3f} ({values.max():.3f})"
