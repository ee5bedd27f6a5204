"""How many seeds a verdict rule needs before it can decide: power analysis.

A row of the paper against ours that is ``inconclusive`` or ``not testable
here`` should say what would decide it, not only that our run cannot.  Each
function here takes the effect and the spread *as measured* (the per-seed
numbers of our run) and returns the smallest number of seeds at which the
row's own rule (:mod:`nar_gap.analysis.verdicts`) reaches a decision with
probability :data:`POWER`, assuming the measured effect and spread are the
true ones.  That assumption is the usual planning one and is only as good as
the pilot: at 4 seeds a standard deviation is itself uncertain by a factor of
about two, so read the counts as orders of magnitude.

The rules and the approximations:

- a mean against a bound (``at_least``, ``near``): the two-sided t-interval at
  :data:`~nar_gap.analysis.stats.CONFIDENCE_LEVEL` must exclude the bound;
  power from the noncentral t distribution;
- two means (``higher``, ``not_worse``, ``no_difference``): Welch's test with
  equal seeds per arm, its degrees of freedom approximated by Welch-Satterthwaite
  at that n, power from the noncentral t;
- a correlation (``no_correlation``): Fisher's z, whose standard error is
  ``1 / sqrt(n - 3)``: the interval must fall inside the equivalence bounds
  (when the measured r is inside them) or beyond one (when it is outside);
- paired counts by a signed-rank test (``paired_fewer``): no formula, since
  counts like wrong outputs have no spread a t-test reads well (most seeds a
  handful, a few hundreds); the measured differences are resampled at each
  n, as the seeds to come would fall if they fell as these did, and each
  set is tested as ``paired_fewer`` tests it (exactly, up to
  :data:`EXACT_SIGNED_RANK_PAIRS` nonzero differences);
- a trend along ordered conditions by Page's test (``ordered_trend``): the
  measured blocks resampled the same way, each set tested by Page's exact
  permutation law (up to :data:`EXACT_TREND_BLOCKS` blocks).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from nar_gap.analysis.stats import (
    CONFIDENCE_LEVEL,
    page_p_rows,
    page_z,
    signed_rank_p_rows,
)

POWER = 0.8
"""The chance of a decision the counts are sized for (the planning convention)."""

MAX_SEEDS = 100_000
"""Counts above this are reported as out of reach (an effect of about zero)."""

MIN_SEEDS = 2

RESAMPLED_DRAWS = 400
"""Resampled seed sets per count tried: the power's standard error about 0.02."""

RESAMPLED_MAX_SEEDS = 4_096
"""The resampled counts stop here, out of reach (each try ranks draws x n)."""

EXACT_SIGNED_RANK_PAIRS = 64
"""Up to this many nonzero differences a resampled set is tested exactly.

The exact test of 400 sets of 64 takes about half a second
(:func:`~nar_gap.analysis.stats.signed_rank_p_rows`, O(pairs^3) each) and
grows as the cube.  Below it the normal approximation (ties accounted for,
zeros dropped) is not close: at a few nonzero pairs it passes sets the exact
test cannot (3 of 24, one-sided: 0.054 against 1/8).  Above it, measured on
6c's 25 undecided tests at ``studies``: testing to 128 pairs exactly moved
one seed count, by 3 (94 to 91), at about three times the time.
"""

EXACT_TREND_BLOCKS = 64
"""Up to this many blocks a resampled set is tested by Page's exact law.

:func:`~nar_gap.analysis.stats.page_p_rows`, for up to
:data:`EXACT_TREND_CONDITIONS` conditions: 400 sets of 64 blocks of 4 take
about half a second, of 128 about 2.5.  Measured on 6c's 16 trend tests with a
count (12 at ``cpu``, 4 at ``studies``): L's normal approximation at every
count gave the same counts but one, 12 where the exact law gives 10;
testing to 128 blocks exactly changed none.
"""

EXACT_TREND_CONDITIONS = 6
"""Past this many conditions the exact law's ``conditions!`` orders per block
cost more than they are worth: L's normal approximation instead."""


def _t_power(effect: float, spread: float, n: int, df: float, alpha: float) -> float:
    """The chance a noncentral t statistic beats its one-tailed critical value.

    Noncentrality ``effect / (spread / sqrt n)``: the tail the effect points to.
    """
    if spread <= 0:
        return 1.0 if effect > 0 else 0.0
    critical = stats.t.ppf(1 - alpha, df)
    return float(stats.nct.sf(critical, df, effect / spread * math.sqrt(n)))


def _smallest(power_at, low: int = MIN_SEEDS) -> int | None:
    """The smallest n >= low with power_at(n) >= POWER, or None past MAX_SEEDS.

    Bisection: power rises with n.
    """
    if power_at(MAX_SEEDS) < POWER:
        return None
    if power_at(low) >= POWER:
        return low
    return _bisect(power_at, low, MAX_SEEDS)


