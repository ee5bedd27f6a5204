"""Known answers for nar_gap.analysis.stats: Table 1's p-values, intervals, clusters.

The references are scipy's own routines called independently here (the
permutation test, the bootstrap, fcluster) and answers derived by hand: the
exact p-value of a perfect correlation at n = 4 is 2/4! = 1/12.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform

from nar_gap.analysis import stats as st

OLD_COLUMNS = [
    "measure",
    "n",
    "pearson_r",
    "pearson_p",
    "spearman_rho",
    "spearman_p",
    "note",
]
NEW_COLUMNS = [
    "pearson_ci_low",
    "pearson_ci_high",
    "spearman_ci_low",
    "spearman_ci_high",
    "p_method",
]


def _pair(n: int, slope: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy-like y and a measure x = slope * y + noise."""
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.8, 1.0, n)
    return slope * y + rng.normal(0, 0.05, n), y


def _r(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return stats.pearsonr(a, np.broadcast_to(b, a.shape), axis=axis).statistic


def _rho(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return _r(stats.rankdata(a, axis=axis), stats.rankdata(b, axis=axis), axis)


REFERENCE = {"pearson": _r, "spearman": _rho}


def _same_rows(a: list[dict], b: list[dict]) -> bool:
    """Rows equal key by key, NaN equal to NaN."""
    if [list(r) for r in a] != [list(r) for r in b]:
        return False
    return all(
        (x == y) or (isinstance(x, float) and np.isnan(x) and np.isnan(y))
        for ra, rb in zip(a, b, strict=True)
        for x, y in zip(ra.values(), rb.values(), strict=True)
    )


# --------------------------------------------------------------------------- #
# Permutation p-values.
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("statistic", ["pearson", "spearman"])
@pytest.mark.parametrize("slope", [-1.0, 0.0], ids=["correlated", "independent"])
def test_permutation_p_is_scipys_two_sided_pairings_test(statistic, slope):
    x, y = _pair(12, slope, seed=3)
    ours = st.permutation_p(x, y, statistic)
    reference = stats.permutation_test(
        (x,),
        lambda a, axis=-1: REFERENCE[statistic](a, y, axis),
        permutation_type="pairings",
        vectorized=True,
        n_resamples=st.RESAMPLES,
        alternative="two-sided",
        rng=np.random.default_rng(st.RESAMPLING_SEED),
    )
    assert ours.pvalue == pytest.approx(reference.pvalue, rel=1e-12)
    assert ours.statistic == pytest.approx(reference.statistic, rel=1e-12)
    assert not ours.exact and ours.method == "permutation, 9999 resamples"
    if slope:
        assert ours.pvalue < 0.01
    else:
        assert ours.pvalue > 0.05


def test_a_perfect_correlation_at_four_seeds_has_exact_p_one_twelfth():
    # only the identity pairing reaches r = 1 and only the reversal r = -1:
    # two-sided p = 2 * 1/4!, where scipy's t-approximation gives 0
    x = np.array([1.0, 2.0, 3.0, 4.0])
    for statistic in ("pearson", "spearman"):
        result = st.permutation_p(x, x, statistic)
        assert result.pvalue == pytest.approx(1 / 12)
        assert result.exact and result.resamples == 24
        assert result.method == "exact permutation"
    assert stats.pearsonr(x, x).pvalue < 1e-6


@pytest.mark.parametrize("statistic", ["pearson", "spearman"])
def test_exact_p_counts_every_pairing(statistic):
    x, y = _pair(6, -0.3, seed=5)
    result = st.permutation_p(x, y, statistic)
    observed = REFERENCE[statistic](x, y)
    null = np.array(
        [REFERENCE[statistic](x[list(p)], y) for p in itertools.permutations(range(6))]
    )
    tol = 1e-12
    lower = np.mean(null <= observed + tol)
    upper = np.mean(null >= observed - tol)
    assert result.exact and result.resamples == math.factorial(6)
    assert result.pvalue == pytest.approx(min(1.0, 2 * min(lower, upper)))


def test_from_eight_seeds_the_permutations_are_drawn():
    x, y = _pair(8, 1.0, seed=0)
    result = st.permutation_p(x, y, "pearson")
    assert not result.exact and result.resamples == st.RESAMPLES
    # the observed pairing is counted among the draws: p >= 2 / (resamples + 1)
    assert result.pvalue >= 2 / (st.RESAMPLES + 1)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="one length"):
        st.permutation_p(np.arange(5.0), np.arange(6.0), "pearson")


# --------------------------------------------------------------------------- #
# Bootstrap intervals.
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("statistic", ["pearson", "spearman"])
def test_bootstrap_interval_is_scipys_paired_percentile_interval(statistic):
    x, y = _pair(32, -1.0, seed=11)
    ours = st.bootstrap_interval(x, y, statistic)
    reference = stats.bootstrap(
        (x, y),
        REFERENCE[statistic],
        n_resamples=st.RESAMPLES,
        vectorized=True,
        paired=True,
        confidence_level=st.CONFIDENCE_LEVEL,
        method="percentile",
        rng=np.random.default_rng(st.RESAMPLING_SEED),
    ).confidence_interval
    assert ours.undefined == 0
    assert ours.low == pytest.approx(reference.low, rel=1e-10)
    assert ours.high == pytest.approx(reference.high, rel=1e-10)
    assert ours.low < REFERENCE[statistic](x, y) < ours.high < 0


def test_bootstrap_interval_narrows_with_more_seeds():
    small = st.bootstrap_interval(*_pair(8, -1.0, seed=2), "pearson")
    large = st.bootstrap_interval(*_pair(128, -1.0, seed=2), "pearson")
    assert large.high - large.low < small.high - small.low


def test_resamples_without_a_correlation_are_left_out_and_counted():
    # at n = 4 some resamples repeat one seed four times; all others give r = 1
    x = np.array([1.0, 2.0, 3.0, 4.0])
    interval = st.bootstrap_interval(x, x, "pearson")
    assert 0 < interval.undefined < st.RESAMPLES
    assert interval.low == pytest.approx(1.0) and interval.high == pytest.approx(1.0)


# --------------------------------------------------------------------------- #
# Table 1.
# --------------------------------------------------------------------------- #


def test_table_keeps_its_columns_and_adds_the_new_ones():
    x, y = _pair(12, -1.0, seed=1)
    constant = st.correlation_table(y, {"x": np.ones(12)})
    defined = st.correlation_table(y, {"x": x})
    assert list(defined[0]) == OLD_COLUMNS + NEW_COLUMNS
    assert list(constant[0]) == list(defined[0])


def test_table_reports_p_from_ten_seeds_on():
    assert st.MIN_SEEDS_FOR_P == 10
    x, y = _pair(10, -1.0, seed=4)
    row = st.correlation_table(y, {"x": x})[0]
    assert row["pearson_p"] == st.permutation_p(x, y, "pearson").pvalue
    assert row["spearman_p"] == st.permutation_p(x, y, "spearman").pvalue
    assert row["p_method"] == "permutation, 9999 resamples"
    assert row["note"] == ""
    assert row["pearson_r"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert row["spearman_rho"] == pytest.approx(stats.spearmanr(x, y).statistic)


@pytest.mark.parametrize("n", [3, 4, 9])
def test_table_hides_p_below_ten_seeds_but_keeps_r_and_its_interval(n):
    x, y = _pair(n, -0.5, seed=4)
    row = st.correlation_table(y, {"x": x})[0]
    assert np.isnan(row["pearson_p"]) and np.isnan(row["spearman_p"])
    assert "p-value not reported below n = 10" in row["note"]
    assert row["p_method"] == ""
    assert row["pearson_r"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert row["spearman_rho"] == pytest.approx(stats.spearmanr(x, y).statistic)
    for name, value in (("pearson", "pearson_r"), ("spearman", "spearman_rho")):
        interval = st.bootstrap_interval(x, y, name)
        assert row[f"{name}_ci_low"] == interval.low
        assert row[f"{name}_ci_high"] == interval.high
        assert interval.low <= row[value] <= interval.high


def test_table_is_reproducible():
    x, y = _pair(32, -1.0, seed=9)
    measures = {"internal": x, "external": x[::-1], "noise": _pair(32, 0.0, 8)[0]}
    first = st.correlation_table(y, measures)
    assert _same_rows(first, st.correlation_table(y, measures))
    for row in first:
        assert row["pearson_ci_low"] <= row["pearson_r"] <= row["pearson_ci_high"]
        assert row["spearman_ci_low"] <= row["spearman_rho"] <= row["spearman_ci_high"]


@pytest.mark.parametrize(
    "accuracy, values",
    [
        (np.array([0.9, 1.0, 0.8]), np.ones(3)),  # a constant measure
        (np.ones(12), np.arange(12.0)),  # a constant accuracy
        (np.array([0.9, 1.0]), np.array([0.1, 0.2])),  # two seeds
    ],
    ids=["constant-measure", "constant-accuracy", "two-seeds"],
)
def test_an_undefined_row_is_nan_and_says_so(accuracy, values):
    row = st.correlation_table(accuracy, {"x": values})[0]
    numbers = [c for c in OLD_COLUMNS + NEW_COLUMNS if c not in ("measure", "n")]
    for column in numbers:
        if column not in ("note", "p_method"):
            assert np.isnan(row[column]), column
    assert row["note"] == "undefined: fewer than 3 seeds or a constant input"
    assert row["p_method"] == ""


# --------------------------------------------------------------------------- #
# Cluster-count rules.
# --------------------------------------------------------------------------- #


def _groups(sizes=(3, 4, 5), within=0.02, between=0.6, seed=0) -> np.ndarray:
    """Distances of tight groups far apart, every distance distinct."""
    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(len(sizes)), sizes)
    k = len(group)
    same = group[:, None] == group[None]
    noise = rng.uniform(0, 0.01, (k, k))
    distances = np.where(same, within, between) + noise
    distances = np.triu(distances, 1)
    return distances + distances.T


def test_separated_groups_are_counted_under_every_rule():
    distances = _groups()
    # within groups about 0.02 apart, between them about 0.6; average linkage
    # joins the groups at about 0.6, Ward above 1 (its heights grow with size)
    counts = st.cluster_counts(distances, thresholds=(0.0, 0.3, 0.65, 10.0))
    assert counts == {
        "widest gap": 3,
        "average linkage at 0": 12,
        "average linkage at 0.3": 3,
        "average linkage at 0.65": 1,
        "average linkage at 10": 1,
        "ward at 0": 12,
        "ward at 0.3": 3,
        "ward at 0.65": 3,
        "ward at 10": 1,
    }
    assert counts["widest gap"] == st.cluster_solutions(distances).count


def test_default_thresholds_are_the_documented_ones():
    counts = st.cluster_counts(_groups())
    expected = ["widest gap"]
    for prefix in ("average linkage", "ward"):
        expected += [f"{prefix} at {t:g}" for t in st.CUT_DISTANCES]
    assert list(counts) == expected
    assert st.CUT_DISTANCES == (0.05, 0.1, 0.2, 0.3, 0.5)


@pytest.mark.parametrize("method", ["average", "ward"])
def test_count_curve_is_fclusters_count_at_every_height(method):
    distances = _groups(sizes=(2, 5, 3, 4), seed=3)
    linkage = hierarchy.linkage(squareform(distances), method=method)
    heights = np.concatenate([[0.0], np.sort(linkage[:, 2]), np.linspace(0, 3, 61)])
    curve = st.cluster_count_curve(distances, heights, method)
    reference = [
        len(np.unique(hierarchy.fcluster(linkage, t=h, criterion="distance")))
        for h in heights
    ]
    assert curve.tolist() == reference
    order = np.argsort(heights, kind="stable")
    assert np.all(np.diff(curve[order]) <= 0)  # higher cuts, fewer clusters


def test_ward_heights_exceed_the_largest_distance_average_ones_do_not():
    distances = _groups()
    top = [distances.max()]
    assert st.cluster_count_curve(distances, top, "average")[0] == 1
    assert st.cluster_count_curve(distances, top, "ward")[0] > 1


def test_cluster_counts_ignore_seed_order():
    distances = _groups(sizes=(4, 2, 6), seed=7)
    counts = st.cluster_counts(distances)
    heights = np.linspace(0, 2, 41)
    curves = {
        m: st.cluster_count_curve(distances, heights, m) for m in ("average", "ward")
    }
    for trial in range(5):
        perm = np.random.default_rng(trial).permutation(len(distances))
        shuffled = distances[np.ix_(perm, perm)]
        assert st.cluster_counts(shuffled) == counts
        for method, curve in curves.items():
            again = st.cluster_count_curve(shuffled, heights, method)
            assert np.array_equal(again, curve)


def test_one_two_and_identical_solutions():
    one = st.cluster_counts(np.zeros((1, 1)))
    assert set(one.values()) == {1}
    assert st.cluster_count_curve(np.zeros((1, 1)), [0.0, 1.0]).tolist() == [1, 1]
    identical = st.cluster_counts(np.zeros((4, 4)), thresholds=(0.0, 0.1))
    assert set(identical.values()) == {1}
    two = np.array([[0.0, 0.15], [0.15, 0.0]])
    counts = st.cluster_counts(two, thresholds=(0.0, 0.1, 0.15, 0.2))
    assert counts["widest gap"] == 1  # no gap to read
    for prefix in ("average linkage", "ward"):
        # a merge exactly at the cut height is made
        assert [counts[f"{prefix} at {t}"] for t in ("0", "0.1", "0.15", "0.2")] == [
            2,
            2,
            1,
            1,
        ]


def test_bad_cluster_inputs_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        st.cluster_count_curve(_groups(), [-0.1])
    with pytest.raises(ValueError, match="symmetric"):
        st.cluster_counts(np.arange(9.0).reshape(3, 3))


# --------------------------------------------------------------------------- #
# Partial correlation: a confounder held fixed.
# --------------------------------------------------------------------------- #


def _textbook_partial(x, y, z):
    """``(r_xy - r_xz r_yz) / sqrt((1 - r_xz²)(1 - r_yz²))``."""
    r = np.corrcoef([x, y, z])
    return (r[0, 1] - r[0, 2] * r[1, 2]) / np.sqrt(
        (1 - r[0, 2] ** 2) * (1 - r[1, 2] ** 2)
    )


def test_a_confounder_that_drives_both_makes_a_strong_r_and_a_null_partial_r():
    # the selected step drives both the measure and accuracy; given it, the
    # two are independent noise
    rng = np.random.default_rng(0)
    n = 40
    step = rng.uniform(50, 200, n)
    measure = -step / 100 + rng.normal(0, 0.05, n)
    accuracy = step / 200 + rng.normal(0, 0.025, n)
    raw = st.correlation_table(accuracy, {"m": measure})[0]
    (row,) = st.partial_correlation_table(accuracy, {"m": measure}, step)
    assert raw["pearson_r"] < -0.9 and raw["pearson_p"] < 0.01
    assert abs(row["pearson_r"]) < 0.3 and row["pearson_p"] > 0.05
    assert abs(row["spearman_rho"]) < 0.3
    assert row["pearson_ci_low"] < 0 < row["pearson_ci_high"]
    assert row["pearson_r"] == pytest.approx(_textbook_partial(measure, accuracy, step))
    assert list(row) == OLD_COLUMNS + NEW_COLUMNS


def test_a_relation_the_confounder_hides_shows_in_the_partial_r():
    # the opposite case: x = u + z and y = u - z with var(u) = var(z), so raw
    # r ~ 0, while with z held fixed both are u (plus noise)
    rng = np.random.default_rng(1)
    n = 40
    u, z = rng.normal(0, 1, n), rng.normal(0, 1, n)
    x = u + z + rng.normal(0, 0.05, n)
    y = u - z + rng.normal(0, 0.05, n)
    raw = st.correlation_table(y, {"x": x})[0]
    (row,) = st.partial_correlation_table(y, {"x": x}, z)
    assert abs(raw["pearson_r"]) < 0.35
    assert row["pearson_r"] > 0.95 and row["pearson_p"] < 0.01
    assert row["pearson_ci_low"] > 0.8
    assert row["pearson_r"] == pytest.approx(_textbook_partial(x, y, z))
    assert st.partial_correlation(x, y, z, "pearson") == pytest.approx(row["pearson_r"])


def test_the_partial_permutation_p_permutes_the_residuals():
    x, y = _pair(12, -1.0, 3)
    z = np.random.default_rng(4).uniform(0, 1, 12)
    (row,) = st.partial_correlation_table(y, {"x": x}, z)
    expected = st.permutation_p(st.residualise(x, z), st.residualise(y, z), "pearson")
    assert row["pearson_p"] == expected.pvalue
    assert row["p_method"].endswith("of residuals")


def test_a_constant_control_leaves_the_raw_correlation_and_says_so():
    x, y = _pair(8, -1.0, 5)
    raw = st.correlation_table(y, {"x": x})[0]
    (row,) = st.partial_correlation_table(y, {"x": x}, np.full(8, 200.0))
    assert row["pearson_r"] == pytest.approx(raw["pearson_r"])
    assert row["spearman_rho"] == pytest.approx(raw["spearman_rho"])
    assert "control is constant" in row["note"]


def test_a_measure_the_control_explains_or_too_few_seeds_is_undefined():
    z = np.arange(6.0)
    (row,) = st.partial_correlation_table(z**0.5, {"x": 2 * z + 1}, z)
    assert np.isnan(row["pearson_r"]) and "undefined" in row["note"]
    (few,) = st.partial_correlation_table(np.ones(3), {"x": np.arange(3.0)}, z[:3])
    assert np.isnan(few["pearson_r"]) and "undefined" in few["note"]
    (nan,) = st.correlation_table(np.arange(4.0), {"x": np.array([1, 2, np.nan, 3])})
    assert np.isnan(nan["pearson_r"]) and "NaN" in nan["note"]


# --------------------------------------------------------------------------- #
# A score over seeds with seeds missing: each caller's numbers, to the bit.
# --------------------------------------------------------------------------- #


def _with_missing(seed: int, seeds: int) -> np.ndarray:
    """Per-seed values in [0, 1] with about a third missing (NaN)."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(0, 1, seeds)
    values[rng.uniform(0, 1, seeds) < 0.35] = np.nan
    return values


def test_finite_summary_packs_the_finite_values_and_counts_them():
    for seed in range(200):  # 2..15 seeds: past the 8 where summation orders part
        values = _with_missing(seed, 2 + seed % 14)
        finite = values[np.isfinite(values)]
        summary = st.finite_summary(values)
        if finite.size == 0:
            assert math.isnan(summary.mean) and math.isnan(summary.std)
            assert summary.n == 0
            continue
        assert summary == st.Summary(finite.mean(), finite.std(), finite.size)
    assert st.finite_summary([0.5, np.inf, -np.inf, 0.25]).n == 2


def test_nan_mean_is_numpys_nanmean_to_the_bit_and_quiet_on_an_empty_slice():
    for seed in range(200):
        values = _with_missing(seed, 2 + seed % 14)
        if np.isnan(values).all():
            continue
        assert st.nan_mean(values) == np.nanmean(values)
    rows = np.stack([_with_missing(s, 13) for s in range(6)])
    rows[0] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        means = st.nan_mean(rows, axis=1)
        expected = np.array([np.nan, *(np.nanmean(r) for r in rows[1:])])
    np.testing.assert_array_equal(means, expected)


def test_summary_of_every_value_keeps_a_nan():
    values = [0.25, 0.5, 1.0]
    assert st.Summary.of(values) == st.Summary(
        np.mean(values), np.std(values), len(values)
    )
    assert math.isnan(st.Summary.of([0.25, np.nan]).mean)


def test_page_l_is_scipy_s_and_its_z_matches_the_permutation_test_under_ties():
    """L as scipy's ``page_trend_test`` computes it; the tie-aware normal
    approximation (the seed counts' test) within 0.01 of the permutation
    p where half the values tie, where the approximation that assumes no
    ties (scipy's) is further off.  Seen failing with the variance of untied
    ranks in ``page_z``."""
    from nar_gap.analysis.stats import page_l, page_trend, page_z

    rng = np.random.default_rng(3)
    untied = rng.normal(size=(10, 4))
    assert page_l(untied) == stats.page_trend_test(untied).statistic
    tied = np.zeros((16, 4))
    tied[:, 2:] = rng.normal(size=(16, 2)) + [0.0, 0.8]
    found = page_trend(tied)
    z = float(page_z(tied))
    assert stats.norm.sf(z) == pytest.approx(found.p_rises, abs=0.01)
    assert stats.norm.cdf(z) == pytest.approx(found.p_falls, abs=0.01)
    untied_p = stats.page_trend_test(tied, method="asymptotic").pvalue
    assert abs(untied_p - found.p_rises) > abs(stats.norm.sf(z) - found.p_rises)
    assert math.isnan(page_z(np.ones((5, 4))))


def _every_order(blocks: np.ndarray) -> tuple[float, float]:
    """Page's p each way by listing every block's every order of its values:
    the definition, at a cost only a few small blocks allow."""
    observed = st.page_l(blocks)
    orders = list(itertools.permutations(range(blocks.shape[-1])))
    every = np.array(
        [
            st.page_l(
                np.stack([b[list(o)] for b, o in zip(blocks, chosen, strict=True)])
            )
            for chosen in itertools.product(orders, repeat=len(blocks))
        ]
    )
    return float(np.mean(every >= observed)), float(np.mean(every <= observed))


def test_page_p_rows_counts_every_order_of_every_block():
    """Rows of tied and untied blocks, one that never varies: each row's p
    is every order's count (the definition), and the permutation test's
    where it lists every order (2 blocks of 4, 576 orders).  Thirteen blocks
    one swap short of in order: 40 / 24**13, to the last bits (the tail summed
    from the top).
    Seen failing with the blocks' midranks rounded down (ties as if broken),
    with the tail taken as 1 - the rest, and with a row's tied blocks left
    before its varying ones."""
    rng = np.random.default_rng(4)
    rows = rng.integers(0, 3, (6, 3, 3)).astype(float)
    rows[2] = 1.0
    rises, falls = st.page_p_rows(rows)
    for row, r, f in zip(rows, rises, falls, strict=True):
        assert (r, f) == pytest.approx(_every_order(row), rel=1e-12)
    # rows of fewer varying blocks than blocks, a tied block before them
    fewer = np.array([[[1, 1, 1], [0, 1, 2], [2, 0, 1]], [[0, 2, 1], [1] * 3, [1] * 3]])
    rises, falls = st.page_p_rows(fewer.astype(float))
    for row, r, f in zip(fewer, rises, falls, strict=True):
        assert (r, f) == pytest.approx(_every_order(row.astype(float)), rel=1e-12)
    two = rng.integers(0, 3, (2, 4)).astype(float)
    found = st.page_trend(two)
    rises, falls = st.page_p_rows(two[None])
    assert (rises[0], falls[0]) == pytest.approx(
        (found.p_rises, found.p_falls), rel=1e-12
    )
    # 12 blocks in order and one a swap short: L's top is one order of
    # every block, one short of it one adjacent swap in any block (13 x 3).
    near_top = np.array([[[0, 1, 2, 3]] * 12 + [[0, 1, 3, 2]]], float)
    expected = 40 * 24.0**-13
    assert st.page_p_rows(near_top)[0][0] == pytest.approx(expected, rel=1e-9, abs=0)
    with pytest.raises(ValueError, match="must be \\[rows, blocks, conditions\\]"):
        st.page_p_rows(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="must be finite"):
        st.page_p_rows(np.full((1, 2, 3), np.nan))


def _every_flip(d: np.ndarray) -> tuple[float, float]:
    """The signed-rank p each way by listing all 2**n sign flips of ``d``'s
    nonzero differences: the definition, at a cost only small n allow."""
    d = d[d != 0]
    ranks = stats.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    flips = np.array(list(itertools.product((0, 1), repeat=d.size)))
    sums = flips @ ranks
    return float(np.mean(sums >= observed)), float(np.mean(sums <= observed))


def test_the_signed_rank_p_counts_every_sign_flip_where_scipy_approximates():
    """16 pairs with zeros and tied counts, where scipy takes the normal
    approximation; 12 of 24 at zero and the rest all one way, where it gave
    four times the exact 2**-12; 3 of 24 nonzero, where it gave less than
    half the exact 1/8, the least p three coin flips can give.  Seen failing
    with scipy's ``auto`` p."""
    d = np.array([-9, -7, -7, -4, -3, -3, -2, -1, -1, 0, 0, 1, 2, 2, 5, 0], float)
    assert st.signed_rank_p(d) == pytest.approx(_every_flip(d), rel=1e-12)
    one_way = np.array([-22, -8, -5, -4, -4, -3] + [-1] * 6 + [0] * 12, float)
    assert st.signed_rank_p(one_way) == (1.0, 2.0**-12)
    scipy_auto = stats.wilcoxon(one_way, alternative="less").pvalue
    assert scipy_auto > 3.9 * 2.0**-12  # what the tables said before
    few = np.array([2, 3, 5] + [0] * 21, float)
    assert st.signed_rank_p(few) == (0.125, 1.0)
    assert stats.wilcoxon(few, alternative="greater").pvalue < 0.125 / 2


def test_signed_rank_p_rows_tests_each_row_as_on_its_own():
    """Rows of different counts of zeros and ties, one all zeros: each row's
    p is every flip's count (the definition) and the same bits as the row
    tested alone.  Seen failing with each row's zeros not taken off its
    ranks, and with its zeros counted before its nonzero."""
    rng = np.random.default_rng(5)
    rows = rng.integers(-4, 7, (6, 14)).astype(float)
    rows[rows > 4] = 0.0
    rows[2], rows[3, :10] = 0.0, 0.0
    greater, less = st.signed_rank_p_rows(rows)
    for row, g, s in zip(rows, greater, less, strict=True):
        assert (g, s) == st.signed_rank_p(row)
        assert (g, s) == pytest.approx(_every_flip(row) if row.any() else (1, 1))
    with pytest.raises(ValueError, match="must be \\[rows, pairs\\]"):
        st.signed_rank_p_rows(np.zeros(4))


def test_the_signed_rank_p_is_scipy_s_where_scipy_is_exact():
    """No ties or zeros (scipy's exact distribution, any n to 50), and ties
    at 13 pairs or fewer (its enumerated permutation test)."""
    rng = np.random.default_rng(3)
    for n in (1, 7, 20, 40):
        d = rng.normal(0.3, 1.0, n)
        for side, p in zip(("greater", "less"), st.signed_rank_p(d), strict=True):
            exact = stats.wilcoxon(d, alternative=side, method="exact").pvalue
            assert p == pytest.approx(exact, rel=1e-12), (n, side)
    tied = rng.integers(-3, 5, 13).astype(float)
    for side, p in zip(("greater", "less"), st.signed_rank_p(tied), strict=True):
        assert p == pytest.approx(stats.wilcoxon(tied, alternative=side).pvalue)
    assert st.signed_rank_p(np.zeros(5)) == (1.0, 1.0)
    with pytest.raises(ValueError, match="must be finite"):
        st.signed_rank_p([1.0, np.nan])
