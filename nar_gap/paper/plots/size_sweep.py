"""The size sweep: where compiled models stop being exact, and why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from nar_gap.paper.plots.style import COMPACT_TITLES, MIN_FONT, styled

Row = Mapping[str, Any]

_STATUS_MARKERS = {
    "exact": ("o", "tab:green", "exact"),
    "ties": ("s", "tab:orange", "exact up to near-ties"),
    "error": ("X", "tab:red", "error"),
}
_DTYPE_STYLE = {"float32": ("-", -0.17), "float64": ("--", 0.17)}
_MARGINS = (
    (
        "gap_over_resolution",
        "smallest decided gap / resolution",
        "near-ties possible below",
    ),
    ("error_over_tolerance", "largest distance error / tolerance", "an error above"),
)
"""The bottom row: (column, axis label, what lies beyond the line at 1)."""
_FLOOR = 1e-12
"""Where a zero margin is drawn: the log axis has no 0."""


def _size_axis(ax, sizes: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("nodes N")


def _verdicts(
    ax, rows: Sequence[Row], algorithm: str, families: list[str], sizes: list[int]
) -> None:
    """One top panel: each graph's verdict, float32 left of float64 (outlined)."""
    for r in rows:
        if r["algorithm"] != algorithm:
            continue
        marker, colour, _ = _STATUS_MARKERS[r["status"]]
        shift = _DTYPE_STYLE[r["dtype"]][1]
        ax.scatter(
            int(r["num_nodes"]) * 2**shift,
            families.index(r["family"]),
            marker=marker,
            color=colour,
            s=34,
            edgecolors="black" if r["dtype"] == "float64" else "none",
            linewidths=0.6,
        )
    ax.set_yticks(range(len(families)), families)
    ax.set_ylim(len(families) - 0.5, -0.5)
    _size_axis(ax, sizes)
    ran = any(r["algorithm"] == algorithm for r in rows)
    ax.set_title(
        f"compiled {algorithm} vs dm-clrs (left: float32, right, outlined: float64)"
        if ran
        else f"{algorithm}: not run"
    )


def _margin_rows(rows: Sequence[Row], family: str, dtype: str, key: str) -> list[Row]:
    """Bellman-Ford's rows of one family and dtype with a finite ``key``, by size."""
    return sorted(
        (
            r
            for r in rows
            if r["algorithm"] == "bellman_ford"
            and r["family"] == family
            and r["dtype"] == dtype
            and np.isfinite(float(r[key]))
        ),
        key=lambda r: int(r["num_nodes"]),
    )


def _margins(
    ax, rows: Sequence[Row], families: list[str], sizes: list[int], margin: tuple
) -> None:
    """One bottom panel: a Bellman-Ford margin over size, the line at 1 named."""
    key, label, below = margin
    for colour, family in enumerate(families):
        for dtype, (style, _) in _DTYPE_STYLE.items():
            mine = _margin_rows(rows, family, dtype, key)
            if not mine:
                continue
            ax.plot(
                [int(r["num_nodes"]) for r in mine],
                [max(float(r[key]), _FLOOR) for r in mine],
                style,
                marker="o",
                ms=3,
                color=f"C{colour}",
                label=family if dtype == "float32" else None,
            )
    ax.axhline(1.0, color="black", lw=0.8)
    ax.text(  # x in axes units, y in data units: just beside the line
        0.01,
        1.0,
        f"{below} 1",
        transform=ax.get_yaxis_transform(),
        fontsize=MIN_FONT,
        va="top" if below.endswith("below") else "bottom",
    )
    ax.set_yscale("log")
    _size_axis(ax, sizes)
    ax.set_ylabel(label)
    ax.set_title(f"Bellman-Ford: {label} (solid float32, dashed float64)")


@styled(COMPACT_TITLES)
def plot_size_sweep(rows: Sequence[Row]) -> Figure:
    """Where compiled models stop being exact, and why (the size sweep).

    Top: each graph's verdict against dm-clrs, float32 left of float64.
    Bottom (Bellman-Ford): the smallest gap dm-clrs decided over the
    model's resolution (ties are possible below 1), and the largest distance
    error over the exactness tolerance (an error above 1).
    """
    families = list(dict.fromkeys(r["family"] for r in rows))
    sizes = sorted({int(r["num_nodes"]) for r in rows})
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, algorithm in zip(axes[0], ("bfs", "bellman_ford"), strict=True):
        _verdicts(ax, rows, algorithm, families, sizes)
    handles = [
        Line2D([], [], ls="", marker=m, color=c, label=label)
        for m, c, label in _STATUS_MARKERS.values()
    ]
    axes[0, 1].legend(handles=handles, loc="lower left")
    for ax, margin in zip(axes[1], _MARGINS, strict=True):
        _margins(ax, rows, families, sizes, margin)
    axes[1, 0].legend(ncol=2)
    fig.tight_layout()
    return fig