def _bisect(power_at: Callable[[int], float], low: int, high: int) -> int:
    """The smallest n in ``(low, high]`` reaching :data:`POWER` (``high`` does)."""
    while high - low > 1:
        middle = (low + high) // 2
        if power_at(middle) >= POWER:
            high = middle
        else:
            low = middle
    return high


def seeds_for_mean_vs_bound(
    mean: float, std: float, bound: float, level: float = CONFIDENCE_LEVEL
) -> int | None:
    """Seeds for the two-sided ``level`` t-interval of a mean to exclude ``bound``.

    ``std``: the sample standard deviation over seeds.  The distance
    ``|mean - bound|`` is the effect; None when it is zero or out of reach.
    """
    effect = abs(mean - bound)
    if not (math.isfinite(effect) and math.isfinite(std)) or effect == 0:
        return None
    alpha = (1 - level) / 2
    return _smallest(lambda n: _t_power(effect, std, n, n - 1, alpha))


def seeds_for_mean_in_band(
    mean: float, std: float, target: float, band: float, level: float = CONFIDENCE_LEVEL
) -> int | None:
    """Seeds for ``near``'s decision.

    The interval inside ``target ± band`` (when the mean is inside) or wholly
    outside it (when it is not).
    """
    edge = target + math.copysign(band, mean - target)
    return seeds_for_mean_vs_bound(mean, std, edge, level)


def seeds_per_arm_for_difference(
    difference: float,
    std_a: float,
    std_b: float,
    margin: float = 0.0,
    level: float = CONFIDENCE_LEVEL,
    one_sided: bool = True,
) -> int | None:
    """Seeds per arm for Welch's test of ``difference`` against ``margin``.

    ``higher``: margin 0, one-sided at 5 %.  ``not_worse``: margin
    ``-bound``; ``no_difference``: margin ``±bound``, the nearer, two-sided
    (the interval must clear it).  Equal seeds per arm.
    """
    effect = abs(difference - margin)
    if not all(map(math.isfinite, (effect, std_a, std_b))) or effect == 0:
        return None
    alpha = (1 - level) if one_sided else (1 - level) / 2
    variance = std_a**2 + std_b**2

    def power_at(n: int) -> float:
        if variance == 0:
            return 1.0
        df = variance**2 / ((std_a**4 + std_b**4) / (n - 1))
        return _t_power(effect, math.sqrt(variance), n, df, alpha)

    return _smallest(power_at)


def seeds_for_correlation(
    r: float, bound: float, level: float = CONFIDENCE_LEVEL
) -> int | None:
    """Seeds for ``no_correlation`` to decide, if the true r is the measured one.

    Inside the bounds: the Fisher-z interval within ``±bound`` on both sides
    (agree); outside: wholly beyond the nearer bound (disagree).  Fisher's z
    is normal with standard error ``1 / sqrt(n - 3)``.
    """
    if not math.isfinite(r) or abs(r) >= 1 or abs(r) == bound:
        return None
    centre, edge = math.atanh(r), math.atanh(bound)
    critical = stats.norm.ppf(0.5 + level / 2)

    def power_at(n: int) -> float:
        se = 1 / math.sqrt(n - 3)
        if abs(r) < bound:
            upper, lower = edge - critical * se, -edge + critical * se
            if upper <= lower:
                return 0.0
            return float(
                stats.norm.cdf((upper - centre) / se)
                - stats.norm.cdf((lower - centre) / se)
            )
        return float(stats.norm.sf((edge + critical * se - abs(centre)) / se))

    return _smallest(power_at, low=4)


def signed_rank_floor(significance: float) -> int:
    """The fewest pairs whose smallest two-sided signed-rank p passes ``significance``.

    All pairs one way give ``2 / 2**n`` (each way at half the level).
    """
    return math.floor(math.log2(2 / significance)) + 1


def seeds_for_signed_rank(
    differences: Sequence[float],
    significance: float,
    draws: int = RESAMPLED_DRAWS,
    seed: int = 0,
) -> int | None:
    """Seeds for a two-sided Wilcoxon signed-rank test of paired ``differences``.

    At each count ``n`` tried, ``draws`` sets of ``n`` differences are drawn
    with replacement from the measured ones and tested as the verdicts test
    them (:func:`signed_rank_two_sided`: exact up to
    :data:`EXACT_SIGNED_RANK_PAIRS` nonzero differences); the count is the
    smallest ``n`` whose share of p-values below ``significance`` reaches
    :data:`POWER`, never below :func:`signed_rank_floor`.  None where no
    difference is nonzero or :data:`RESAMPLED_MAX_SEEDS` do not reach it
    (about as many differences each way).  The same ``seed`` gives the same
    count.
    """
    d = np.asarray(differences, np.float64)
    d = d[np.isfinite(d)]
    if not np.any(d):
        return None

    def power_at(n: int) -> float:
        sample = np.random.default_rng([seed, n]).choice(d, size=(draws, n))
        return float(np.mean(signed_rank_two_sided(sample) < significance))

    return _resampled_count(power_at, signed_rank_floor(significance))


