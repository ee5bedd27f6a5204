"""Statistics across seeds: correlations, fitted lines, clusters, table cells.

Table 1's correlations, the fitted line of Figures 1 and 10, the Ward clusters
of learned solutions (Figure 5), and the paper's ``mean ± std (max)`` cells.

numpy and scipy only, on per-seed numbers that :mod:`nar_gap.analysis.faithfulness`
computed; nothing here runs a network.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from scipy import stats
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform

MIN_SEEDS_FOR_P = 10
"""Fewest seeds for which Table 1 reports a p-value.

Below it a p-value says little: at n = 4 scipy's t-approximation printed
p = 0.0, and even the exact permutation p-value of a perfect correlation is
only 2/n! (1/12 at n = 4).  r, rho and their bootstrap intervals are still
reported, and the interval shows how little a small n pins r down.
"""

RESAMPLES = 9999
"""Resamples of the bootstrap and of a randomised permutation test (scipy's
default).  A permutation test enumerates all n! pairings instead when
n! <= RESAMPLES (n <= 7), and its p-value is then exact."""

RESAMPLING_SEED = 0
"""Seed of every resampling here, fresh per call: a rerun on the same numbers
gives the same p-values and intervals to the last digit."""

CONFIDENCE_LEVEL = 0.95
"""Coverage of the bootstrap intervals of r and rho."""

Correlation = Literal["pearson", "spearman"]


# --------------------------------------------------------------------------- #
# A score over seeds: mean, spread, count; a seed without a value is missing.
# --------------------------------------------------------------------------- #


@dataclasses.dataclass(frozen=True)
class Summary:
    """A table row's score over seeds: mean, population std, number of seeds."""

    mean: float
    std: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray) -> Summary:
        """The summary of every value (a NaN among them makes the mean NaN)."""
        values = np.asarray(values, np.float64)
        return cls(float(values.mean()), float(values.std()), len(values))

    @property
    def sample_std(self) -> float:
        """The std with Bessel's correction (tables print the population std)."""
        if self.n < 2:
            return math.nan
        return self.std * math.sqrt(self.n / (self.n - 1))


