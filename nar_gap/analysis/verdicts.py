"""Decision rules that turn the paper's words into tests on our numbers.

Each rule is a small pure function on numbers or arrays that returns a
:class:`Judgement`: one of four verdicts and the evidence behind it (the
test, n, and the p-value or interval).  :mod:`nar_gap.paper.report.rules`
reads the results files and calls these; nothing here reads a file.

The verdicts:

- ``agree``: the test supports the paper's claim;
- ``disagree``: the test contradicts it;
- ``inconclusive``: our numbers can neither support nor contradict it (an
  interval straddles a bound, a p-value is above 5 % either way);
- ``not testable here``: our run has not reached the paper's regime (too few
  seeds, a model not trained to its plateau, minima of different network
  classes) or a results file or column is absent.

Why these rules and not the first check that comes to mind:

- *"No correlation"* is an equivalence claim.  ``p >= 0.05`` would reward a
  small n (too few seeds to see anything reads as "no correlation"), so the
  bootstrap interval of r has to lie inside ±:data:`EQUIVALENCE_BOUND`.
- *"Higher"* is a one-sided Welch t-test across seeds, not a bare difference
  of means, which noise alone makes positive half the time.
- *"At least"* and *"near"* a value use the 95 % t-interval of the mean over
  seeds: agree only if the whole interval satisfies the claim, disagree only
  if none of it does.
- Every rule can return ``disagree``: a check that cannot fail is no check.

Tables report the population standard deviation over seeds (``np.std``, the
paper's ``mean ± std (max)`` cell); the t-based rules convert it to the sample
standard deviation (``* sqrt(n / (n - 1))``) before use.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

from nar_gap.analysis import power
from nar_gap.analysis.stats import (
    CONFIDENCE_LEVEL,
    MIN_SEEDS_FOR_P,
    RESAMPLES,
    Summary,
    finite_summary,
    nan_mean,
    page_trend,
    signed_rank_p,
)

AGREE = "agree"
DISAGREE = "disagree"
INCONCLUSIVE = "inconclusive"
NOT_TESTABLE = "not testable here"
VERDICTS = (AGREE, DISAGREE, INCONCLUSIVE, NOT_TESTABLE)

SIGNIFICANCE = 0.05
"""A one-sided p-value below this supports a directional claim."""

EQUIVALENCE_BOUND = 0.3
"""|r| below this is "no correlation".