def signed_rank_two_sided(samples: np.ndarray) -> np.ndarray:
    """The two-sided signed-rank p of each row of ``samples`` (``[sets, n]``).

    Twice the smaller one-sided p, as ``paired_fewer`` decides (each side at
    half the level).  Rows of at most :data:`EXACT_SIGNED_RANK_PAIRS`
    nonzero differences: exact
    (:func:`~nar_gap.analysis.stats.signed_rank_p_rows`); longer ones: the
    normal approximation with ties accounted for.  1 where none is nonzero.
    """
    samples = np.asarray(samples, np.float64)
    p = np.ones(samples.shape[0])
    nonzero = np.count_nonzero(samples, axis=-1)
    exact = (nonzero > 0) & (nonzero <= EXACT_SIGNED_RANK_PAIRS)
    if np.any(exact):
        p[exact] = np.minimum(1.0, 2 * np.minimum(*signed_rank_p_rows(samples[exact])))
    longer = nonzero > EXACT_SIGNED_RANK_PAIRS
    if np.any(longer):
        with warnings.catch_warnings():  # a set of zeros only has no p-value
            warnings.simplefilter("ignore", RuntimeWarning)
            found = stats.wilcoxon(samples[longer], axis=-1, method="asymptotic")
        p[longer] = np.nan_to_num(found.pvalue, nan=1.0)
    return p


def _resampled_count(power_at: Callable[[int], float], floor: int) -> int | None:
    """The smallest n >= ``floor`` reaching :data:`POWER`, or None past the cap.

    Doubling from ``floor`` (a large effect is found in a few tries of
    resampled draws), then :func:`_bisect`; past :data:`RESAMPLED_MAX_SEEDS`,
    None.
    """
    low = high = floor
    while power_at(high) < POWER:
        if high >= RESAMPLED_MAX_SEEDS:
            return None
        low, high = high, min(2 * high, RESAMPLED_MAX_SEEDS)
    return _bisect(power_at, low, high)


def trend_floor(conditions: int, significance: float) -> int:
    """The fewest blocks whose smallest two-sided Page's-test p passes ``significance``.

    Every block in the order, nothing tied: one in ``conditions!`` orders
    each, ``2 / conditions!**n`` (each way at half the level).
    """
    return (
        math.floor(math.log(2 / significance) / math.log(math.factorial(conditions)))
        + 1
    )


def seeds_for_trend(
    blocks: np.ndarray,
    significance: float,
    draws: int = RESAMPLED_DRAWS,
    seed: int = 0,
) -> int | None:
    """Blocks (seeds) for a two-sided Page's test of a trend in ``blocks``.

    ``blocks``: ``[blocks, conditions]``, as
    :func:`~nar_gap.analysis.stats.page_trend` takes them.  At each count
    ``n`` tried, ``draws`` sets of ``n`` blocks are drawn with replacement
    from the measured ones and each is tested as ``ordered_trend`` tests it
    (:func:`trend_two_sided`: exact up to :data:`EXACT_TREND_BLOCKS`
    blocks, where the permutation test itself draws thousands of
    permutations per set); the count is the smallest
    ``n`` whose share of p-values below ``significance`` reaches
    :data:`POWER`, never below :func:`trend_floor`.  None where no block
    varies along the conditions or :data:`RESAMPLED_MAX_SEEDS` do not reach
    it.  The same ``seed`` gives the same count.
    """
    b = np.asarray(blocks, np.float64)
    b = b[np.all(np.isfinite(b), axis=-1)]
    if b.shape[0] == 0 or not np.any(np.ptp(b, axis=-1)):
        return None

    def power_at(n: int) -> float:
        chosen = np.random.default_rng([seed, n]).integers(b.shape[0], size=(draws, n))
        return float(np.mean(trend_two_sided(b[chosen]) < significance))

    return _resampled_count(power_at, trend_floor(b.shape[-1], significance))


def trend_two_sided(samples: np.ndarray) -> np.ndarray:
    """The two-sided Page's-test p of each ``[sets, blocks, conditions]`` set.

    Twice the smaller side, as ``ordered_trend`` decides.  Sets of at most
    :data:`EXACT_TREND_BLOCKS` blocks of at most
    :data:`EXACT_TREND_CONDITIONS` conditions: the exact permutation law
    (:func:`~nar_gap.analysis.stats.page_p_rows`), which ``ordered_trend``'s
    permutations estimate; larger ones: L's normal approximation, ties
    accounted for (:func:`~nar_gap.analysis.stats.page_z`).  1 where no
    block varies.
    """
    samples = np.asarray(samples, np.float64)
    blocks, conditions = samples.shape[-2:]
    if blocks <= EXACT_TREND_BLOCKS and conditions <= EXACT_TREND_CONDITIONS:
        p = 2 * np.minimum(*page_p_rows(samples))
    else:
        p = 2 * stats.norm.sf(np.abs(page_z(samples)))
    return np.minimum(1.0, np.nan_to_num(p, nan=1.0))
