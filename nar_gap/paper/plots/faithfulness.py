"""Section 4's figures: Figures 1-5, 10 and 11, and the clusters' sensitivity.

Every number a figure prints or draws as a summary (Table 1's r, p and rho,
the fitted band, the mean over seeds) is computed in :mod:`nar_gap.analysis`
and passed in; these functions only draw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from nar_gap.analysis.curves import SeedCurves
from nar_gap.analysis.stats import MIN_SEEDS_FOR_P
from nar_gap.paper.plots.style import (
    BODY,
    COMPACT_TITLES,
    COMPILED_COLOUR,
    MIN_FONT,
    NEUTRAL,
    SOURCE_COLOUR,
    colour_bar,
    integer_ticks,
    styled,
)


def _correlation_line(row: Mapping[str, Any]) -> str:
    """Pearson r with its p-value, and Spearman rho: Table 1's row, as text.

    The p-value is Table 1's permutation p (none below
    :data:`~nar_gap.analysis.stats.MIN_SEEDS_FOR_P` seeds), so the figure and
    the table cannot disagree.
    """
    n, r, rho = row["n"], row["pearson_r"], row["spearman_rho"]
    if not np.isfinite(r):
        return f"n = {n}: r undefined (fewer than 3 seeds or a constant input)"
    if n < MIN_SEEDS_FOR_P:
        p_text = f"p not computed (n < {MIN_SEEDS_FOR_P})"
    else:
        p_text = f"p = {row['pearson_p']:.2g} (permutation)"
    return f"n = {n}: Pearson r = {r:.2f}, {p_text}; Spearman \u03c1 = {rho:.2f}"


@styled(COMPACT_TITLES)
def plot_measure_vs_accuracy(
    measure: np.ndarray,
    accuracy: np.ndarray,
    band,
    xlabel: str,
    title: str,
    correlation: Mapping[str, Any],
    compiled: tuple[float, float] | None = (0.0, 1.0),
) -> Figure:
    """Figures 1 and 10: one point per seed, the fitted line and its 95 % band.

    The title's second line gives r, its p-value and rho (a line alone does
    not say how strong the relation is); the compiled model is marked where
    it sits (a star), the point the seeds are measured against.

    Args:
      measure: ``[K]``, the measure of each seed.
      accuracy: ``[K]``, the test accuracy of each seed.
      band: a :class:`nar_gap.analysis.stats.FitBand` computed beforehand.
      xlabel: the measure's name.
      title: the figure's title; the correlations go on a line below it.
      correlation: this measure's Table 1 row (``n``, ``pearson_r``,
        ``pearson_p``, ``spearman_rho``;
        :func:`nar_gap.analysis.stats.correlation_table`).
      compiled: the compiled model's (measure, accuracy); None draws no star.
        The default is Figure 1's (distance 0, accuracy 1).
    """
    fig, ax = plt.subplots(figsize=(4.6, 3.6))
    ax.fill_between(band.x, band.lower, band.upper, color="C0", alpha=0.2, lw=0)
    ax.plot(band.x, band.fit, color="C0", lw=1.5, label="least squares, 95 % band")
    ax.scatter(measure, accuracy, s=14, color="C1", zorder=3, label="seeds")
    if compiled is not None:
        ax.scatter(
            *compiled,
            s=90,
            marker="*",
            color=COMPILED_COLOUR,
            zorder=4,
            label="compiled",
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (output)")
    ax.set_title(f"{title}\n{_correlation_line(correlation)}")
    ax.legend()
    return fig


def _write_counts(ax, grid: np.ndarray, counts: np.ndarray) -> None:
    """How many graphs each point averages, written just above the x axis."""
    for position, count in zip(grid, counts, strict=True):
        ax.text(
            position,
            0.03,
            f"{int(count)}",
            transform=ax.get_xaxis_transform(),  # x in data, y in axes
            ha="center",
            va="bottom",
            fontsize=MIN_FONT,
            color="0.3",
        )


@styled()
def plot_series_over_time(
    series: Mapping[str, SeedCurves],
    xlabel: str,
    ylabel: str,
    title: str,
    x: np.ndarray | None = None,
    counts: Sequence[int] | np.ndarray | None = None,
    ylim: tuple[float, float] | None = (0.0, 1.0),
) -> Figure:
    """Figures 2, 4 and 11: per-seed curves ``[K, S]`` (thin) and their mean (bold).

    ``series``: name -> :func:`nar_gap.analysis.curves.seed_curves` of its
    per-seed values.  NaN marks steps where no sample counts; they are left
    as gaps.  Without ``x`` the x axis is the step index, ticked at whole
    steps only.

    ``ylim``: the y range, by default the whole [0, 1] of a fraction or a
    normalised distance, so a dip of a percent looks like one and not like a
    collapse (None: matplotlib's own range).  ``counts``: how many graphs
    each point averages (one per x value), written above the x axis, so a
    point resting on a handful of graphs is seen as such.
    """
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    grid = None
    for colour, (name, curves) in enumerate(series.items()):
        values = curves.per_seed
        grid = np.arange(values.shape[1]) if x is None else np.asarray(x)
        for row in values:
            ax.plot(grid, row, color=f"C{colour}", lw=0.5, alpha=0.25)
        ax.plot(
            grid,
            curves.mean,
            color=f"C{colour}",
            lw=2,
            label=f"{name} (mean)",
            clip_on=ylim is None,  # a mean at the top of [0, 1] stays visible
        )
    if x is None:  # the x axis counts steps
        integer_ticks(ax.xaxis)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if counts is not None:
        counts = np.asarray(counts)
        if grid is None or counts.shape != grid.shape:
            raise ValueError(
                f"{counts.size} counts for {0 if grid is None else grid.size} points"
            )
        _write_counts(ax, grid, counts)
        xlabel = f"{xlabel}\n(numbers above the axis: graphs counted at each point)"
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if counts is None:
        ax.legend()
    else:  # above the counts, below curves that sit near 1
        ax.legend(loc="lower left", bbox_to_anchor=(0, 0.1))
    return fig


def _mark_source(ax, source: int) -> None:
    """Triangles on both edges of a heat map, at the source's column and row."""
    style = dict(color=SOURCE_COLOUR, ms=6, clip_on=False, zorder=5, ls="none")
    ax.plot([source], [1.0], marker="v", transform=ax.get_xaxis_transform(), **style)
    ax.plot([0.0], [source], marker=">", transform=ax.get_yaxis_transform(), **style)


@styled(COMPACT_TITLES)
def plot_attention_comparison(
    compiled: np.ndarray,
    learned: np.ndarray,
    learned_title: str,
    max_steps: int = 8,
    source: int | None = None,
) -> Figure:
    """Figure 3: compiled attention (top) above a learned model's (bottom), per step.

    Every panel on one 0..1 scale with one colour bar, so a grey cell means the
    same weight in both rows; nodes are numbered on the axes (sender j across,
    receiver i down) and ``source``, when given, is marked by red triangles.
    """
    steps = min(len(compiled), max_steps)
    fig, axes = plt.subplots(
        2, steps, figsize=(2.2 * steps + 1.0, 4.8), squeeze=False, layout="constrained"
    )
    image = None
    for row, (att, name) in enumerate(
        ((compiled, "compiled"), (learned, learned_title))
    ):
        for t in range(steps):
            ax = axes[row, t]
            image = ax.imshow(att[t], vmin=0.0, vmax=1.0, cmap="Greys")
            for axis in (ax.xaxis, ax.yaxis):
                integer_ticks(axis)
            if source is not None:
                _mark_source(ax, source)
            if row == 0:
                ax.set_title(f"step {t}")
            else:
                ax.set_xlabel("sender j")
            if t == 0:
                ax.set_ylabel(f"{name}\nreceiver i")
    colour_bar(fig, image, "attention weight", ax=axes.ravel().tolist(), shrink=0.8)
    marked = f"; red triangles: source node {source}" if source is not None else ""
    fig.suptitle(f"attention (rows receivers i, columns senders j){marked}")
    return fig


def _cluster_legend(ax) -> None:
    """What the dendrogram's colours mean: a cluster, above the cut, the cut."""
    ax.legend(
        handles=[
            Line2D([], [], color="C1", label="a cluster (one colour each)"),
            Line2D([], [], color=NEUTRAL, label="above the cut; single seeds"),
            Line2D([], [], color=NEUTRAL, ls="--", label="cut"),
        ],
        loc="upper right",
    )


@styled()
def plot_solution_clusters(
    distances: np.ndarray,
    linkage: np.ndarray,
    threshold: float,
    labels: Sequence[str],
    title: str,
) -> Figure:
    """Figure 5: Ward dendrogram beside the inter-solution distance matrix.

    Leaves and matrix rows are labelled with ``labels`` (the seeds).  Each
    cluster of two or more seeds has its own colour; links above the cut,
    and with them every seed alone in its cluster, are grey: scipy's default
    drew them in blue, which read as one more cluster.
    """
    from scipy.cluster import hierarchy

    fig, (left, right) = plt.subplots(
        1, 2, figsize=(9, 4), gridspec_kw={"width_ratios": [1, 1.1]}
    )
    left.tick_params(axis="y", labelsize=BODY)  # merge heights: as first drawn
    order = np.arange(len(labels))
    if len(linkage):
        tree = hierarchy.dendrogram(
            linkage,
            ax=left,
            labels=list(labels),
            color_threshold=threshold,
            above_threshold_color=NEUTRAL,
            leaf_font_size=plt.rcParams["axes.labelsize"],  # the seeds: a label
        )
        order = np.asarray(tree["leaves"])
        left.axhline(threshold, color=NEUTRAL, ls="--", lw=0.8)
        left.set_ylim(top=1.3 * left.get_ylim()[1])  # room for the legend
        _cluster_legend(left)
    left.set_xlabel("seed")
    left.set_ylabel("Ward merge height")
    left.set_title(title)
    image = right.imshow(distances[np.ix_(order, order)], cmap="viridis", vmin=0)
    right.set_title("internal distance between seeds")
    names = [str(labels[k]) for k in order]
    right.set_xticks(range(len(names)), names, rotation=90)
    right.set_yticks(range(len(names)), names)
    colour_bar(fig, image, ax=right, fraction=0.046)
    return fig


@styled()
def plot_cluster_sensitivity(
    heights: np.ndarray,
    counts: dict[str, np.ndarray],
    widest_gap: tuple[float, int],
    title: str,
) -> Figure:
    """Figure 5's companion: the number of clusters at every cut height.

    One step curve per linkage (``counts[name]`` at each of ``heights``); the
    widest-gap rule's cut (on the Ward dendrogram) is marked.  Flat stretches
    are cut heights where the count does not depend on the exact choice.
    """
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for colour, (name, values) in enumerate(counts.items()):
        ax.step(heights, values, where="post", color=f"C{colour}", lw=1.5, label=name)
    cut, count = widest_gap
    ax.scatter([cut], [count], color="black", zorder=3, s=18, label="widest gap (Ward)")
    ax.set_xlabel("cut height (average: mean internal distance; Ward: merge cost)")
    ax.set_ylabel("clusters")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title(title)
    ax.legend()
    return fig
