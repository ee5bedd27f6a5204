"""Figures: one function per figure kind; data in, matplotlib Figure out.

Nothing here computes a reported number.  Weight matrices are drawn with the
compiled layout's labels on both axes (the paper's Figures 6-7), cropped to
the dimensions a compiled model uses, on a symmetric log colour scale because
compiled weights span ~1e-2 (leak cancellation) to ~1e7 (eligibility).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # files, not windows; notebooks display the saved files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import SymLogNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

UNUSED = "unused"


def _used(labels: Sequence[str]) -> np.ndarray:
    return np.array([not label.endswith(UNUSED) for label in labels])


def _blocks(model) -> list[tuple[str, np.ndarray, tuple[str, ...], tuple[str, ...]]]:
    """(title, matrix, row labels, column labels) of every compiled block."""
    layout = model.layout
    labels = layout.labels()
    proc = model.params["net"]["processor"]
    arr = lambda x: np.asarray(x, np.float64)  # noqa: E731
    blocks = [
        ("values W_m", arr(proc["value"]["kernel"]), labels["z"], labels["hidden"]),
        ("skip W_s", arr(proc["skip"]["kernel"]), labels["z"], labels["hidden"]),
        (
            "senders W_1",
            arr(proc["sender"]["kernel"]),
            labels["z"],
            labels["pre_attention"],
        ),
        (
            "receivers W_2",
            arr(proc["receiver"]["kernel"]),
            labels["z"],
            labels["pre_attention"],
        ),
        (
            "edges W_e",
            arr(proc["edge"]["kernel"]),
            labels["edge"],
            labels["pre_attention"],
        ),
        ("head a", arr(proc["head_0"]["kernel"]).T, ("a",), labels["pre_attention"]),
    ]
    biases = np.stack(
        [arr(proc[name]["bias"]) for name in ("value", "skip", "sender", "receiver")]
    )
    blocks.append(
        ("biases", biases, ("b_m", "b_s", "b_1", "b_2"), labels["pre_attention"])
    )
    return blocks


def _shown_block(
    title: str, matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str]
) -> tuple[np.ndarray, list[str], list[str]]:
    """The used part of a block: (matrix, row labels, column labels)."""
    # The head's single row and the biases' rows (the sub-layers) always show.
    keep_r = (
        _used(rows) if title not in ("head a", "biases") else np.ones(len(rows), bool)
    )
    keep_c = _used(cols)
    if title == "biases":
        keep_c = np.ones(matrix.shape[1], bool) & (np.abs(matrix).sum(0) > 0)
        col_names = [f"c{k}" for k in np.flatnonzero(keep_c)]
    else:
        col_names = list(np.asarray(cols)[keep_c])
    shown = matrix[np.ix_(keep_r, keep_c)]
    return shown, list(np.asarray(rows)[keep_r]), col_names


def plot_compiled_weights(model, blocks: Sequence[str] | None = None) -> Figure:
    """Heat maps of a compiled model's processor weights, rows and columns named.

    Panels are as wide as their used columns; consecutive panels with the same
    rows (the ``z`` features) share one set of row labels, drawn once at the
    left.  A block with nothing used (BFS has no edge features) is left out.

    Args:
      model: a :class:`nar_gap.compiler.CompiledModel`.
      blocks: titles to draw (default: all of values, skip, senders,
        receivers, edges, head, biases).
    """
    chosen = []
    for title, matrix, rows, cols in _blocks(model):
        if blocks is not None and title not in blocks:
            continue
        shown, row_names, col_names = _shown_block(title, matrix, rows, cols)
        if shown.size:
            chosen.append((title, shown, row_names, col_names))
    fig, axes = plt.subplots(
        1,
        max(len(chosen), 1),
        figsize=(2.0 + 0.42 * sum(m.shape[1] for _, m, _, _ in chosen), 4.6),
        squeeze=False,
        layout="constrained",
        gridspec_kw={"width_ratios": [max(m.shape[1], 1) for _, m, _, _ in chosen]}
        if chosen
        else None,
    )
    values = np.concatenate([np.abs(m).ravel() for _, m, _, _ in chosen] or [[1.0]])
    vmax = max(float(values.max()), 1e-2)
    norm = SymLogNorm(linthresh=1e-2, vmin=-vmax, vmax=vmax)
    image = None
    previous_rows: list[str] | None = None
    for ax, (title, shown, row_names, col_names) in zip(axes[0], chosen, strict=True):
        image = ax.imshow(shown, cmap="RdBu_r", norm=norm, aspect="auto")
        ax.set_title(title, fontsize=9)
        same_rows = row_names == previous_rows
        ax.set_yticks(range(shown.shape[0]), [] if same_rows else row_names, fontsize=7)
        ax.set_xticks(range(shown.shape[1]), col_names, rotation=90, fontsize=7)
        previous_rows = row_names
    if image is not None:
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="weight (symlog)")
    fig.suptitle(
        f"compiled {model.program.name}, hidden size {model.layout.hidden_size}",
        fontsize=10,
    )
    return fig


def plot_attention_steps(
    attention: np.ndarray, title: str = "attention", max_steps: int = 8
) -> Figure:
    """Attention of each step, ``(S, n, n)`` (rows receivers, columns senders)."""
    steps = min(len(attention), max_steps)
    fig, axes = plt.subplots(1, steps, figsize=(2.4 * steps, 2.6), squeeze=False)
    for t, ax in enumerate(axes[0]):
        ax.imshow(attention[t], vmin=0.0, vmax=1.0, cmap="Greys")
        ax.set_title(f"step {t}", fontsize=9)
        ax.set_xlabel("sender", fontsize=7)
        if t == 0:
            ax.set_ylabel("receiver", fontsize=7)
        ax.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=10)
    return fig


def close(fig: Figure) -> None:
    """Release a figure once it is saved (long sweeps make many)."""
    plt.close(fig)


def plot_measure_vs_accuracy(
    measure: np.ndarray,
    accuracy: np.ndarray,
    band,
    xlabel: str,
    title: str,
) -> Figure:
    """Figures 1 and 10: one point per seed, the fitted line and its 95 % band.

    ``band`` is a :class:`nar_gap.analysis.faithfulness.FitBand` computed beforehand.
    """
    fig, ax = plt.subplots(figsize=(4.6, 3.4))
    ax.fill_between(band.x, band.lower, band.upper, color="C0", alpha=0.2, lw=0)
    ax.plot(band.x, band.fit, color="C0", lw=1.5, label="least squares, 95 % band")
    ax.scatter(measure, accuracy, s=14, color="C1", zorder=3, label="seeds")
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel("test accuracy (output)", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    ax.tick_params(labelsize=7)
    return fig


def plot_series_over_time(
    series: dict[str, np.ndarray],
    xlabel: str,
    ylabel: str,
    title: str,
    x: np.ndarray | None = None,
) -> Figure:
    """Figures 2, 4 and 11: per-seed curves ``[K, S]`` (thin) and their mean (bold).

    NaN marks steps where no sample counts; they are left as gaps.
    """
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    for colour, (name, values) in enumerate(series.items()):
        values = np.atleast_2d(np.asarray(values, np.float64))
        grid = np.arange(values.shape[1]) if x is None else np.asarray(x)
        for row in values:
            ax.plot(grid, row, color=f"C{colour}", lw=0.5, alpha=0.25)
        counted = np.sum(~np.isnan(values), axis=0)
        mean = np.where(
            counted > 0, np.nansum(values, axis=0) / np.maximum(counted, 1), np.nan
        )
        ax.plot(grid, mean, color=f"C{colour}", lw=2, label=f"{name} (mean)")
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    ax.tick_params(labelsize=7)
    return fig


def plot_attention_comparison(
    compiled: np.ndarray, learned: np.ndarray, learned_title: str, max_steps: int = 8
) -> Figure:
    """Figure 3: compiled attention (top) above a learned model's (bottom), per step."""
    steps = min(len(compiled), max_steps)
    fig, axes = plt.subplots(2, steps, figsize=(2.2 * steps, 4.6), squeeze=False)
    for row, (att, name) in enumerate(
        ((compiled, "compiled"), (learned, learned_title))
    ):
        for t in range(steps):
            ax = axes[row, t]
            ax.imshow(att[t], vmin=0.0, vmax=1.0, cmap="Greys")
            ax.set_xticks([])
            ax.set_yticks([])
            if row == 0:
                ax.set_title(f"step {t}", fontsize=8)
            if t == 0:
                ax.set_ylabel(f"{name}\nreceiver", fontsize=7)
    fig.suptitle("attention (rows receivers, columns senders)", fontsize=9)
    return fig


