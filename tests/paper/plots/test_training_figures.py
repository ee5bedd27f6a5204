"""Figures over training: validation curves and stability, on the Figure objects."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
from figure_ticks import assert_whole_steps

from nar_gap.analysis.curves import step_means
from nar_gap.paper import plots


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _validation(history):
    means = {key: step_means(history, key) for key in ("val_score", "train_loss")}
    return plots.plot_validation_curves(history, "bfs", means=means)


def test_validation_curves_tick_whole_training_steps():
    history = [
        {"seed": seed, "step": step, "val_score": 0.5, "train_loss": 1 / (step + 1)}
        for seed in (0, 1)
        for step in range(4)
    ]
    fig = _validation(history)
    for ax in fig.axes:
        assert_whole_steps(ax)


def test_validation_curves_keep_the_log_axis_with_step_0s_nan_loss():
    """Step 0 validates the untrained model and has no training loss (NaN):
    the loss axis stays logarithmic over the finite losses."""
    history = [
        {
            "seed": seed,
            "step": step,
            "val_score": 0.5,
            "train_loss": float("nan") if step == 0 else 1 / step,
        }
        for seed in (0, 1)
        for step in range(4)
    ]
    fig = _validation(history)
    assert fig.axes[1].get_yscale() == "log"


def test_validation_curves_stay_linear_when_a_finite_loss_is_not_positive():
    history = [
        {"seed": 0, "step": step, "val_score": 0.5, "train_loss": loss}
        for step, loss in ((0, float("nan")), (1, 0.0), (2, 0.5))
    ]
    fig = _validation(history)
    assert fig.axes[1].get_yscale() == "linear"


@pytest.mark.parametrize("steps", [(0, 1, 2, 3), (0, 1, 2, 4, 8, 16, 32, 64, 250)])
def test_stability_ticks_whole_steps_on_its_symlog_axis(steps):
    rows = [
        {
            "start": start,
            "seed": seed,
            "step": step,
            "accuracy": 0.5,
            "internal": 0.3,
            "param_drift": 0.1 * step,
        }
        for start in ("compiled", "random")
        for seed in (0, 1)
        for step in steps
    ]
    fig = plots.plot_stability(rows, "bfs")
    for ax in fig.axes:
        assert ax.get_xscale() == "symlog"
        assert_whole_steps(ax)