def finite_summary(values: Sequence[float] | np.ndarray) -> Summary:
    """The summary of the finite values only: NaN, NaN, 0 when there is none.

    A seed without a value at some point (a trace with no counted step
    there, a text model without a NAR to score) is missing, not zero: it
    leaves the mean, the std and the count.  The finite values are summed
    packed together, in seed order; :func:`nan_mean` sums them in place and
    differs in the last bit from eight values on.
    """
    values = np.asarray(values, np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return Summary(math.nan, math.nan, 0)
    return Summary(float(finite.mean()), float(finite.std()), int(finite.size))


def nan_mean(values: Sequence[float] | np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean of the finite values along ``axis``; NaN where none is finite.

    Missing values count as zeros in place (numpy's ``nanmean``, without its
    warning on an all-missing slice), so a slice is summed at the positions
    it has; :func:`finite_summary` packs them first and may differ in the
    last bit.
    """
    values = np.asarray(values, np.float64)
    present = np.isfinite(values)
    total = np.where(present, values, 0.0).sum(axis)
    count = present.sum(axis)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _pearson(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pearson's r along ``axis``, vectorized over leading axes (NaN if constant).

    scipy's permutation test and bootstrap call this once on a whole batch of
    resamples (``[resamples, n]``), which is what keeps Table 1 fast.  A
    resample whose x or y is constant has no r; it is tested as ``max == min``
    rather than on the centred sums, which rounding leaves slightly off zero.
    """
    x, y = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(y, np.float64))
    x = np.moveaxis(x, axis, -1)
    y = np.moveaxis(y, axis, -1)
    dx = x - x.mean(-1, keepdims=True)
    dy = y - y.mean(-1, keepdims=True)
    scale = np.sqrt(np.sum(dx * dx, -1) * np.sum(dy * dy, -1))
    constant = (np.ptp(x, -1) == 0) | (np.ptp(y, -1) == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sum(dx * dy, -1) / np.where(constant, 1.0, scale)
    return np.where(constant, np.nan, np.clip(r, -1.0, 1.0))


def _spearman(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman's rho along ``axis``: Pearson's r of the ranks (ties averaged).

    The same definition as :func:`scipy.stats.spearmanr`.  Bootstrap resamples
    repeat values, so they are ranked afresh each time.
    """
    rank_x = stats.rankdata(x, axis=axis)
    rank_y = stats.rankdata(y, axis=axis)
    return _pearson(rank_x, rank_y, axis)


_STATISTICS = {"pearson": _pearson, "spearman": _spearman}


def _paired(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"x and y must be 1-D and of one length, got {x.shape} and {y.shape}"
        )
    return x, y


@dataclasses.dataclass(frozen=True)
class PermutationP:
    """A two-sided permutation p-value of a correlation.

    Attributes:
      statistic: the observed r or rho.
      pvalue: the two-sided p-value (scipy's: twice the smaller tail).
      exact: whether all n! pairings were enumerated.
      resamples: pairings evaluated (n! when exact).
    """

    statistic: float
    pvalue: float
    exact: bool
    resamples: int

    @property
    def method(self) -> str:
        """How the p-value was computed, for Table 1's ``p_method`` column."""
        if self.exact:
            return "exact permutation"
        return f"permutation, {self.resamples} resamples"


def permutation_p(
    x: np.ndarray,
    y: np.ndarray,
    statistic: Correlation,
    resamples: int = RESAMPLES,
) -> PermutationP:
    """Two-sided permutation p-value of Pearson's r or Spearman's rho.

    :func:`scipy.stats.permutation_test` with ``permutation_type="pairings"``:
    under the null hypothesis that x and y are unrelated, every pairing of the
    seeds' x with their y is equally likely (exchangeability), so the p-value
    is the share of pairings whose statistic is at least as extreme as the
    observed one.  Only x is permuted, y stays put (scipy's own example for a
    correlation): that reaches every pairing, n! in all.  When n! <=
    ``resamples`` scipy enumerates them and the p-value is exact; otherwise it
    draws ``resamples`` random pairings and counts the observed one among them,
    so p >= 2 / (resamples + 1).  No normal or t approximation is involved,
    unlike scipy's ``pearsonr`` p-value, which printed p = 0.0 at n = 4.

    For rho the ranks are permuted: permuting x and then ranking it gives the
    same ranks, permuted.  The seed is fixed (:data:`RESAMPLING_SEED`).
    """
    x, y = _paired(x, y)
    correlate = _STATISTICS[statistic]
    if statistic == "spearman":
        x, y = stats.rankdata(x), stats.rankdata(y)

    def with_y(permuted: np.ndarray, axis: int = -1) -> np.ndarray:
        return _pearson(permuted, y, axis)

    result = stats.permutation_test(
        (x,),
        with_y,
        permutation_type="pairings",
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        rng=np.random.default_rng(RESAMPLING_SEED),
    )
    exact = math.factorial(len(x)) <= resamples
    return PermutationP(
        statistic=float(correlate(x, y)),
        pvalue=float(result.pvalue),
        exact=exact,
        resamples=math.factorial(len(x)) if exact else resamples,
    )


def signed_rank_p(differences: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Wilcoxon's signed-rank test of paired ``differences``, one-sided each way.

    ``(greater, less)``: the chance, were each difference's sign a coin
    flip, of a statistic (the ranks of the positive differences summed) at
    least and at most the observed one.  Zeros are dropped (Wilcoxon's
    convention, scipy's default), tied magnitudes share their midrank, and
    the p is exact at every n (:func:`signed_rank_p_rows`), where scipy
    enumerates the flips only up to 13 pairs once differences tie or are
    zero and takes the normal approximation above.  On 6c's tie counts at
    ``studies`` that approximation erred both ways, from 0.44 to 113 times
    the exact p: too small where 3 of 24 seeds differed at all (0.054
    against 1/8, the least three flips give), too large in the tail (the
    cases are in ``tests/analysis/test_stats.py``).  ``(1.0, 1.0)`` where
    none is nonzero.
    """
    greater, less = signed_rank_p_rows(np.asarray(differences, np.float64)[None])
    return float(greater[0]), float(less[0])


def _finite(values: Any, caller: str, name: str, axes: str) -> np.ndarray:
    """``values`` as float64 with one dimension per name in ``axes``, all finite.

    Anything else is a one-line ``ValueError`` naming ``caller``.
    """
    array = np.asarray(values, np.float64)
    if array.ndim != axes.count(",") + 1:
        raise ValueError(f"{caller}: {name} must be [{axes}], got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{caller}: every value of {name} must be finite")
    return array


def signed_rank_p_rows(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`signed_rank_p` of each row of ``differences`` (``[rows, pairs]``).

    Many sets of seeds tested at once, as a power count resamples them
    (:func:`~nar_gap.analysis.power.seeds_for_signed_rank`).  The flips are
    counted by dynamic programming over the doubled ranks (integers), a
    row's law shifted by its own rank at each pair, O(rows x pairs^3).  A
    zero's rank counts as 0, a flip that moves nothing, so rows may hold
    different numbers of nonzero differences.  The laws are multiples of
    ``2**-k`` (k nonzero pairs), exact in float64 up to 53 of them.
    """
    d = _finite(differences, "signed_rank_p_rows", "differences", "rows, pairs")
    nonzero = d != 0
    zeros = np.count_nonzero(~nonzero, axis=-1, keepdims=True)
    # Zeros rank first (|0| is least): a nonzero's rank among the nonzero is
    # its rank among all less the zeros, ties' midranks kept.
    ranks = stats.rankdata(np.abs(d), axis=-1) - zeros
    doubled = np.where(nonzero, np.rint(2 * ranks), 0).astype(np.int64)
    observed = np.where(d > 0, doubled, 0).sum(-1)  # the positives' ranks
    # Each row's nonzero first, in their order (the order the flips are
    # counted in, so a row's law is the same bits as on its own).
    first = np.argsort(~nonzero, axis=-1, kind="stable")
    counted = int(np.max(nonzero.sum(-1), initial=0))
    doubled = np.take_along_axis(doubled, first, axis=-1)[:, :counted]
    totals = doubled.sum(-1)
    support = np.arange(int(np.max(totals, initial=0)) + 1)
    law = np.zeros((d.shape[0], support.size))  # each row's doubled statistic
    law[:, 0] = 1.0
    for rank in doubled.T:  # each row's next pair: its rank counted or not
        moved = support - rank[:, None]
        shifted = np.take_along_axis(law, np.maximum(moved, 0), axis=-1)
        law = 0.5 * law + 0.5 * np.where(moved >= 0, shifted, 0.0)
    greater = np.array(
        [row[o : t + 1].sum() for row, o, t in zip(law, observed, totals, strict=True)]
    )
    less = np.array([row[: o + 1].sum() for row, o in zip(law, observed, strict=True)])
    return np.minimum(1.0, greater), np.minimum(1.0, less)


def _ordered(columns: Sequence[np.ndarray], axis: int) -> np.ndarray:
    """``[..., blocks, conditions]``: one array per condition, blocks on ``axis``."""
    return np.stack([np.moveaxis(c, axis, -1) for c in columns], axis=-1)


def page_l(blocks: np.ndarray) -> np.ndarray:
    """Page's L of ``blocks`` (``[..., blocks, conditions]``, conditions in order).

    Each block's values are ranked along the conditions (ties share their
    mean rank), each rank weighted by its condition's place, and summed over
    blocks: large where values rise along the order in most blocks.
    """
    ranks = stats.rankdata(blocks, axis=-1)
    return np.sum(ranks * np.arange(1, ranks.shape[-1] + 1), axis=(-2, -1))


def page_z(blocks: np.ndarray) -> np.ndarray:
    """Page's L as a z-score, each block's values permuted along the conditions.

    The mean and variance of a linear permutation statistic, block by block
    (``var = sum (c - mean c)**2 * sum (r - mean r)**2 / (k - 1)``), so tied
    ranks are accounted for, where scipy's ``page_trend_test`` assumes none.
    NaN where no block varies.  For counts of many draws at once (the
    permutation test itself, :func:`page_trend`, is exact under ties but
    draws :data:`RESAMPLES` permutations per call).
    """
    ranks = stats.rankdata(np.asarray(blocks, np.float64), axis=-1)
    k = ranks.shape[-1]
    weights = np.arange(1, k + 1) - (k + 1) / 2
    centred = ranks - ranks.mean(axis=-1, keepdims=True)
    excess = np.sum(centred * weights, axis=(-2, -1))
    variance = np.sum(weights**2) * np.sum(centred**2, axis=(-2, -1)) / (k - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(variance > 0, excess / np.sqrt(variance), np.nan)


def page_p_rows(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Page's test of each row of ``blocks`` (``[rows, blocks, conditions]``), exact.

    ``(rises, falls)``: the chance, were each block's values permuted along
    the conditions (every order equally likely, as :func:`page_trend`
    permutes them), of an L at least and at most the observed one.  Counted
    by dynamic programming over the doubled L (integers, since tied values
    share a half-integer midrank): each block's law is its ``conditions!``
    orders' L, and a row's law the convolution of its blocks'.  O(rows x
    blocks^2 x conditions^3 + rows x blocks x conditions!), so many sets of
    seeds can be tested at once, as a power count resamples them
    (:func:`~nar_gap.analysis.power.seeds_for_trend`), where
    :func:`page_trend` draws :data:`RESAMPLES` permutations per set.  Exact
    but for float rounding (each order's weight is ``1 / conditions!``).
    """
    b = _finite(blocks, "page_p_rows", "blocks", "rows, blocks, conditions")
    orders = np.array(list(itertools.permutations(range(b.shape[-1]))))
    place = np.arange(1, b.shape[-1] + 1)
    doubled = np.rint(2 * stats.rankdata(b, axis=-1)).astype(np.int64)
    ordered = doubled[..., orders] @ place  # [rows, blocks, orders]: doubled L
    least = ordered.min(-1)
    above = ordered - least[..., None]  # each order's L above the block's least
    width = int(above.max(initial=0))
    # Each row's varying blocks first, in their order: a block whose values
    # all tie moves nothing, so past a row's last varying block its law is done.
    varies = np.any(above > 0, axis=-1)
    first = np.argsort(~varies, axis=-1, kind="stable")[..., None]
    counted = int(np.max(varies.sum(-1), initial=0))
    above = np.take_along_axis(above, first, axis=1)[:, :counted]
    # [rows, counted, width + 1]: each block's law over its L above its least
    shares = np.stack([np.mean(above == v, -1) for v in range(width + 1)], -1)
    law = np.zeros((b.shape[0], counted * width + 1))
    law[:, 0] = 1.0
    for j in range(counted):  # the law so far reaches j x width
        reach = j * width + 1
        moved = np.zeros((b.shape[0], reach + width))
        for v in np.flatnonzero(np.any(shares[:, j] > 0, axis=0)):
            moved[:, v : v + reach] += shares[:, j, v, None] * law[:, :reach]
        law[:, : reach + width] = moved
    observed = (doubled @ place - least).sum(-1)[:, None]
    falls = np.take_along_axis(np.cumsum(law, -1), observed, -1)[:, 0]
    tail = np.cumsum(law[:, ::-1], -1)[:, ::-1]  # summed from the top: no 1 - x
    rises = np.take_along_axis(tail, observed, -1)[:, 0]
    return np.minimum(1.0, rises), np.minimum(1.0, falls)


@dataclasses.dataclass(frozen=True)
class PageTrend:
    """:func:`page_trend`'s answer: Page's L and its permutation p each way."""

    statistic: float
    p_rises: float
    p_falls: float
    blocks: int


def page_trend(blocks: np.ndarray, resamples: int = RESAMPLES) -> PageTrend:
    """Page's test of a trend along ordered conditions, p-values by permutation.

    ``blocks``: ``[blocks, conditions]`` (a seed's values at each grid size,
    sizes in order); blocks with a NaN are dropped.  Under the null
    hypothesis each block's values are exchangeable along the conditions
    (the order does not matter), so :func:`scipy.stats.permutation_test`
    (``permutation_type="samples"``) permutes each block's values apart and
    counts the L at least as large (``p_rises``) or as small (``p_falls``)
    as the observed one, the same permutations each way
    (:data:`RESAMPLING_SEED`).  Valid with tied values, as where two arms
    both lose nothing at the smaller sizes; scipy's ``page_trend_test``
    computes its p as if nothing tied.  With no block left, both p are NaN.
    """
    values = np.asarray(blocks, np.float64)
    values = values[np.all(np.isfinite(values), axis=-1)]
    if values.shape[0] == 0:
        return PageTrend(math.nan, math.nan, math.nan, 0)

    def statistic(*columns: np.ndarray, axis: int = -1) -> np.ndarray:
        return page_l(_ordered(columns, axis))

    p = {
        side: float(
            stats.permutation_test(
                tuple(values.T),
                statistic,
                permutation_type="samples",
                vectorized=True,
                n_resamples=resamples,
                alternative=side,
                rng=np.random.default_rng(RESAMPLING_SEED),
            ).pvalue
        )
        for side in ("greater", "less")
    }
    return PageTrend(
        float(page_l(values)), p["greater"], p["less"], int(values.shape[0])
    )


@dataclasses.dataclass(frozen=True)
class BootstrapInterval:
    """A percentile bootstrap interval of r or rho.

    Attributes:
      low, high: the interval's ends.
      undefined: resamples left out because their x or y was constant.
    """

    low: float
    high: float
    undefined: int


def bootstrap_interval(
    x: np.ndarray,
    y: np.ndarray,
    statistic: Correlation,
    level: float = CONFIDENCE_LEVEL,
    resamples: int = RESAMPLES,
) -> BootstrapInterval:
    """Percentile bootstrap interval of Pearson's r or Spearman's rho.

    :func:`scipy.stats.bootstrap` with ``paired=True``: a resample draws seeds
    with replacement and keeps each seed's (x, y) together, so the interval
    reflects how much r changes with the choice of seeds.  At the paper's
    small n the interval is wide, which a bare r hides.  Percentile rather
    than BCa: BCa's jackknife fails on resamples without an r.

    A resample whose x or y is constant (all its seeds share one value) has no
    r.  Such resamples are left out and counted in ``undefined``; the interval
    is then the ``level`` quantiles of the others (the same quantile rule as
    scipy's).  They are rare unless n is tiny or many seeds tie.  The seed is
    fixed (:data:`RESAMPLING_SEED`).
    """
    x, y = _paired(x, y)
    return _percentile_interval((x, y), _STATISTICS[statistic], level, resamples)


def _percentile_interval(
    data: tuple[np.ndarray, ...],
    statistic: Any,
    level: float = CONFIDENCE_LEVEL,
    resamples: int = RESAMPLES,
) -> BootstrapInterval:
    """Paired percentile bootstrap of a vectorised ``statistic(*data, axis)``.

    Shared by :func:`bootstrap_interval` (x, y) and the partial correlation
    (x, y, control): resamples draw seeds and keep each seed's values
    together; resamples without a value (NaN) are left out and counted.
    """
    with warnings.catch_warnings():
        # scipy warns when a resample has no r; those are counted below instead
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(
            data,
            statistic,
            n_resamples=resamples,
            vectorized=True,
            paired=True,
            confidence_level=level,
            method="percentile",
            rng=np.random.default_rng(RESAMPLING_SEED),
        )
    distribution = np.asarray(result.bootstrap_distribution)
    undefined = int(np.count_nonzero(np.isnan(distribution)))
    if undefined == 0:
        low, high = result.confidence_interval
    elif undefined == distribution.size:
        low, high = np.nan, np.nan
    else:
        alpha = (1 - level) / 2
        low, high = np.nanquantile(distribution, [alpha, 1 - alpha])
    return BootstrapInterval(float(low), float(high), undefined)


def correlation_table(
    accuracy: np.ndarray, measures: Mapping[str, np.ndarray]
) -> list[dict[str, Any]]:
    """Table 1: Pearson and Spearman of each measure against accuracy.

    Columns: ``measure, n``; ``pearson_r, pearson_p, spearman_rho,
    spearman_p`` (r and rho are scipy's; the p-values are two-sided
    permutation p-values, :func:`permutation_p`); ``note``;
    ``pearson_ci_low, pearson_ci_high, spearman_ci_low, spearman_ci_high``
    (95 % percentile bootstrap intervals over seeds, :func:`bootstrap_interval`);
    ``p_method`` ("exact permutation" or "permutation, 9999 resamples"; empty
    where no p-value is reported).

    Why not scipy's ``pearsonr`` p-value: it comes from a t-distribution that
    assumes normal data and needs many seeds; at n = 4 it printed p = 0.0.  A
    permutation p-value is exact under exchangeability of the seeds, whatever
    their distribution.  Below :data:`MIN_SEEDS_FOR_P` seeds no p-value is
    reported (NaN, and ``note`` says so): the few pairings there are cannot
    give a small p, and a number in the table invites reading one.  r, rho and
    their intervals are still reported from 3 seeds on; the interval shows how
    wide r is at small n.  All resampling uses a fixed seed, so a rerun gives
    identical numbers.

    Fewer than 3 seeds, or a constant input, has no correlation: the row holds
    NaN and says so in ``note`` (scipy would warn and return NaN too).
    """
    accuracy = np.asarray(accuracy, np.float64)
    rows = []
    for name, values in measures.items():
        values = np.asarray(values, np.float64)
        row = _empty_row(name, len(values))
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(accuracy))):
            row["note"] = "undefined: a seed has no value (NaN)"
            rows.append(row)
            continue
        if len(values) < 3 or np.ptp(values) == 0 or np.ptp(accuracy) == 0:
            row["note"] = "undefined: fewer than 3 seeds or a constant input"
            rows.append(row)
            continue
        row["pearson_r"] = float(stats.pearsonr(values, accuracy).statistic)
        row["spearman_rho"] = float(stats.spearmanr(values, accuracy).statistic)
        notes = []
        if len(values) >= MIN_SEEDS_FOR_P:
            pearson = permutation_p(values, accuracy, "pearson")
            row["pearson_p"] = pearson.pvalue
            row["spearman_p"] = permutation_p(values, accuracy, "spearman").pvalue
            row["p_method"] = pearson.method
        else:
            notes.append(f"p-value not reported below n = {MIN_SEEDS_FOR_P}")
        for statistic in ("pearson", "spearman"):
            interval = bootstrap_interval(values, accuracy, statistic)
            row[f"{statistic}_ci_low"] = interval.low
            row[f"{statistic}_ci_high"] = interval.high
        if interval.undefined:  # the same resamples for r and rho
            notes.append(
                f"bootstrap: {interval.undefined} of {RESAMPLES} resamples had a "
                "constant input and were left out"
            )
        row["note"] = "; ".join(notes)
        rows.append(row)
    return rows


def _empty_row(measure: str, n: int) -> dict[str, Any]:
    """A Table 1 row with every number NaN, in the table's column order."""
    return {
        "measure": measure,
        "n": int(n),
        "pearson_r": np.nan,
        "pearson_p": np.nan,
        "spearman_rho": np.nan,
        "spearman_p": np.nan,
        "note": "",
        "pearson_ci_low": np.nan,
        "pearson_ci_high": np.nan,
        "spearman_ci_low": np.nan,
        "spearman_ci_high": np.nan,
        "p_method": "",
    }


# --------------------------------------------------------------------------- #
# Partial correlation: Table 1 with a confounder held fixed.
# --------------------------------------------------------------------------- #


def residualise(values: np.ndarray, control: np.ndarray, axis: int = -1) -> np.ndarray:
    """``values`` minus their least-squares line on ``control`` (with intercept).

    Vectorised along ``axis`` like :func:`_pearson`, so a bootstrap
    residualises every resample at once.  A constant control explains
    nothing but the mean: the residuals are then the centred values.
    """
    v, c = np.broadcast_arrays(
        np.asarray(values, np.float64), np.asarray(control, np.float64)
    )
    v, c = np.moveaxis(v, axis, -1), np.moveaxis(c, axis, -1)
    dv = v - v.mean(-1, keepdims=True)
    dc = c - c.mean(-1, keepdims=True)
    scale = np.sum(dc * dc, -1, keepdims=True)
    constant = np.ptp(c, -1, keepdims=True) == 0
    slope = np.sum(dv * dc, -1, keepdims=True) / np.where(constant, 1.0, scale)
    residual = dv - np.where(constant, 0.0, slope) * dc
    return np.moveaxis(residual, -1, axis)


def _partial_pearson(
    x: np.ndarray, y: np.ndarray, control: np.ndarray, axis: int = -1
) -> np.ndarray:
    """Pearson's r of x and y after residualising both on ``control``."""
    return _pearson(residualise(x, control, axis), residualise(y, control, axis), axis)


def _partial_spearman(
    x: np.ndarray, y: np.ndarray, control: np.ndarray, axis: int = -1
) -> np.ndarray:
    """Rank partial correlation: :func:`_partial_pearson` of the three ranks."""
    ranks = [stats.rankdata(v, axis=axis) for v in (x, y, control)]
    return _partial_pearson(*ranks, axis=axis)


_PARTIAL = {"pearson": _partial_pearson, "spearman": _partial_spearman}


def partial_correlation(
    x: np.ndarray, y: np.ndarray, control: np.ndarray, statistic: Correlation
) -> float:
    """Correlation of x and y with ``control`` held fixed (linearly).

    Both are residualised on ``control`` by least squares and the residuals
    correlated (Spearman: the ranks of all three).  Equals the textbook
    ``(r_xy - r_xc r_yc) / sqrt((1 - r_xc²)(1 - r_yc²))``.  Table 1 controls
    for each seed's selected training step: a measure and accuracy that both
    follow how long a seed trained correlate without telling anything about
    each other.
    """
    x, y = _paired(x, y)
    _, control = _paired(x, control)
    return float(_PARTIAL[statistic](x, y, control))


def partial_correlation_table(
    accuracy: np.ndarray,
    measures: Mapping[str, np.ndarray],
    control: np.ndarray,
) -> list[dict[str, Any]]:
    """Table 1's rows as partial correlations with accuracy, ``control`` held fixed.

    The columns of :func:`correlation_table`.  ``pearson_r`` / ``spearman_rho``
    are :func:`partial_correlation`; the p-values permute one variable's
    residuals against the other's (:func:`permutation_p` on the residuals,
    on the rank residuals for rho).  That treats the residuals as
    exchangeable under no partial association, which holds only
    approximately (residuals share the fit's n - 2 degrees of freedom); it
    is the usual residual-permutation test, close to exact at the seed
    counts here.  The intervals resample seeds (with their control) and
    residualise each resample afresh.  The
    same n rule for p-values; 4 seeds at least (one control leaves n - 3
    degrees of freedom).  A constant control leaves the raw correlation,
    and ``note`` says so.
    """
    accuracy = np.asarray(accuracy, np.float64)
    control = np.asarray(control, np.float64)
    rows = []
    for name, values in measures.items():
        values = np.asarray(values, np.float64)
        row = _empty_row(name, len(values))
        data = (values, accuracy, control)
        if not all(np.all(np.isfinite(v)) for v in data):
            row["note"] = "undefined: a seed has no value (NaN)"
            rows.append(row)
            continue
        res_x, res_y = residualise(values, control), residualise(accuracy, control)
        if len(values) < 4 or _flat(res_x, values) or _flat(res_y, accuracy):
            row["note"] = (
                "undefined: fewer than 4 seeds, or a measure the control explains"
            )
            rows.append(row)
            continue
        row["pearson_r"] = partial_correlation(values, accuracy, control, "pearson")
        row["spearman_rho"] = partial_correlation(values, accuracy, control, "spearman")
        notes = []
        if np.ptp(control) == 0:
            notes.append("control is constant: the partial r is the raw r")
        if len(values) >= MIN_SEEDS_FOR_P:
            pearson = permutation_p(res_x, res_y, "pearson")
            ranks = [stats.rankdata(v) for v in data]
            rank_x, rank_y = (residualise(r, ranks[2]) for r in ranks[:2])
            row["pearson_p"] = pearson.pvalue
            row["spearman_p"] = permutation_p(rank_x, rank_y, "pearson").pvalue
            row["p_method"] = f"{pearson.method} of residuals"
        else:
            notes.append(f"p-value not reported below n = {MIN_SEEDS_FOR_P}")
        for statistic in ("pearson", "spearman"):
            interval = _percentile_interval(data, _PARTIAL[statistic])
            row[f"{statistic}_ci_low"] = interval.low
            row[f"{statistic}_ci_high"] = interval.high
        if interval.undefined:
            notes.append(
                f"bootstrap: {interval.undefined} of {RESAMPLES} resamples had no "
                "partial correlation and were left out"
            )
        row["note"] = "; ".join(notes)
        rows.append(row)
    return rows


def _flat(residual: np.ndarray, values: np.ndarray) -> bool:
    """Whether the control explains ``values`` entirely (residuals ~ rounding)."""
    scale = max(float(np.ptp(values)), 1e-300)
    return bool(np.max(np.abs(residual), initial=0.0) <= 1e-9 * scale)


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
    linkage = _linkage(distances, "ward")
    k = len(linkage) + 1
    if k == 1:
        return Clusters(linkage, np.ones(1, int), 1, 0.0)
    heights = linkage[:, 2]
    if k < 3 or heights[-1] <= 0:
        top = float(heights[-1])
        return Clusters(linkage, np.ones(k, int), 1, top + max(top, 1e-12))
    gaps = np.diff(heights)
    widest = int(np.argmax(gaps))  # cut between merge `widest` and `widest + 1`
    threshold = float(0.5 * (heights[widest] + heights[widest + 1]))
    labels = hierarchy.fcluster(linkage, t=threshold, criterion="distance")
    return Clusters(linkage, labels, int(len(np.unique(labels))), threshold)


CUT_DISTANCES = (0.05, 0.1, 0.2, 0.3, 0.5)
"""Default fixed thresholds of :func:`cluster_counts`, in the units of the
internal distance: a mean total-variation distance between two solutions'
attention, in [0, 1] (0.1: on average a tenth of the attention mass sits
elsewhere).  They span "near-identical" to "half the attention differs"; the
paper names no threshold."""

Linkage = Literal["average", "ward"]


def _linkage(distances: np.ndarray, method: Linkage) -> np.ndarray:
    """Scipy's linkage matrix of a symmetric distance matrix (none for one)."""
    distances = np.asarray(distances, np.float64)
    k = distances.shape[0]
    if distances.shape != (k, k) or not np.allclose(distances, distances.T):
        raise ValueError(
            f"distances must be a symmetric square matrix, got {distances.shape}"
        )
    if k == 1:
        return np.zeros((0, 4))
    return hierarchy.linkage(squareform(distances, checks=False), method=method)


def _counts_at(linkage: np.ndarray, heights: np.ndarray) -> np.ndarray:
    """Clusters left when every merge at or below each height is made.

    The same as counting :func:`scipy.cluster.hierarchy.fcluster`'s
    ``criterion="distance"`` clusters: Ward and average linkage never merge
    lower than an earlier merge, so the merges at or below ``t`` are exactly
    the ones a cut at ``t`` keeps.
    """
    merges = np.sort(linkage[:, 2])
    return len(merges) + 1 - np.searchsorted(merges, heights, side="right")


def cluster_count_curve(
    distances: np.ndarray, heights: np.ndarray, method: Linkage = "average"
) -> np.ndarray:
    """The number of clusters at each cut height, for a sensitivity plot.

    ``method="average"`` (the default): average linkage, whose merge height is
    the mean distance between the two groups' members, so a height is a
    distance in the internal distance's units and a cut at ``t`` means "no
    two groups closer than ``t`` on average".  ``method="ward"``: the Ward
    linkage of :func:`cluster_solutions`.  Ward heights are not distances:
    merging two groups costs their centroid distance scaled by
    ``sqrt(2·a·b / (a + b))`` for groups of ``a`` and ``b`` solutions, so they
    grow with group size and can exceed the largest pairwise distance (two
    groups of 5 at distance 1 merge at height sqrt(5)).  A Ward curve needs a
    wider range of heights, and its fixed cuts have no direct meaning.

    A merge at exactly a cut height is made (as in scipy's ``fcluster``): at
    height 0, distinct solutions are all separate and identical ones one
    cluster.  Heights must be non-negative.
    """
    heights = np.asarray(heights, np.float64)
    if np.any(heights < 0) or np.any(np.isnan(heights)):
        raise ValueError(f"cut heights must be non-negative, got {heights}")
    return _counts_at(_linkage(distances, method), heights).astype(int)


def cluster_counts(
    distances: np.ndarray, thresholds: Sequence[float] = CUT_DISTANCES
) -> dict[str, int]:
    """The number of clusters of learned solutions under each documented rule.

    The paper reports a count without its rule, so the count is given under
    several, for the reader to see how much it depends on the choice:

    - ``"widest gap"``: :func:`cluster_solutions`'s rule (Ward linkage, cut in
      the widest gap between successive merge heights); Figure 5's count.
    - ``"average linkage at t"``, one per threshold: average linkage cut at
      the distance ``t`` (:func:`cluster_count_curve`).  Fixed thresholds use
      average linkage because its heights are mean distances between solutions,
      so ``t`` means the same thing for every algorithm and number of seeds.
    - ``"ward at t"``, one per threshold: the Ward dendrogram of Figure 5 cut
      at the height ``t``, for comparison.  Ward heights are not distances
      (they grow with group size), so the same ``t`` usually leaves more
      clusters here than under average linkage.

    Thresholds default to :data:`CUT_DISTANCES`.  Every count depends on the
    merge heights only, not on the order of the seeds.  One solution is one
    cluster under every rule; all-identical solutions are one cluster; two
    distinct solutions are two clusters at any threshold below their distance
    (the widest-gap rule, with no gap to read, says one).
    """
    thresholds = np.asarray(thresholds, np.float64)
    counts = {"widest gap": cluster_solutions(distances).count}
    for method in ("average", "ward"):
        curve = cluster_count_curve(distances, thresholds, method)
        prefix = "average linkage" if method == "average" else "ward"
        for threshold, count in zip(thresholds, curve, strict=True):
            counts[f"{prefix} at {threshold:g}"] = int(count)
    return counts


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


def relative_excess(arm: np.ndarray, against: np.ndarray) -> np.ndarray:
    """``(arm - against) / (arm + against)``, 0 where both are 0: from -1 to 1.

    The counts grow with the grid, so an arm that loses a steady share more
    than its pair has a raw excess that grows with size too; its relative
    excess stays put, so a trend in it is a change in the contrast itself
    (setting in, fading or turning), not in the grid's count of ties.
    """
    total = arm + against
    return np.divide(arm - against, total, out=np.zeros_like(total), where=total != 0)