def plot_solution_clusters(
    distances: np.ndarray,
    linkage: np.ndarray,
    threshold: float,
    labels: Sequence[str],
    title: str,
) -> Figure:
    """Figure 5: Ward dendrogram beside the inter-solution distance matrix."""
    from scipy.cluster import hierarchy

    fig, (left, right) = plt.subplots(
        1, 2, figsize=(9, 4), gridspec_kw={"width_ratios": [1, 1.1]}
    )
    order = np.arange(len(labels))
    if len(linkage):
        tree = hierarchy.dendrogram(
            linkage,
            ax=left,
            labels=list(labels),
            color_threshold=threshold,
            leaf_font_size=6,
        )
        order = np.asarray(tree["leaves"])
        left.axhline(threshold, color="grey", ls="--", lw=0.8)
    left.set_ylabel("Ward merge height", fontsize=8)
    left.set_title(title, fontsize=9)
    image = right.imshow(distances[np.ix_(order, order)], cmap="viridis", vmin=0)
    right.set_title("internal distance between seeds", fontsize=9)
    right.set_xticks([])
    right.set_yticks([])
    fig.colorbar(image, ax=right, fraction=0.046)
    return fig


def plot_validation_curves(history: Sequence[dict], title: str) -> Figure:
    """Validation score (left) and training loss (right) per seed over training.

    ``history``: rows of ``seed, step, val_score, train_loss``.  One thin line
    per seed, the mean over seeds in bold.
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
    by_step = sorted({r["step"] for r in history})
    for ax, key, colour in ((left, "val_score", "C0"), (right, "train_loss", "C1")):
        mean = [np.mean([r[key] for r in history if r["step"] == s]) for s in by_step]
        ax.plot(by_step, mean, color=colour, lw=2, label=f"mean of {len(seeds)} seeds")
        ax.set_xlabel("training step", fontsize=8)
        ax.tick_params(which="both", labelsize=7)
        ax.legend(fontsize=7, frameon=False)
    left.set_ylabel("validation score (output)", fontsize=8)
    right.set_ylabel("training loss at that step", fontsize=8)
    if history and min(r["train_loss"] for r in history) > 0:
        right.set_yscale("log")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


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
    ax.set_xlabel(
        "cut height (average: mean internal distance; Ward: merge cost)", fontsize=8
    )
    ax.set_ylabel("clusters", fontsize=8)
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    ax.tick_params(labelsize=7)
    return fig


def plot_landscape(
    alphas: np.ndarray, betas: np.ndarray, losses: np.ndarray, title: str
) -> Figure:
    """Appendix D.11: contour (left) and surface (right) of a loss landscape.

    Losses are drawn on a log10 scale (compiled minima rise by orders of
    magnitude within the plotted square).
    """
    values = np.log10(np.maximum(np.asarray(losses, np.float64), 1e-12))
    grid_a, grid_b = np.meshgrid(alphas, betas, indexing="ij")
    fig = plt.figure(figsize=(9, 3.8))
    left = fig.add_subplot(1, 2, 1)
    contour = left.contourf(grid_a, grid_b, values, levels=20, cmap="viridis")
    left.plot([0], [0], "r+", ms=10)
    left.set_xlabel("direction 1", fontsize=8)
    left.set_ylabel("direction 2", fontsize=8)
    fig.colorbar(contour, ax=left, label="log10 loss")
    right = fig.add_subplot(1, 2, 2, projection="3d")
    right.plot_surface(grid_a, grid_b, values, cmap="viridis", linewidth=0)
    right.set_zlabel("log10 loss", fontsize=8)
    right.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=10)
    return fig


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
        # Evaluations double from step 1 (the collapse) before they are evenly
        # spaced: a symmetric log axis shows both, step 0 included.
        ax.set_xscale("symlog", linthresh=1)
        ax.xaxis.set_major_locator(
            matplotlib.ticker.SymmetricalLogLocator(base=10, linthresh=1)
        )
        ax.xaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.0f}")
        )
        ax.set_xlabel("training step (log scale past 1)", fontsize=8)
        ax.set_ylabel(label, fontsize=8)
        ax.tick_params(labelsize=7)
    # Compiled weights reach ~1e7, so a run started there drifts by ~1e-6 of
    # their norm while one from random sits at ~1: only a log axis shows both
    # (step 0, drift exactly 0, is left off it).
    if any(r["param_drift"] > 0 for r in rows):
        axes[2].set_yscale("log")
    axes[0].legend(fontsize=7, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
