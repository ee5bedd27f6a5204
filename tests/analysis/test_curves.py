"""Means over seeds of the curves a figure draws bold."""

from __future__ import annotations

import warnings

import numpy as np

from nar_gap.analysis.curves import seed_curves, step_means


def test_seed_mean_skips_nan_and_is_nan_where_no_seed_counts():
    values = np.array([[0.2, np.nan, np.nan], [0.6, 0.5, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # np.nanmean would warn on the empty column
        curves = seed_curves(values)
    np.testing.assert_array_equal(curves.mean, [0.4, 0.5, np.nan])
    np.testing.assert_array_equal(curves.per_seed, values)


def test_one_curve_is_one_seed():
    curves = seed_curves([1.0, 2.0])
    assert curves.per_seed.shape == (1, 2)
    np.testing.assert_array_equal(curves.mean, [1.0, 2.0])


def test_step_means_read_numbers_or_a_csv_s_strings_alike():
    rows = [
        {"seed": 0, "step": 5, "val_score": 0.5},
        {"seed": 1, "step": 5, "val_score": 0.75},
        {"seed": 0, "step": 0, "val_score": 0.25},
    ]
    as_text = [{k: str(v) for k, v in r.items()} for r in rows]
    assert step_means(rows, "val_score") == {0: 0.25, 5: 0.625}
    assert list(step_means(rows, "val_score")) == [0, 5]  # steps in order
    assert step_means(as_text, "val_score") == step_means(rows, "val_score")


def test_a_nan_makes_its_step_s_mean_nan():
    rows = [{"step": 0, "loss": float("nan")}, {"step": 1, "loss": 2.0}]
    means = step_means(rows, "loss")
    assert np.isnan(means[0]) and means[1] == 2.0