|r| < 0.3 is a "small" effect by Cohen's convention.  A 95 % interval of r
around 0 is about ±0.35 wide over 32 seeds and ±0.5 over 16 (Fisher's z), so
at the cpu profile's seed counts such a claim can at best be inconclusive;
the paper profile's 128 seeds give about ±0.17, narrow enough to agree.
"""

NEAR_BAND = 0.05
"""A mean is "near" a value when its whole t-interval lies within this of it
(five percentage points of test score)."""

PLATEAU_TOLERANCE = 0.005
"""A training run is at its plateau when the seed-mean validation score would
move by at most this over the last quarter of its steps (:func:`plateau`):
half a percentage point, a tenth of :data:`NEAR_BAND`, so that what training
longer would still add cannot move a "near" verdict.  (With 0.01, Bellman-Ford
was accepted at 800 steps by a hair while its validation rose steadily,
+0.006 per 200 steps, through step 1 000.)"""

PLATEAU_FRACTION = 0.75
"""Where the last quarter of training starts, as a fraction of the last step."""

PLATEAU_WINDOW = 0.5
"""The plateau's slope is fitted over the evaluations in this last share of
training: several evaluations, not two."""

PLATEAU_MIN_POINTS = 4
"""Fewest evaluations in that window for a slope test (2 residual degrees of
freedom)."""

DIFFERENCE_BOUND = 0.02
"""Two variants' mean scores "do not differ" when the 95 % Welch interval of
their difference lies inside ±this (two percentage points: our choice, stated
in every row that uses it; the paper states no margin)."""

INSTABILITY_DROP = 0.01
"""A fall of accuracy counts when it exceeds this fraction of the start."""

MIN_ORDERS_FOR_TEST = 3
"""Fewest data orders (seeds) for a t-test across them; below it every order
must show the fall."""

DEGRADE_BOUND = 0.01
"""A trace hint "does not degrade" where its fall from the first bin to the
last is shown below this (one percentage point of trace match, a one-sided
paired Wilcoxon test of the falls against it): our choice, stated in the
row's evidence; the paper gives no size."""

SATURATED = 0.999
"""A trace hint whose seed-mean match is at least this in every bin cannot
degrade measurably: it is left out of the degradation test."""

FAITHFUL_INTERNAL = 0.05
"""A model "executes the compiled mechanism" at most this internal distance
(Eq. 24) from the compiled attention, with :data:`FAITHFUL_AGREEMENT` and
:data:`FAITHFUL_ACCURACY` (the closing-the-gap issue's bar, notebook 07)."""

FAITHFUL_AGREEMENT = 0.99
"""Fewest argmax agreements with the compiled attention of a faithful model."""

FAITHFUL_ACCURACY = 0.99
"""Lowest test accuracy of a faithful model: faithful and still solving the task."""

FAITHFUL_ATTENTION = (
    f"internal <= {FAITHFUL_INTERNAL:g}, argmax agreement >= {FAITHFUL_AGREEMENT:g}"
)
"""The attention half of the bar, as every verdict sentence states it."""

SILHOUETTE_STRUCTURE = 0.5
"""Silhouette at or above which clusters are "reasonable structure"
(Kaufman & Rousseeuw, *Finding Groups in Data*, 1990)."""

SILHOUETTE_NONE = 0.25
"""Silhouette below which there is "no substantial structure" (ibid.)."""

MIN_SEEDS_FOR_CLUSTERS = 10
"""Fewest seeds for which a clustering of solutions is judged at all."""


@dataclasses.dataclass(frozen=True)
class Judgement:
    """A verdict and the evidence behind it (test, n, p or interval).

    ``seeds_needed``: for an undecided verdict, the seeds (per arm, for two
    arms) at which this rule decides with 80 % power if the effect and spread
    it measured are the true ones (:mod:`nar_gap.analysis.power`); None where
    decided, or where no count of seeds would decide (no effect, or a rule
    with no sampling model: then the evidence says what would).
    """

    verdict: str
    evidence: str
    seeds_needed: int | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; one of {VERDICTS}")


def bonferroni_level(tests: int, level: float = CONFIDENCE_LEVEL) -> float:
    """The confidence level of each of ``tests`` intervals that must hold together.

    Bonferroni: the chance that any of them misses stays below ``1 - level``.
    """
    return 1 - (1 - level) / max(1, tests)


def is_faithful(row: Mapping[str, Any]) -> bool:
    """The bar on one row's measures: internal, argmax agreement and accuracy."""
    return (
        row["internal"] <= FAITHFUL_INTERNAL
        and row["argmax_agreement"] >= FAITHFUL_AGREEMENT
        and row["accuracy"] >= FAITHFUL_ACCURACY
    )


def decide(agree: bool, disagree: bool, evidence: str) -> Judgement:
    """The last step of every rule: agree, else disagree, else inconclusive.

    ``agree`` is tested first: where both tests can hold (an interval inside
    :func:`no_difference`'s bounds that still excludes 0) equivalence wins,
    as each rule's docstring says.
    """
    if agree:
        return Judgement(AGREE, evidence)
    if disagree:
        return Judgement(DISAGREE, evidence)
    return Judgement(INCONCLUSIVE, evidence)


def _sized(judged: Judgement, count: int | None) -> Judgement:
    """``judged`` with ``seeds_needed`` set, when it is undecided."""
    if judged.verdict in (AGREE, DISAGREE):
        return judged
    return dataclasses.replace(judged, seeds_needed=count)


def _pct(level: float) -> str:
    return f"{100 * level:.0f}%"


def _p(p: float) -> str:
    if math.isnan(p):
        return "p undefined"
    return f"p = {p:.2g}" if p >= 1e-4 else "p < 1e-4"


def _interval(low: float, high: float, signed: bool = False) -> str:
    if signed:
        return f"[{low:+.3f}, {high:+.3f}]"
    return f"[{low:.3f}, {high:.3f}]"


# --------------------------------------------------------------------------- #
# Correlations (Table 1).
# --------------------------------------------------------------------------- #


def no_correlation(
    r: float, low: float, high: float, n: int, bound: float = EQUIVALENCE_BOUND
) -> Judgement:
    """No correlation, as equivalence: the interval of r inside ±``bound``.

    ``low, high``: the bootstrap interval of Pearson's r
    (:func:`nar_gap.analysis.stats.bootstrap_interval`).  Agree if it lies
    inside ±bound, disagree if it lies wholly beyond one bound (a correlation
    of at least that size is shown), inconclusive otherwise.  Not testable
    below :data:`~nar_gap.analysis.stats.MIN_SEEDS_FOR_P` seeds or without r.
    """
    bounds = f"equivalence bounds ±{bound:.2f}"
    if n < MIN_SEEDS_FOR_P or not math.isfinite(r):
        return Judgement(
            NOT_TESTABLE,
            f"r = {r:+.3f} with n = {n} seeds; needs at least "
            f"{MIN_SEEDS_FOR_P} seeds and a defined r",
        )
    if not (math.isfinite(low) and math.isfinite(high)):
        return Judgement(
            NOT_TESTABLE, f"r = {r:+.3f}, n = {n} seeds, but no bootstrap interval"
        )
    evidence = (
        f"bootstrap {_pct(CONFIDENCE_LEVEL)} CI of Pearson r "
        f"[{low:+.2f}, {high:+.2f}], n = {n} seeds; {bounds}"
    )
    judged = decide(
        -bound < low and high < bound, low > bound or high < -bound, evidence
    )
    return _sized(judged, power.seeds_for_correlation(r, bound))


# --------------------------------------------------------------------------- #
# Means over seeds (Tables 10-15, 17).
# --------------------------------------------------------------------------- #


UNBOUNDED = (-math.inf, math.inf)
UNIT = (0.0, 1.0)
"""The range of a share: an accuracy, Eq. 24's normalised distance, argmax
agreement, Eq. 25's trace match, a leak of attention."""
DIFFERENCE_OF_UNITS = (-1.0, 1.0)
"""The range of a difference of two shares."""
NONNEGATIVE = (0.0, math.inf)
"""The range of a norm or a ratio of norms (a parameter drift)."""
MEASURE_RANGES = {m: UNIT for m in ("accuracy", "internal", "argmax_agreement")}
"""The range of each measure a study names by these names (a test score and
the attention measures of :mod:`nar_gap.analysis.faithfulness`); any other,
such as sharpness, a rise of the loss, is unbounded."""


def measure_range(measure: str, difference: bool = False) -> tuple[float, float]:
    """``measure``'s range (:data:`MEASURE_RANGES`), or a paired difference's."""
    low, high = MEASURE_RANGES.get(measure, UNBOUNDED)
    return (low - high, high - low) if difference else (low, high)


def t_interval(
    summary: Summary,
    level: float = CONFIDENCE_LEVEL,
    within: tuple[float, float] = UNBOUNDED,
) -> tuple[float, float]:
    """The t-interval of a mean over seeds, cut to ``within`` (NaN below two seeds).

    A mean of values in ``within`` lies in it, so the cut interval still
    holds every mean the whole one held: its coverage stays at least
    ``level``.  Uncut, a t-interval over few seeds near a bound passes it
    (an accuracy's upper end above 1, a distance's lower end below 0).
    """
    if summary.n < 2 or not math.isfinite(summary.mean):
        return math.nan, math.nan
    half = stats.t.ppf(0.5 + level / 2, summary.n - 1) * (
        summary.sample_std / math.sqrt(summary.n)
    )
    low, high = within
    return max(summary.mean - half, low), min(summary.mean + half, high)


def spread_summary(
    values: Sequence[float] | np.ndarray, within: tuple[float, float] = UNBOUNDED
) -> dict[str, float]:
    """Mean with its :func:`t_interval` (cut to ``within``) and the five-number summary.

    For a distribution over seeds shown whole, not as a count on one side
    of a threshold: ``mean``, ``low``, ``high``, ``min``, ``q1``,
    ``median``, ``q3``, ``max``.
    """
    array = np.asarray(values, np.float64)
    summary = Summary.of(array)
    low, high = t_interval(summary, within=within)
    q = np.quantile(array, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {
        "mean": summary.mean,
        "low": float(low),
        "high": float(high),
        **dict(zip(("min", "q1", "median", "q3", "max"), map(float, q), strict=True)),
    }


def _too_few(summary: Summary) -> Judgement | None:
    if summary.n < 2 or not math.isfinite(summary.mean):
        return Judgement(
            NOT_TESTABLE,
            f"mean {summary.mean:.3f} over n = {summary.n} seeds: "
            "an interval needs at least 2",
        )
    return None


def at_least(summary: Summary, threshold: float) -> Judgement:
    """A mean "at least" ``threshold``: judged on the mean's t-interval.

    Agree if the interval's lower bound reaches the threshold, disagree if
    its upper bound stays below, inconclusive otherwise.
    """
    if (few := _too_few(summary)) is not None:
        return few
    low, high = t_interval(summary)
    evidence = (
        f"{_pct(CONFIDENCE_LEVEL)} t-interval of the mean {_interval(low, high)}, "
        f"n = {summary.n} seeds; threshold {threshold:.3f}"
    )
    judged = decide(low >= threshold, high < threshold, evidence)
    count = power.seeds_for_mean_vs_bound(summary.mean, summary.sample_std, threshold)
    return _sized(judged, count)


def near(summary: Summary, target: float, band: float = NEAR_BAND) -> Judgement:
    """A mean "near" ``target``: the t-interval inside ``target ± band``.

    Disagree if the interval lies wholly outside the band, inconclusive if it
    overlaps it only partly.
    """
    if (few := _too_few(summary)) is not None:
        return few
    low, high = t_interval(summary)
    evidence = (
        f"{_pct(CONFIDENCE_LEVEL)} t-interval of the mean {_interval(low, high)}, "
        f"n = {summary.n} seeds; band {target:.2f} ± {band:.2f}"
    )
    judged = decide(
        target - band <= low and high <= target + band,
        high < target - band or low > target + band,
        evidence,
    )
    count = power.seeds_for_mean_in_band(summary.mean, summary.sample_std, target, band)
    return _sized(judged, count)


def seed_means(
    evaluations: Iterable[tuple[int, float]],
) -> tuple[list[int], list[float]]:
    """The evaluation steps, in order, and the mean score over seeds at each.

    ``evaluations``: one ``(step, score)`` per seed and evaluation, as a
    validation history holds them; :func:`plateau` reads its curve so.
    """
    by_step: dict[int, list[float]] = {}
    for step, score in evaluations:
        by_step.setdefault(int(step), []).append(float(score))
    steps = sorted(by_step)
    return steps, [float(np.mean(by_step[s])) for s in steps]


def plateau(
    steps: Sequence[int],
    means: Sequence[float],
    tolerance: float = PLATEAU_TOLERANCE,
    fraction: float = PLATEAU_FRACTION,
) -> tuple[bool, str]:
    """Whether a run has reached its plateau, and the numbers that say so.

    ``steps, means``: the evaluation steps and the seed-mean validation score
    at each.  A slope test over every evaluation in the last
    :data:`PLATEAU_WINDOW` of training (at least :data:`PLATEAU_MIN_POINTS`):
    the least-squares slope, projected over the last ``1 - fraction`` of the
    steps, is how much validation would still move there; the run is at its
    plateau when the 95 % t-interval of that projected change (from the
    regression's residuals, ``points - 2`` degrees of freedom) lies inside
    ``±tolerance``.  One difference between two evaluations (the rule this
    replaced) accepted Bellman-Ford at 400 steps while its validation still
    rose through step 1 000: noise between two points hid a steady climb.  A
    claim about a trained model's score (87 % for Bellman-Ford) says nothing
    about a run still climbing; too few evaluations cannot show a plateau.
    """
    order = np.argsort(np.asarray(steps))
    x = np.asarray([float(steps[i]) for i in order])
    y = np.asarray([float(means[i]) for i in order])
    if x.size == 0:
        return False, "no validation evaluation"
    window = x >= (1 - PLATEAU_WINDOW) * x[-1]
    points = int(window.sum())
    if points < PLATEAU_MIN_POINTS:
        return False, (
            f"{points} validation evaluation(s) in the last "
            f"{PLATEAU_WINDOW:.0%} of {int(x[-1])} steps: a slope test needs "
            f"{PLATEAU_MIN_POINTS}"
        )
    slope, stderr = _slope(x[window], y[window])
    span = (1 - fraction) * x[-1]
    change = slope * span
    half = stats.t.ppf(0.975, points - 2) * stderr * span
    low, high = change - half, change + half
    reached = bool(-tolerance <= low and high <= tolerance)
    return reached, (
        f"seed-mean validation {y[-1]:.3f} at step {int(x[-1])}; slope over "
        f"{points} evaluations from step {int(x[window][0])} projects "
        f"{change:+.3f} over the last {int(span)} steps, 95% CI "
        f"{_interval(low, high, signed=True)} (plateau: inside ±{tolerance:.3f})"
    )


def plateau_horizons(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per evaluation step T: would a run of T steps be at its plateau?

    ``history``: a run's validation rows (``step``, ``val_score``, one per
    seed and evaluation); :func:`plateau` on the seed-mean curve up to T.
    The last row is the whole run's answer.
    """
    steps, means = seed_means((r["step"], r["val_score"]) for r in history)
    rows = []
    for k, step in enumerate(steps):
        reached, evidence = plateau(steps[: k + 1], means[: k + 1])
        rows.append(
            {
                "steps": step,
                "seed_mean_val": means[k],
                "at_plateau": reached,
                "evidence": evidence,
            }
        )
    return rows


def first_plateau(rows: Sequence[dict[str, Any]]) -> int | None:
    """The shortest horizon from which every longer one is at its plateau."""
    found = None
    for row in reversed(rows):
        if not row["at_plateau"]:
            break
        found = int(row["steps"])
    return found


def _slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and its standard error.

    The error is 0 for a perfect line, where :func:`scipy.stats.linregress`
    gives NaN.
    """
    dx = x - x.mean()
    sxx = float(dx @ dx)
    slope = float(dx @ (y - y.mean())) / sxx
    residuals = y - y.mean() - slope * dx
    return slope, math.sqrt(float(residuals @ residuals) / (x.size - 2) / sxx)


def _welch_from_stats(a: Summary, b: Summary) -> tuple[float, float, float]:
    """Welch's t, its two-sided p and its degrees of freedom (a minus b)."""
    result = stats.ttest_ind_from_stats(
        a.mean, a.sample_std, a.n, b.mean, b.sample_std, b.n, equal_var=False
    )
    va, vb = a.sample_std**2 / a.n, b.sample_std**2 / b.n
    df = (va + vb) ** 2 / (va**2 / (a.n - 1) + vb**2 / (b.n - 1)) if va + vb else 1
    return float(result.statistic), float(result.pvalue), float(df)


def _directional(t: float, p_two: float) -> tuple[float, float]:
    """One-sided p-values (greater, less) from a two-sided t-test's t and p."""
    if not math.isfinite(t):
        return math.nan, math.nan
    greater = p_two / 2 if t > 0 else 1 - p_two / 2
    return greater, 1 - greater


def _judge_higher(p_higher: float, p_lower: float, evidence: str) -> Judgement:
    return decide(p_higher < SIGNIFICANCE, p_lower < SIGNIFICANCE, evidence)


def higher(claimed_higher: Sequence[float], other: Sequence[float]) -> Judgement:
    """``claimed_higher``'s per-seed scores above ``other``'s: Welch, one-sided.

    :func:`scipy.stats.ttest_ind` with ``equal_var=False``.  Agree if
    p < 0.05 in the claimed direction, disagree if p < 0.05 in the opposite
    one, inconclusive otherwise.
    """
    a = np.asarray(claimed_higher, np.float64)
    b = np.asarray(other, np.float64)
    if min(a.size, b.size) < 2:
        return Judgement(
            NOT_TESTABLE, f"n = {a.size} and {b.size} seeds: need at least 2 each"
        )
    if a.std() == 0 and b.std() == 0:
        return _higher_without_spread(a, b)
    with warnings.catch_warnings():
        # One group constant (every seed 1.0, say): its variance is exactly 0
        # and Welch's t takes its spread from the other group; scipy's
        # moment check still warns of "precision loss" on the constant one.
        warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
        up = float(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)
        down = float(stats.ttest_ind(a, b, equal_var=False, alternative="less").pvalue)
    evidence = (
        f"one-sided Welch t-test on per-seed scores, difference of means "
        f"{a.mean() - b.mean():+.3f}, n = {a.size} and {b.size} seeds, "
        f"{_p(up)} (higher), {_p(down)} (lower)"
    )
    count = power.seeds_per_arm_for_difference(
        a.mean() - b.mean(), a.std(ddof=1), b.std(ddof=1)
    )
    return _sized(_judge_higher(up, down, evidence), count)


def _higher_without_spread(a: np.ndarray, b: np.ndarray) -> Judgement:
    """Two groups each constant across seeds: Welch's t is undefined.

    (scipy returns nan or inf with a precision-loss warning.)  Equal
    constants are no evidence either way; unequal ones are judged by the
    exact one-sided Mann-Whitney test, whose p for complete separation is
    ``1 / C(n_a + n_b, n_a)`` (0.05 for 3 seeds against 3: not below it).
    """
    if a[0] == b[0]:
        return Judgement(
            INCONCLUSIVE,
            f"every seed scores {a[0]:.3f} in both groups: no difference and "
            f"no spread to test, n = {a.size} and {b.size} seeds",
        )
    up, down = _rank_sum_p(a, b, "greater"), _rank_sum_p(a, b, "less")
    evidence = (
        f"every seed scores {a[0]:.3f} against {b[0]:.3f} (no spread: exact "
        f"one-sided Mann-Whitney), n = {a.size} and {b.size} seeds, "
        f"{_p(up)} (higher), {_p(down)} (lower)"
    )
    return _judge_higher(up, down, evidence)


def _rank_sum_p(a: np.ndarray, b: np.ndarray, alternative: str) -> float:
    """Exact one-sided Mann-Whitney p of ``a`` against ``b`` (``alternative``)."""
    return float(
        stats.mannwhitneyu(a, b, alternative=alternative, method="exact").pvalue
    )


def higher_from_stats(claimed_higher: Summary, other: Summary) -> Judgement:
    """:func:`higher` from a table's mean, std and seeds.

    :func:`scipy.stats.ttest_ind_from_stats`, for tables that keep no
    per-seed scores.
    """
    if min(claimed_higher.n, other.n) < 2:
        return Judgement(
            NOT_TESTABLE,
            f"n = {claimed_higher.n} and {other.n} seeds: need at least 2 each",
        )
    t, p, _ = _welch_from_stats(claimed_higher, other)
    up, down = _directional(t, p)
    evidence = (
        f"one-sided Welch t-test from mean, std and seeds, difference of means "
        f"{claimed_higher.mean - other.mean:+.3f}, n = {claimed_higher.n} and "
        f"{other.n} seeds, {_p(up)} (higher), {_p(down)} (lower)"
    )
    count = power.seeds_per_arm_for_difference(
        claimed_higher.mean - other.mean,
        claimed_higher.sample_std,
        other.sample_std,
    )
    return _sized(_judge_higher(up, down, evidence), count)


def difference_interval(
    a: Summary, b: Summary, level: float = CONFIDENCE_LEVEL
) -> tuple[float, float]:
    """Welch's t-interval of ``a.mean - b.mean``."""
    _, _, df = _welch_from_stats(a, b)
    se = math.sqrt(a.sample_std**2 / a.n + b.sample_std**2 / b.n)
    half = stats.t.ppf(0.5 + level / 2, df) * se
    difference = a.mean - b.mean
    return difference - half, difference + half


def no_difference(a: Summary, b: Summary, bound: float = DIFFERENCE_BOUND) -> Judgement:
    """No significant difference, as equivalence of two means.

    Agree if the Welch interval of the difference lies inside ±``bound``
    (even if it excludes 0: a difference that small is no difference);
    disagree if it excludes 0 otherwise (the difference the paper did not
    see is significant and may exceed the bound); inconclusive otherwise.
    "p >= 0.05" alone would reward few seeds.
    """
    if min(a.n, b.n) < 2:
        return Judgement(NOT_TESTABLE, f"n = {a.n} and {b.n} seeds: need 2 each")
    low, high = difference_interval(a, b)
    evidence = (
        f"{_pct(CONFIDENCE_LEVEL)} Welch interval of the difference "
        f"{_interval(low, high)}, n = {a.n} and {b.n} seeds; "
        f"equivalence bounds ±{bound:.2f}"
    )
    judged = decide(-bound < low and high < bound, low > 0 or high < 0, evidence)
    difference = a.mean - b.mean
    margin = 0.0 if abs(difference) > bound else math.copysign(bound, difference)
    count = power.seeds_per_arm_for_difference(
        difference, a.sample_std, b.sample_std, margin, one_sided=False
    )
    return _sized(judged, count)


def not_worse(
    modified: Summary, unmodified: Summary, margin: float = DIFFERENCE_BOUND
) -> Judgement:
    """At least as capable: non-inferiority of ``modified`` by ``margin``.

    Agree if the Welch interval of ``modified - unmodified`` lies above
    ``-margin``; disagree if it lies wholly below ``-margin`` (worse by more
    than the margin); inconclusive otherwise.
    """
    if min(modified.n, unmodified.n) < 2:
        return Judgement(
            NOT_TESTABLE, f"n = {modified.n} and {unmodified.n} seeds: need 2 each"
        )
    low, high = difference_interval(modified, unmodified)
    evidence = (
        f"{_pct(CONFIDENCE_LEVEL)} Welch interval of modified minus unmodified "
        f"{_interval(low, high)}, n = {modified.n} and {unmodified.n} seeds; "
        f"non-inferiority margin {margin:.2f}"
    )
    judged = decide(low > -margin, high < -margin, evidence)
    count = power.seeds_per_arm_for_difference(
        modified.mean - unmodified.mean,
        modified.sample_std,
        unmodified.sample_std,
        -margin,
        one_sided=False,
    )
    return _sized(judged, count)


def _paired(differences: Sequence[float]) -> tuple[np.ndarray, Judgement | None]:
    d = np.asarray(differences, np.float64)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return d, Judgement(NOT_TESTABLE, f"n = {d.size} paired seeds: need 2")
    return d, None


def paired_by_seed(a: Mapping[int, float], b: Mapping[int, float]) -> np.ndarray:
    """``a - b`` on every seed both arms have, in seed order.

    ``a``, ``b``: one arm's score per seed.  Two arms trained from the same
    seeds share initialisation and data order, so their per-seed difference
    is what :func:`paired_higher` and :func:`paired_side` test.
    """
    shared = sorted(set(a) & set(b))
    return np.asarray([a[s] - b[s] for s in shared], np.float64)


def paired_interval(
    differences: np.ndarray, level: float = CONFIDENCE_LEVEL
) -> tuple[float, float]:
    """The t-interval of the mean of per-seed paired differences."""
    return t_interval(Summary.of(differences), level)


def paired_no_difference(
    differences: Sequence[float], bound: float = DIFFERENCE_BOUND
) -> Judgement:
    """:func:`no_difference` for arms paired by seed: a paired t-interval.

    ``differences``: per seed, arm A's score minus arm B's, the two trained
    from the same seed (initialisation and data order).  Pairing removes the
    seed's own luck from the comparison, which Welch's test on two summaries
    counts twice.  Agree if the interval lies inside ±``bound``, disagree if
    it excludes 0 otherwise, inconclusive otherwise.
    """
    d, few = _paired(differences)
    if few is not None:
        return few
    low, high = paired_interval(d)
    evidence = (
        f"{_pct(CONFIDENCE_LEVEL)} paired t-interval of the per-seed difference "
        f"{_interval(low, high, signed=True)}, n = {d.size} seeds; equivalence "
        f"bounds ±{bound:.2f}"
    )
    judged = decide(-bound < low and high < bound, low > 0 or high < 0, evidence)
    mean, spread = float(d.mean()), float(d.std(ddof=1))
    edge = 0.0 if abs(mean) > bound else math.copysign(bound, mean)
    return _sized(judged, power.seeds_for_mean_vs_bound(mean, spread, edge))


def paired_side(
    differences: np.ndarray, level: float, band: float, negligible_first: bool = False
) -> tuple[str, int | None]:
    """Which side per-seed paired differences lie on, and the seeds to decide.

    On the t-interval at ``level``: ``better`` (above 0), ``worse`` (below),
    ``the same`` (inside ``±band``) or ``undecided``; and, for the last, the
    seeds at which the interval would exclude 0 with :data:`~nar_gap.analysis.
    power.POWER` were the measured effect the true one (None where decided,
    with no effect, or below two seeds).  ``negligible_first``: an interval
    inside ``±band`` is ``the same`` even where it excludes 0 (a difference
    every seed shares but too small to matter).
    """
    d = np.asarray(differences, np.float64)
    low, high = paired_interval(d, level)
    if negligible_first and -band <= low and high <= band:
        return "the same", None
    if low > 0 or high < 0:
        return ("better" if low > 0 else "worse"), None
    if -band <= low and high <= band:
        return "the same", None
    if d.size < 2:
        return "undecided", None
    mean, spread = float(d.mean()), float(d.std(ddof=1))
    return "undecided", power.seeds_for_mean_vs_bound(mean, spread, 0.0, level)


def paired_higher(differences: Sequence[float]) -> Judgement:
    """:func:`higher` for arms paired by seed: a one-sided paired t-test.

    ``differences``: per seed, the claimed-higher arm's score minus the other's.
    """
    d, few = _paired(differences)
    if few is not None:
        return few
    if np.all(d == 0):
        return Judgement(
            INCONCLUSIVE,
            f"every one of n = {d.size} paired seeds scores the same in both arms",
        )
    up = float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
    down = float(stats.ttest_1samp(d, 0.0, alternative="less").pvalue)
    evidence = (
        f"one-sided paired t-test, mean per-seed difference {d.mean():+.4f}, "
        f"n = {d.size} seeds, {_p(up)} (higher), {_p(down)} (lower)"
    )
    return _sized(_judge_higher(up, down, evidence), _paired_count(d, wilcoxon=False))


def struggles(
    weak: Summary, others: Mapping[str, Summary], ceiling: float = 0.5
) -> Judgement:
    """One algorithm "struggles significantly" next to the others.

    Agree if the weak one's t-interval lies below ``ceiling`` and below every
    other's interval (their lower bounds); disagree if its interval lies
    above ``ceiling`` or above some other's interval (it is shown not to be
    the weak one); inconclusive otherwise (overlaps).  0.5 is our reading of
    "struggles": wrong on at least half of the predictions.
    """
    everyone = {"weak": weak, **others}
    few = [s for s in everyone.values() if s.n < 2 or not math.isfinite(s.mean)]
    if few:
        return Judgement(
            NOT_TESTABLE, "an interval needs at least 2 seeds per algorithm"
        )
    low, high = t_interval(weak)
    intervals = {name: t_interval(s) for name, s in others.items()}
    evidence = (
        f"{_pct(CONFIDENCE_LEVEL)} t-intervals of the mean: struggling one "
        f"{_interval(low, high)} (n = {weak.n}), "
        + ", ".join(
            f"{name} {_interval(*iv)} (n = {others[name].n})"
            for name, iv in intervals.items()
        )
        + f"; ceiling {ceiling:.2f}"
    )
    return decide(
        high < ceiling and all(high < iv[0] for iv in intervals.values()),
        low > ceiling or any(low > iv[1] for iv in intervals.values()),
        evidence,
    )


# --------------------------------------------------------------------------- #
# Faithfulness (Section 4).
# --------------------------------------------------------------------------- #


def none_closer(
    internal: Sequence[float], reference: float, reference_name: str
) -> Judgement:
    """No learned seed closer to the compiled attention than a trivial one.

    ``reference``: the smallest internal distance of a trivial attention
    (uniform over the neighbourhood, self only, a random initialisation).
    A seed is "close" only if it beats the best of them; a fixed small
    threshold (the old ``> 0.05``) could never be met by trained networks and
    so never fail.  Agree if no seed is closer, disagree if any is.
    """
    values = np.asarray(internal, np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0 or not math.isfinite(reference):
        return Judgement(NOT_TESTABLE, "no per-seed internal distances or reference")
    closer = int(np.count_nonzero(values < reference))
    evidence = (
        f"{closer} of n = {values.size} seeds below the best trivial reference "
        f"({reference_name}, internal {reference:.3f}); closest seed "
        f"{values.min():.3f}"
    )
    return Judgement(DISAGREE if closer else AGREE, evidence)


def _paired_wilcoxon(x: np.ndarray, y: np.ndarray) -> tuple[float, float, int]:
    """One-sided Wilcoxon signed-rank p-values (x > y, x < y) and the pairs used.

    Exact at every n (:func:`~nar_gap.analysis.stats.signed_rank_p`).  Pairs
    with a NaN are dropped; with no nonzero difference both p are 1.
    """
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    greater, less = signed_rank_p(x - y)
    return greater, less, int(x.size)


WILCOXON_EFFICIENCY = 3 / math.pi
"""The Wilcoxon signed-rank test's efficiency relative to the t-test on normal
data: it needs about ``1 / 0.955`` times the t-test's seeds."""


def _paired_count(differences: np.ndarray, wilcoxon: bool = True) -> int | None:
    """Seeds for a one-sided test at 5 % of paired ``differences`` against 0."""
    d = np.asarray(differences, np.float64)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return None
    count = power.seeds_for_mean_vs_bound(
        float(d.mean()), float(d.std(ddof=1)), 0.0, level=1 - 2 * SIGNIFICANCE
    )
    if count is None or not wilcoxon:
        return count
    return math.ceil(count / WILCOXON_EFFICIENCY)


@dataclasses.dataclass(frozen=True)
class RankedPair:
    """:func:`paired_fewer`'s answer: a side and its p-value each way."""

    side: str  # "fewer", "more" or "undecided"
    p_fewer: float
    p_more: float

    @property
    def p(self) -> float:
        """The two-sided p-value: twice the smaller one-sided one (NaN if none)."""
        return float(np.minimum(1.0, 2 * np.minimum(self.p_fewer, self.p_more)))

    @property
    def leaning(self) -> str:
        """The side the smaller one-sided p-value points to, decided or not."""
        return "fewer" if self.p_fewer < self.p_more else "more"


def paired_fewer(
    arm: Sequence[float], other: Sequence[float], significance: float = SIGNIFICANCE
) -> RankedPair:
    """Whether ``arm`` scores lower than ``other``, paired by seed, either way.

    A one-sided Wilcoxon signed-rank test each way (zero differences
    dropped, scipy's default), each at half ``significance``, so that the
    chance of naming a side where the arms do not differ is ``significance``
    in all (two-sided): ``fewer`` where ``arm < other``, ``more`` where
    ``arm > other``, ``undecided`` otherwise.  For counts like wrong
    outputs, where a few seeds hold hundreds and most a handful, a t-test
    would be led by the tail.  The seeds an undecided pair would need:
    :func:`~nar_gap.analysis.power.seeds_for_signed_rank`.
    """
    x, y = np.asarray(arm, np.float64), np.asarray(other, np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    if np.count_nonzero(keep) < 2:
        return RankedPair("undecided", math.nan, math.nan)
    more, fewer, _ = _paired_wilcoxon(x[keep], y[keep])
    judged = RankedPair("undecided", fewer, more)
    return (
        dataclasses.replace(judged, side=judged.leaning)
        if judged.p < significance
        else judged
    )


@dataclasses.dataclass(frozen=True)
class OrderedTrend:
    """:func:`ordered_trend`'s answer: a side, Page's L and its p-value each way."""

    side: str  # "rises", "falls" or "undecided"
    statistic: float
    p_rises: float
    p_falls: float
    blocks: int

    @property
    def p(self) -> float:
        """The two-sided p-value: twice the smaller one-sided one (NaN if none)."""
        return float(np.minimum(1.0, 2 * np.minimum(self.p_rises, self.p_falls)))

    @property
    def leaning(self) -> str:
        """The side the smaller one-sided p-value points to, decided or not."""
        return "rises" if self.p_rises < self.p_falls else "falls"


def ordered_trend(
    blocks: np.ndarray, significance: float = SIGNIFICANCE, resamples: int = RESAMPLES
) -> OrderedTrend:
    """Whether values rise or fall along ordered conditions, block by block.

    ``blocks``: ``[blocks, conditions]``, e.g. a seed's excess over its pair
    at each grid size, sizes in order.  Page's L test
    (:func:`~nar_gap.analysis.stats.page_trend`: ranks within each block,
    p-values by permuting each block's values, so ties are allowed), each
    way at half ``significance`` as :func:`paired_fewer` does: ``rises``,
    ``falls`` or ``undecided``.  A trend says the values change with the
    order, not that they change sign: values all above zero that grow rise.
    The seeds an undecided trend would need:
    :func:`~nar_gap.analysis.power.seeds_for_trend`.
    """
    found = page_trend(blocks, resamples)
    judged = OrderedTrend(
        "undecided", found.statistic, found.p_rises, found.p_falls, found.blocks
    )
    return (
        dataclasses.replace(judged, side=judged.leaning)
        if judged.p < significance
        else judged
    )


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values, for a family of tests decided together.

    A test is decided where its adjusted p-value is below the family's
    level, and then the chance that any decided test is wrong stays below
    that level, as with Bonferroni, but more tests can be decided: the
    k-th smallest p-value is multiplied by the tests left (``m - k + 1``),
    not by ``m``, and never falls below an earlier one's.  NaN p-values
    (tests with no data) stay NaN and do not count in ``m``.
    """
    p = np.asarray(p_values, np.float64)
    adjusted = np.full(p.shape, np.nan)
    finite = np.flatnonzero(np.isfinite(p))
    order = finite[np.argsort(p[finite], kind="stable")]
    scaled = p[order] * np.arange(order.size, 0, -1)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return adjusted


def decided_together(
    judgements: Sequence[RankedPair | OrderedTrend],
    samples: Sequence[np.ndarray],
    count: Callable[[np.ndarray, float], int | None],
    significance: float = SIGNIFICANCE,
) -> list[dict[str, Any]]:
    """A family of tests decided by :func:`holm`: each one's side or seed count.

    Per test, ``p_holm``; ``side``, its ``leaning`` where ``p_holm`` is
    below ``significance``, else ``undecided``; and ``seeds_needed``, for the
    undecided only: ``count`` (e.g. :func:`~nar_gap.analysis.power.
    seeds_for_signed_rank`) on the ``sample`` the test ran on, at the
    Bonferroni level, Holm's strictest.
    """
    # Holm's strictest level: its m counts the tests with data only
    bonferroni = significance / max(1, sum(math.isfinite(j.p) for j in judgements))
    decisions = []
    for judged, sample, p_holm in zip(
        judgements, samples, holm([j.p for j in judgements]), strict=True
    ):
        decided = bool(p_holm < significance)
        decisions.append(
            {"p_holm": p_holm, "side": judged.leaning if decided else "undecided"}
            | {"seeds_needed": None if decided else count(sample, bonferroni)}
        )
    return decisions


CONFIRMED, NOT_CONFIRMED = "confirmed", "not confirmed"


def least_one_sided_p(pairs: int) -> float:
    """The smallest one-sided signed-rank p ``pairs`` can give: all one way.

    ``0.5 ** pairs`` (the exact test): two seeds cannot go below 0.25, so a
    small profile's ``not confirmed`` says nothing of the models.
    """
    return 0.5**pairs if pairs > 0 else math.nan


def share_interval(
    on_side: int, off_side: int, level: float = CONFIDENCE_LEVEL
) -> tuple[float, float]:
    """Clopper-Pearson interval of the share of untied pairs on one side.

    The signed-rank test says whether; this says how many seeds a reader
    should expect to go that way (NaN without an untied pair).
    """
    if on_side + off_side == 0:
        return math.nan, math.nan
    ci = stats.binomtest(on_side, on_side + off_side).proportion_ci(level)
    return float(ci.low), float(ci.high)


def hodges_lehmann(arm: np.ndarray, other: np.ndarray) -> float:
    """How far ``arm`` sits from ``other``, as the signed-rank test sees it.

    The median of the paired differences' Walsh averages (the pseudo-median):
    the estimate that goes with the signed-rank test, whose null is
    differences symmetric about zero, not a zero median or an even split of
    seeds (:func:`sign_test_p`).  NaN without pairs.
    """
    d = np.asarray(arm, np.float64) - np.asarray(other, np.float64)
    if not d.size:
        return math.nan
    i, j = np.triu_indices(d.size)
    return float(np.median((d[i] + d[j]) / 2))


def sign_test_p(on_side: int, off_side: int) -> float:
    """One-sided exact sign test: could the untied pairs split evenly?

    What the count of seeds on the stated side says alone, beside the
    signed-rank test, which also weighs how far each seed went.  NaN without
    an untied pair.
    """
    if on_side + off_side == 0:
        return math.nan
    return float(
        stats.binomtest(on_side, on_side + off_side, alternative="greater").pvalue
    )


def confirmed_together(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    sides: Sequence[str],
    significance: float = SIGNIFICANCE,
) -> list[dict[str, Any]]:
    """Hypotheses fixed before their data, each one-sided, decided by :func:`holm`.

    ``pairs``: per hypothesis ``(arm, other)``, paired by seed; ``sides``:
    what each hypothesis says, ``fewer`` (``arm < other``) or ``more``.  A
    confirmation spends its level on the stated side only, where an
    exploration (:func:`paired_fewer`) halves it to look both ways: the
    one-sided Wilcoxon signed-rank p that way, Holm's step-down over the
    hypotheses, ``confirmed`` below ``significance`` and ``not confirmed``
    otherwise (no third answer: the other way is ``p_other_way``, shown,
    not judged).  Beside it: the pairs on, off and not on either side, the
    share on it with :func:`share_interval` and :func:`sign_test_p`, the
    :func:`hodges_lehmann` difference ``arm - other``, and
    :func:`least_one_sided_p`.
    """
    out = []
    for (arm, other), side in zip(pairs, sides, strict=True):
        x, y = np.asarray(arm, np.float64), np.asarray(other, np.float64)
        more, fewer, _ = _paired_wilcoxon(x, y) if x.size else (math.nan,) * 3
        on, off = int(np.sum(x < y)), int(np.sum(x > y))
        p, p_other = fewer, more
        if side == "more":
            on, off, p, p_other = off, on, more, fewer
        low, high = share_interval(on, off)
        out.append(
            {"seeds": int(x.size), "on_side": on, "off_side": off}
            | {"same_seeds": int(x.size) - on - off}
            | {"share": on / (on + off) if on + off else math.nan}
            | {"share_low": low, "share_high": high}
            | {"p_sign": sign_test_p(on, off)}
            | {"hodges_lehmann": hodges_lehmann(x, y)}
            | {"p": p, "p_other_way": p_other}
            | {"least_p": least_one_sided_p(int(x.size))}
        )
    adjusted = holm([r["p"] for r in out])
    return [
        r
        | {"p_holm": float(q)}
        | {"verdict": CONFIRMED if q < significance else NOT_CONFIRMED}
        for r, q in zip(out, adjusted, strict=True)
    ]


def degrade(series: Mapping[str, np.ndarray]) -> Judgement:
    """Trace predictions "degrade over time": first bin against last, per hint.

    ``series``: hint -> ``[seeds, bins]`` external match on the uniform
    timescale.  Hints saturated at every bin (seed mean >= :data:`SATURATED`)
    cannot show a fall and are left out.  For each other hint, one-sided
    paired Wilcoxon signed-rank tests across seeds of the first bin against
    the last.  Disagree if any significantly improves; else agree if every
    such hint degrades with p < 0.05; else disagree if every one's fall is
    shown below :data:`DEGRADE_BOUND`; inconclusive otherwise.  Not testable
    if every hint is saturated.  (A mean that did not fall had decided
    "disagree" without a test: a seed or two of noise could.)
    """
    parts, tested = [], {}
    for hint, values in series.items():
        values = np.asarray(values, np.float64)
        means = np.array([nan_mean(c) for c in values.T])
        if np.all(means[np.isfinite(means)] >= SATURATED):
            parts.append(f"{hint} saturated")
            continue
        down, up, n = _paired_wilcoxon(values[:, 0], values[:, -1])
        _, small, _ = _paired_wilcoxon(values[:, 0] - DEGRADE_BOUND, values[:, -1])
        tested[hint] = (down, up, small)
        parts.append(
            f"{hint} {means[0]:.3f} -> {means[-1]:.3f}, n = {n} seeds, "
            f"{_p(down)} (degrades), {_p(small)} (falls less than "
            f"{DEGRADE_BOUND:g})"
        )
    evidence = "one-sided paired Wilcoxon, first vs last bin: " + "; ".join(parts)
    if not tested:
        return Judgement(NOT_TESTABLE, evidence + " (every hint saturated)")
    if any(up < SIGNIFICANCE for _, up, _ in tested.values()):
        return Judgement(DISAGREE, evidence)
    if all(down < SIGNIFICANCE for down, _, _ in tested.values()):
        return Judgement(AGREE, evidence)
    if all(small < SIGNIFICANCE for *_, small in tested.values()):
        return Judgement(DISAGREE, evidence)
    counts = [
        _paired_count(
            np.asarray(series[hint], np.float64)[:, 0]
            - np.asarray(series[hint], np.float64)[:, -1]
        )
        for hint, (down, _, _) in tested.items()
        if down >= SIGNIFICANCE
    ]
    count = None if None in counts else max(counts)
    return Judgement(INCONCLUSIVE, evidence, count)


def early_closer(along: np.ndarray, early_steps: int = 2) -> Judgement:
    """Attention closer to the compiled one in the first steps than later.

    ``along``: ``[seeds, steps]`` internal distance per step (NaN where no
    graph's trace reaches).  Per seed, the mean over the first
    ``early_steps`` against the mean over the later steps, a one-sided paired
    Wilcoxon signed-rank test across seeds.  Agree if early < late with
    p < 0.05, disagree if early > late with p < 0.05, inconclusive otherwise.
    """
    along = np.asarray(along, np.float64)
    if along.ndim != 2 or along.shape[1] <= early_steps:
        return Judgement(
            NOT_TESTABLE, f"{along.shape[-1]} steps: no step after {early_steps}"
        )

    early = nan_mean(along[:, :early_steps], axis=1)
    late = nan_mean(along[:, early_steps:], axis=1)
    if not np.any(np.isfinite(early) & np.isfinite(late)):
        return Judgement(NOT_TESTABLE, "no seed reaches a step after the first two")
    larger, smaller, n = _paired_wilcoxon(early, late)
    keep = np.isfinite(early) & np.isfinite(late)
    evidence = (
        f"one-sided paired Wilcoxon, mean over steps 0-{early_steps - 1} "
        f"{early[keep].mean():.3f} vs later {late[keep].mean():.3f}, "
        f"n = {n} seeds, {_p(smaller)} (closer early)"
    )
    return _sized(_judge_higher(smaller, larger, evidence), _paired_count(late - early))


def closer_to_each_other(distances: np.ndarray, closest: float) -> Judgement:
    """Learned solutions nearer to each other than the nearest is to compiled.

    §4.5 contrasts the average inter-solution distance with the closest
    distance to the compiled solution.  Per seed, its mean distance to the
    other seeds against the closest internal distance, a one-sided
    one-sample Wilcoxon signed-rank test across seeds.  The seeds' means
    share pairs, so they are not independent and the p-value is optimistic;
    it is reported, the verdict needs p < 0.05 in either direction.
    """
    d = np.asarray(distances, np.float64)
    k = d.shape[0]
    if k < 2 or not math.isfinite(closest):
        return Judgement(NOT_TESTABLE, f"{k} seed(s): no inter-solution distance")
    off = d[~np.eye(k, dtype=bool)].reshape(k, k - 1)
    per_seed = off.mean(1)
    larger, smaller, n = _paired_wilcoxon(per_seed, np.full(k, closest))
    evidence = (
        f"one-sided Wilcoxon of per-seed mean inter-solution distance "
        f"(mean {per_seed.mean():.3f}) against the closest internal distance "
        f"{closest:.3f}, n = {n} seeds, {_p(smaller)} (smaller); "
        "seed means share pairs, so p is optimistic"
    )
    judged = _judge_higher(smaller, larger, evidence)
    return _sized(judged, _paired_count(closest - per_seed))


CLUSTER_RESAMPLES = 1000
"""Resamples of the seeds behind the silhouette's interval."""


def _silhouette(d: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import silhouette_score  # noqa: PLC0415 (slow import)

    count = np.unique(labels).size
    if count < 2 or count >= labels.size:
        return 0.0  # sklearn's convention has no value here; no structure
    return float(silhouette_score(d, labels, metric="precomputed"))


def silhouette_interval(
    distances: np.ndarray, resamples: int = CLUSTER_RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """A 95 % interval for the silhouette of the widest-gap clusters.

    Seeds are drawn with replacement and each drawn seed kept once (a
    duplicate would sit at distance 0 from itself and make a cluster of its
    own), so each resample is a random ~63 % of the seeds; the clusters are
    cut again by the rule fixed before looking
    (:func:`nar_gap.analysis.stats.cluster_solutions`: Ward, the widest gap
    between merge heights) and scored.  The percentile interval says how
    much the structure depends on which seeds were trained; subsamples are
    smaller than the run, so it errs wide.
    """
    from nar_gap.analysis.stats import cluster_solutions  # noqa: PLC0415

    d = np.asarray(distances, np.float64)
    rng = np.random.default_rng(seed)
    scores = []
    for _ in range(resamples):
        keep = np.unique(rng.integers(0, d.shape[0], d.shape[0]))
        if keep.size < 3:
            continue
        sub = d[np.ix_(keep, keep)]
        scores.append(_silhouette(sub, cluster_solutions(sub).labels))
    low, high = np.percentile(scores, [2.5, 97.5])
    return float(low), float(high)


def clusters(distances: np.ndarray, labels: Sequence[int]) -> Judgement:
    """Learned solutions "form consistent clusters": the silhouette, with an interval.

    ``labels``: the clusters of the widest-gap rule, fixed before looking
    (:func:`nar_gap.analysis.stats.cluster_solutions`).  The silhouette on the
    precomputed inter-seed distances asks whether the clusters are there at
    all (a count depends on the rule that cuts the tree).  Its 95 % interval
    (:func:`silhouette_interval`, seeds resampled) decides: agree if it lies
    at or above :data:`SILHOUETTE_STRUCTURE`, disagree if below
    :data:`SILHOUETTE_NONE` (or a single cluster, or every seed alone),
    inconclusive otherwise; the silhouette itself must lie on the same side.
    One number thresholded without an interval (the rule this replaced) let
    a cluster of the two least accurate seeds carry the verdict, and the
    silhouette alone below :data:`SILHOUETTE_NONE` had still decided
    "disagree" whatever its interval.  Not testable below
    :data:`MIN_SEEDS_FOR_CLUSTERS`.
    """
    labels = np.asarray(labels)
    d = np.asarray(distances, np.float64)
    k = labels.size
    count = int(np.unique(labels).size)
    if k < MIN_SEEDS_FOR_CLUSTERS:
        return Judgement(
            NOT_TESTABLE,
            f"n = {k} seeds: clusters are judged from {MIN_SEEDS_FOR_CLUSTERS}",
        )
    if count < 2:
        return Judgement(DISAGREE, f"a single cluster of n = {k} seeds")
    if count >= k:
        return Judgement(
            DISAGREE, f"{count} clusters of n = {k} seeds: every seed alone"
        )
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0.0)
    score = _silhouette(d, labels)
    low, high = silhouette_interval(d)
    evidence = (
        f"silhouette {score:.2f} of {count} clusters (widest-gap rule), n = {k} "
        f"seeds; resampled 95% interval {_interval(low, high)} "
        f"(>= {SILHOUETTE_STRUCTURE} structure, < {SILHOUETTE_NONE} none)"
    )
    return decide(
        min(score, low) >= SILHOUETTE_STRUCTURE,
        max(score, high) < SILHOUETTE_NONE,
        evidence,
    )


# --------------------------------------------------------------------------- #
# Stability and landscapes (D.8, D.11).
# --------------------------------------------------------------------------- #


def unstable(
    start: Sequence[float],
    final: Sequence[float],
    lowest: Sequence[float],
    controls: Mapping[str, float] | None = None,
    drop: float = INSTABILITY_DROP,
) -> Judgement:
    """A compiled minimum "unstable": training on loses accuracy for good.

    Per data order (seed): the accuracy at the start, at the final
    evaluation, and the lowest along the way.  A transient dip that recovers
    is not instability, so the final evaluation is judged.  Agree if the
    mean final accuracy is below the start by more than ``drop`` (relative)
    and a one-sided one-sample t-test across orders of
    ``final - (1 - drop) * start`` says p < 0.05 (below
    :data:`MIN_ORDERS_FOR_TEST` orders: every order falls by more than
    ``drop``); disagree if no order ever falls by more than ``drop``;
    inconclusive otherwise.  ``controls``: other settings' mean final
    accuracy (another optimizer or step size), reported so a reader sees
    whether the loss follows the step size.
    """
    start = np.asarray(start, np.float64)
    final = np.asarray(final, np.float64)
    lowest = np.asarray(lowest, np.float64)
    n = start.size
    if n == 0:
        return Judgement(NOT_TESTABLE, "no data order trained on from compiled")
    margin = final - (1 - drop) * start
    fell = final.mean() < (1 - drop) * start.mean()
    if n >= MIN_ORDERS_FOR_TEST:
        spread = float(np.std(margin, ddof=1))
        if spread == 0:
            p = 0.0 if margin.mean() < 0 else 1.0
        else:
            p = float(stats.ttest_1samp(margin, 0.0, alternative="less").pvalue)
        test = f"one-sided t-test across orders, {_p(p)}"
        shown = fell and p < SIGNIFICANCE
    else:
        test = "too few orders for a test: every order must fall"
        shown = bool(np.all(margin < 0))
    evidence = (
        f"final accuracy {final.mean():.3f} vs start {start.mean():.3f} over "
        f"n = {n} data orders (per order {', '.join(f'{x:.3f}' for x in final)}; "
        f"lowest {lowest.min():.3f}); {test}"
    )
    if controls:
        evidence += "; controls' final: " + ", ".join(
            f"{name} {value:.3f}" for name, value in controls.items()
        )
    judged = decide(shown, np.all(lowest >= (1 - drop) * start), evidence)
    return _sized(judged, _paired_count(-margin, wilcoxon=False))


# The sharpness measures :func:`sharper` reads, where a network has them.
SHARPNESS_MEASURES = ("sharpness_r0.1", "sharpness_r0.5")


def least_rank_sum_p(planes: int) -> float:
    """The smallest one-sided exact Mann-Whitney p of ``planes`` against ``planes``.

    ``1 / C(2k, k)``: every value of one side above every value of the other.
    Three planes each cannot go below 0.05; four can (1/70).
    """
    return 1.0 / math.comb(2 * planes, planes) if planes > 0 else math.nan


def _fewest_planes() -> int:
    """The fewest planes each whose :func:`least_rank_sum_p` is below the level."""
    return next(k for k in range(1, 64) if least_rank_sum_p(k) < SIGNIFICANCE)


def sharper(
    compiled: Mapping[str, Mapping[str, Sequence[float]]],
    learned: Mapping[int, Mapping[str, Sequence[float]]],
    differences: Sequence[str] = (),
) -> Judgement:
    """Every compiled minimum sharper than every learned one of its class.

    ``compiled``: per compiled network (by name: the compiler's default and
    its controls, every one exact), per sharpness measure (loss rise at
    radius 0.1, 0.5), its values on independent filter-normalised planes.
    ``learned``: the same, per seed, for every learned minimum that solves
    the task.  The planes are the sampled unit: one plane's rise depends on
    the direction drawn, so one plane per network is no test.

    Per compiled network, seed and measure, an exact one-sided Mann-Whitney
    test of the compiled planes' rises against the seed's
    (``scipy.stats.mannwhitneyu``, ``method="exact"``).  Agree if every one
    says the compiled network is the sharper at p < 0.05 (an
    intersection-union test: the claim is about every pair, so each test runs
    at the full level), disagree if every one says the learned one is,
    inconclusive otherwise.  A rise may be infinite (a rank); NaN, a
    difference of network class (``differences``: the same radius moves
    networks of other widths or normalisation by other things), or no
    network on either side makes it not testable.
    """
    networks = [*compiled.values(), *learned.values()]
    names = [m for m in SHARPNESS_MEASURES if all(m in n for n in networks)]
    samples = [np.asarray(n[m], np.float64) for n in networks for m in names]
    reasons = list(differences)
    if any(np.isnan(sample).any() for sample in samples):
        reasons.append("a sharpness value is NaN")
    if not compiled:
        reasons.append("no compiled network is exact")
    if not learned:
        reasons.append("no learned minimum of the compiled class solves the task")
    if not names:
        reasons.append("no shared measure")
    if reasons:
        return Judgement(NOT_TESTABLE, "; ".join(reasons))
    up, down, parts = [], [], []
    for name, values in compiled.items():
        for seed, other in learned.items():
            for m in names:
                a, b = (
                    np.asarray(values[m], np.float64),
                    np.asarray(other[m], np.float64),
                )
                up.append(_rank_sum_p(a, b, "greater"))
                down.append(_rank_sum_p(a, b, "less"))
                parts.append(
                    f"{name} vs seed {seed} {m}: {_p(up[-1])} (sharper), "
                    f"{_p(down[-1])} (flatter)"
                )
    planes = min(sample.size for sample in samples)
    evidence = (
        f"exact one-sided Mann-Whitney test per compiled network, learned seed "
        f"and measure, on their planes (n = {planes} planes each at the fewest, "
        f"{len(compiled)} compiled networks, {len(learned)} learned seeds); every "
        f"one at p < 0.05 decides (intersection-union); " + "; ".join(parts)
    )
    judged = decide(max(up) < SIGNIFICANCE, max(down) < SIGNIFICANCE, evidence)
    if judged.verdict == INCONCLUSIVE and least_rank_sum_p(planes) >= SIGNIFICANCE:
        judged = dataclasses.replace(
            judged,
            evidence=f"{evidence}; {planes} planes each cannot reach p < 0.05 "
            f"(least {least_rank_sum_p(planes):.2g}): {_fewest_planes()} or more "
            "decide",
        )
    return judged


def checked(ok: bool, what: str) -> Judgement:
    """A deterministic check (no seeds, no test): agree or disagree."""
    return Judgement(AGREE if ok else DISAGREE, what)


# --------------------------------------------------------------------------- #
# Yes-or-no questions about an effect over seeds (beyond the paper's rows).
# --------------------------------------------------------------------------- #

YES, NO = "yes", "no"
CHANGES, EXCEEDS = "changes", "exceeds"
"""The two rules of :func:`effect_answer`: an effect that *changes* something
(either sign), and one that *exceeds* the bound in the question's direction."""


def effect_answer(
    effects: Sequence[float], rule: str, bound: float
) -> tuple[str, float, float, float]:
    """The answer for per-seed effects: (answer, mean, low, high).

    On the t-interval of the mean effect over seeds (at
    :data:`CONFIDENCE_LEVEL`).  ``changes``: yes where the interval lies
    wholly beyond ``±bound`` (above ``bound`` or below ``-bound``), no where
    it lies inside ``(-bound, bound)``.  ``exceeds``: yes where it lies above
    ``bound``, no where it lies below.  Inconclusive otherwise, and below two
    seeds (no interval).
    """
    summary = finite_summary(effects)
    low, high = t_interval(summary)
    if not (math.isfinite(low) and math.isfinite(high)):
        return INCONCLUSIVE, summary.mean, low, high
    if rule == CHANGES:
        yes, no = low > bound or high < -bound, -bound < low and high < bound
    elif rule == EXCEEDS:
        yes, no = low > bound, high < bound
    else:
        raise ValueError(f"unknown rule {rule!r}; one of {CHANGES}, {EXCEEDS}")
    return (YES if yes else NO if no else INCONCLUSIVE), summary.mean, low, high
