"""Notebook 07: supervising the mechanism, and what it buys out of distribution.

Means over seeds are computed beforehand (the validation means:
:func:`nar_gap.analysis.curves.step_means`; the rest are the study's own
tables); these functions only draw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from nar_gap.paper.plots.style import COMPILED_COLOUR, MIN_FONT, integer_ticks, styled

Rows = Sequence[Mapping[str, Any]]


def _measured(over_time: Rows, variant: str, measure: str) -> list[Mapping[str, Any]]:
    """The rows of ``closing_gap_over_time`` of one variant and one measure."""
    return [r for r in over_time if r["variant"] == variant and r["measure"] == measure]


def _learning(ax, val_means: Mapping[str, Mapping[int, float]], variants) -> None:
    """Each variant's mean validation score over training steps."""
    for k, name in enumerate(variants):
        mean = val_means.get(name, {})
        if not mean:
            continue
        ax.plot(
            list(mean),
            list(mean.values()),
            marker="o",
            ms=3,
            color=f"C{k}",
            label=name,
        )
    integer_ticks(ax.xaxis)
    ax.set_xlabel("training step")
    ax.set_ylabel("validation score (mean over seeds)")
    ax.legend()


def _along_trace(middle, inner, over_time: Rows, variants) -> None:
    """External faithfulness on each trace's clock, internal distance per step."""
    for k, name in enumerate(variants):
        mine = _measured(over_time, name, "external")
        if not mine:
            continue
        x = np.array([float(r["position"]) for r in mine])
        mean = np.array([float(r["mean"]) for r in mine])
        std = np.array([float(r["std"]) for r in mine])
        middle.plot(x, mean, marker="o", ms=3, color=f"C{k}", label=name)
        middle.fill_between(x, mean - std, mean + std, color=f"C{k}", alpha=0.15)
    middle.set_xlim(0, 1)
    middle.set_xlabel("position in the trace (each trace's own clock)")
    middle.set_ylabel("external faithfulness (mean over hints)")
    for k, name in enumerate(variants):
        mine = _measured(over_time, name, "internal")
        if mine:
            x = [int(float(r["position"])) for r in mine]
            inner.plot(
                x, [float(r["mean"]) for r in mine], marker="o", ms=3, color=f"C{k}"
            )
    integer_ticks(inner.xaxis)
    inner.set_xlabel("hint step")
    inner.set_ylabel("internal distance to compiled (Eq. 24)")


def _end_points(ax, rows: Rows, variants, algorithm: str) -> None:
    """Test accuracy against internal distance: each variant, compiled a star."""
    for k, name in enumerate(variants):
        row = next(r for r in rows if r["variant"] == name)
        x, y = float(row["internal"]), float(row["accuracy"])
        ax.scatter([x], [y], color=f"C{k}", s=30, zorder=3)
        ax.annotate(
            name, (x, y), xytext=(4, 3), textcoords="offset points", fontsize=MIN_FONT
        )
    compiled = next((r for r in rows if r["variant"] == "compiled"), None)
    if compiled is not None:
        x, y = float(compiled["internal"]), float(compiled["accuracy"])
        ax.scatter([x], [y], marker="*", color=COMPILED_COLOUR, s=80, zorder=3)
        ax.annotate(
            "compiled",
            (x, y),
            xytext=(4, -10),
            textcoords="offset points",
            fontsize=MIN_FONT,
        )
    ax.set_xlabel("internal distance to compiled (Eq. 24)")
    ax.set_ylabel(f"test accuracy (output), {algorithm}")
    ax.set_xlim(left=-0.02)


@styled()
def plot_closing_gap(
    rows: Rows,
    val_means: Mapping[str, Mapping[int, float]],
    over_time: Rows,
    algorithm: str,
) -> Figure:
    """Each recipe against compiled: how it learns, along the trace, where it ends.

    Left: the mean validation score over training steps per variant
    (``val_means``: variant -> step -> mean over seeds,
    :func:`~nar_gap.analysis.curves.step_means`; the ``long`` curve says
    whether the trace is still being learned).  Second: external faithfulness
    along the trace on each trace's own [0, 1] clock (mean over seeds, band:
    one std).  Third: Eq. 24's internal distance at each hint step (mean over
    seeds).  Right: test accuracy against Eq. 24's internal distance to the
    compiled model, one point per variant (mean over seeds), the compiled
    model at (0, its accuracy).
    """
    fig, (left, middle, inner, right) = plt.subplots(1, 4, figsize=(15, 3.4))
    variants = [r["variant"] for r in rows if r["variant"] != "compiled"]
    _learning(left, val_means, variants)
    _along_trace(middle, inner, over_time, variants)
    _end_points(right, rows, variants, algorithm)
    fig.suptitle(f"{algorithm}: supervising the mechanism")
    fig.tight_layout()
    return fig


_CONDITION_AXES = {
    "size": "graph size N (CLRS test graphs; training sizes 4-16)",
    "family": "graph family (N = 16)",
    "weight_scale": "edge weights times (N = 16; training: [0, 1))",
}


def _contender(ax, accuracy: Rows, kind: str, values: list, j: int, name: str):
    """One contender's mean accuracy per condition, its t-interval a bar."""
    mine = {
        r["value"]: r
        for r in accuracy
        if r["condition"] == kind and r["contender"] == name
    }
    shown = [v for v in values if v in mine]
    x = np.array([values.index(v) for v in shown], float) + 0.12 * (j - 1.5)
    mean = np.array([float(mine[v]["mean"]) for v in shown])
    # One model (compiled) has no interval: its bounds are empty cells.
    low = np.array([float(mine[v]["low"] or "nan") for v in shown])
    high = np.array([float(mine[v]["high"] or "nan") for v in shown])
    spread = np.nan_to_num(np.stack([mean - low, high - mean]))
    ax.errorbar(
        x,
        mean,
        yerr=spread,
        fmt="o-" if kind == "size" else "o",
        ms=4,
        lw=1,
        color=f"C{j}",
        label=f"{name} ({next(iter(mine.values()))['recipe']})",
    )


@styled()
def plot_generalisation(table: Rows, algorithm: str) -> Figure:
    """Plain, supervised and compiled accuracy out of distribution.

    One panel per kind of condition in ``table`` (graph size, family, edge
    weight scale): each contender's mean accuracy over seeds with its 95 %
    t-interval as an error bar (compiled is one model: no bar).
    """
    accuracy = [r for r in table if r["measure"] == "accuracy"]
    kinds = [k for k in _CONDITION_AXES if any(r["condition"] == k for r in accuracy)]
    contenders = [
        c
        for c in ("plain", "supervised", "compiled", "compiled_fixed")
        if any(r["contender"] == c for r in accuracy)
    ]
    fig, axes = plt.subplots(
        1, len(kinds), figsize=(4.4 * len(kinds), 3.4), squeeze=False
    )
    for ax, kind in zip(axes[0], kinds, strict=True):
        values = list(
            dict.fromkeys(r["value"] for r in accuracy if r["condition"] == kind)
        )
        for j, name in enumerate(contenders):
            _contender(ax, accuracy, kind, values, j, name)
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(values, rotation=30 if kind == "family" else 0)
        ax.set_xlabel(_CONDITION_AXES[kind])
        ax.set_ylabel("test accuracy (output)")
        # Accuracy lives in [0, 1]: a t-interval past it is cut at the frame.
        ax.set_ylim(max(ax.get_ylim()[0], -0.02), 1.02)
    axes[0][0].legend()
    fig.suptitle(f"{algorithm}: out of distribution (mean over seeds, 95 % t-interval)")
    fig.tight_layout()
    return fig
