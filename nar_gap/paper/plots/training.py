"""Figures over training: validation curves (notebook 02) and stability (D.8).

The mean over seeds is computed beforehand
(:func:`nar_gap.analysis.curves.step_means`); these functions only draw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, SymmetricalLogLocator

from nar_gap.paper.plots.style import integer_ticks, styled


@styled()
def plot_validation_curves(
    history: Sequence[dict], title: str, means: Mapping[str, Mapping[int, float]]
) -> Figure:
    """Validation score (left) and training loss (right) per seed over training.

    ``history``: rows of ``seed, step, val_score, train_loss``, one thin line
    per seed.  ``means``: ``val_score`` and ``train_loss``, each step's mean
    over seeds (:func:`~nar_gap.analysis.curves.step_means`), drawn bold.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    seeds = sorted({r["seed"] for r in history})
    for seed in seeds:
        mine = sorted(
            (r for r in history if r["seed"] == seed), key=lambda r: r["step"]
        )
        steps = [r["step"] for r in mine]
        left.plot(steps, [r["val_score"] for r in mine], color="C0", lw=0.6, alpha=0.4)
        right.plot(
            steps, [r["train_loss"] for r in mine], color="C1", lw=0.6, alpha=0.4
        )
    for ax, key, colour in ((left, "val_score", "C0"), (right, "train_loss", "C1")):
        mean = means[key]
        ax.plot(
            list(mean),
            list(mean.values()),
            color=colour,
            lw=2,
            label=f"mean of {len(seeds)} seeds",
        )
        integer_ticks(ax.xaxis)
        ax.set_xlabel("training step")
        ax.legend()
    left.set_ylabel("validation score (output)")
    right.set_ylabel("training loss at that step")
    # Step 0 (the untrained model) has no training loss (NaN): a log axis
    # needs the finite losses positive, and NaN must not switch it off.
    losses = np.asarray([r["train_loss"] for r in history], np.float64)
    finite = losses[np.isfinite(losses)]
    if finite.size and finite.min() > 0:
        right.set_yscale("log")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _step_axis(ax) -> None:
    """A symmetric log axis of whole training steps, step 0 included.

    Evaluations double from step 1 (the collapse) before they are evenly
    spaced: a symmetric log axis shows both.  A tick between two whole steps
    would be labelled by rounding, so it is left blank.
    """
    ax.set_xscale("symlog", linthresh=1)
    ax.xaxis.set_major_locator(SymmetricalLogLocator(base=10, linthresh=1))
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _: f"{v:.0f}" if float(v).is_integer() else "")
    )
    ax.set_xlabel("training step (log scale past 1)")


@styled()
def plot_stability(rows: Sequence[dict], title: str) -> Figure:
    """Appendix D.8: accuracy, internal distance and parameter drift over training.

    One thin line per (start, seed), coloured by start (compiled / random).
    """
    panels = (
        ("accuracy", "test accuracy"),
        ("internal", "internal distance"),
        ("param_drift", "relative parameter drift"),
    )
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    starts = list(dict.fromkeys(r["start"] for r in rows))
    for colour, start in enumerate(starts):
        seeds = sorted({r["seed"] for r in rows if r["start"] == start})
        for seed in seeds:
            mine = sorted(
                (r for r in rows if r["start"] == start and r["seed"] == seed),
                key=lambda r: r["step"],
            )
            steps = [r["step"] for r in mine]
            for ax, (key, _) in zip(axes, panels, strict=True):
                ax.plot(
                    steps,
                    [r[key] for r in mine],
                    color=f"C{colour}",
                    lw=0.8,
                    alpha=0.7,
                    label=start if seed == seeds[0] else None,
                )
    for ax, (_, label) in zip(axes, panels, strict=True):
        _step_axis(ax)
        ax.set_ylabel(label)
    # Compiled weights reach ~1e7, so a run started there drifts by ~1e-6 of
    # their norm while one from random sits at ~1: only a log axis shows both
    # (step 0, drift exactly 0, is left off it).
    if any(r["param_drift"] > 0 for r in rows):
        axes[2].set_yscale("log")
    axes[0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    return fig
