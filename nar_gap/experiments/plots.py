"""Figures: one function per figure kind; data in, matplotlib Figure out.

Nothing here computes a reported number.  Weight matrices are drawn with the
compiled layout's labels on both axes (the paper's Figures 6-7), cropped to
the dimensions a compiled model uses, on a symmetric log colour scale because
compiled weights span ~1e-2 (leak cancellation) to ~1e7 (eligibility).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files, not windows; notebooks display the saved files

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.colors import Normalize, SymLogNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from nar_gap.analysis.stats import MIN_SEEDS_FOR_P, correlation_table  # noqa: E402

UNUSED = "unused"
BIAS = "bias"
OVERFLOW_COLOUR = "magenta"
"""Landscape cells whose loss overflowed (inf or NaN): no viridis colour."""
NEUTRAL = "grey"
"""Dendrogram links above the cut, singletons included: no cluster's colour."""
MIN_FONT = 7
"""Smallest text, in points at the saved size."""
WEIGHT_CELL = 0.22
"""Inches per weight-matrix cell: room for one rotated 7-pt label."""
ROW_LABEL_WIDTH = 1.6
"""Inches for one more set of row labels inside a line of weight panels."""
WEIGHT_COLUMNS_PER_LINE = 28
"""Weight panels wrap to a new line past this many columns, so Figures 6-7
stay about 8 inches wide and are shown near their saved size."""


def _integer_ticks(axis: Axis) -> None:
    """Steps are counts: tick whole numbers only (no "step 2.5")."""
    axis.set_major_locator(MaxNLocator(integer=True))


def _used(labels: Sequence[str]) -> np.ndarray:
    return np.array([not label.endswith(UNUSED) for label in labels])


def _blocks(model) -> list[tuple[str, np.ndarray, tuple[str, ...], tuple[str, ...]]]:
    """(title, matrix, row labels, column labels) of every compiled block.

    Each layer's bias is its matrix's last row, labelled :data:`BIAS`: it adds
    to the same outputs (columns) as the kernel, so it is read against the
    same column labels.  (A separate bias panel could only number its columns:
    ``W_m``'s outputs are hidden features, ``W_1``'s are pre-attention ones.)
    """
    layout = model.layout
    labels = layout.labels()
    proc = model.params["net"]["processor"]
    arr = lambda x: np.asarray(x, np.float64)  # noqa: E731

    def with_bias(name: str, rows: tuple[str, ...]) -> tuple[np.ndarray, tuple]:
        matrix = np.vstack([arr(proc[name]["kernel"]), arr(proc[name]["bias"])[None]])
        return matrix, (*rows, BIAS)

    blocks = []
    for title, name, rows, cols in (
        ("values W_m", "value", "z", "hidden"),
        ("skip W_s", "skip", "z", "hidden"),
        ("senders W_1", "sender", "z", "pre_attention"),
        ("receivers W_2", "receiver", "z", "pre_attention"),
        ("edges W_e", "edge", "edge", "pre_attention"),
    ):
        matrix, row_names = with_bias(name, labels[rows])
        blocks.append((title, matrix, row_names, labels[cols]))
    head = arr(proc["head_0"]["kernel"]).T
    blocks.append(("head a", head, ("a",), labels["pre_attention"]))
    if "pre_att_bias" in proc:  # the paper's variant: receivers i, senders j
        bias = arr(proc["pre_att_bias"])
        blocks.append(
            (
                "pre-attention bias B",
                bias,
                tuple(f"i={k}" for k in range(bias.shape[0])),
                tuple(f"j={k}" for k in range(bias.shape[1])),
            )
        )
    return blocks


def _shown_block(
    title: str, matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str]
) -> tuple[np.ndarray, list[str], list[str]]:
    """The used part of a block: (matrix, row labels, column labels).

    The head's single row always shows; a bias row shows when some kernel row
    of its layer does (BFS has no edge features, so no edge panel at all).
    """
    keep_r = np.ones(len(rows), bool) if title == "head a" else _used(rows)
    is_bias = np.asarray(rows) == BIAS
    if not keep_r[~is_bias].any():
        keep_r[:] = False
    keep_c = _used(cols)
    shown = matrix[np.ix_(keep_r, keep_c)]
    return shown, list(np.asarray(rows)[keep_r]), list(np.asarray(cols)[keep_c])


Panel = tuple[str, np.ndarray, list[str], list[str]]


def _weight_lines(panels: Sequence[Panel]) -> list[list[Panel]]:
    """Panels in order, a new line once a line would pass the column budget."""
    lines: list[list[Panel]] = []
    width = 0
    for panel in panels:
        columns = panel[1].shape[1]
        if lines and lines[-1] and panel[2] != lines[-1][-1][2]:
            columns += round(ROW_LABEL_WIDTH / WEIGHT_CELL)  # its own row labels
        if not lines or width + columns > WEIGHT_COLUMNS_PER_LINE:
            lines.append([])
            width = 0
        lines[-1].append(panel)
        width += columns
    return lines


def _symlog_ticks(vmax: float, linthresh: float, per_side: int = 3) -> list[float]:
    """0 and at most ``per_side`` decades each side, from the top down.

    Every decade labelled (20 labels on a 1-inch bar) overlapped; the decade
    at ``linthresh`` is skipped, it sits one label height from 0.
    """
    top = int(np.floor(np.log10(vmax)))
    exponents = list(range(top, int(np.log10(linthresh)), -1))
    chosen = exponents[:: max(1, int(np.ceil(len(exponents) / per_side)))]
    return sorted([0.0, *(10.0**e for e in chosen), *(-(10.0**e) for e in chosen)])


def plot_compiled_weights(model, blocks: Sequence[str] | None = None) -> Figure:
    """Heat maps of a compiled model's processor weights, rows and columns named.

    Panels are as wide as their used columns, each cell :data:`WEIGHT_CELL`
    inches, and wrap onto a new line past :data:`WEIGHT_COLUMNS_PER_LINE`
    columns: one 23-inch line was shrunk to a third on screen, and its 7-pt
    labels with it.  Consecutive panels of a line with the same rows (the
    ``z`` features) share one set of row labels, drawn once at the left; the
    last row of every layer is its bias (labelled ``bias``).  A block with
    nothing used (BFS has no edge features) is left out.

    Args:
      model: a :class:`nar_gap.compiler.CompiledModel`.
      blocks: titles to draw (default: all of values, skip, senders,
        receivers, edges, head, and the paper variant's pre-attention bias).
    """
    chosen = []
    for title, matrix, rows, cols in _blocks(model):
        if blocks is not None and title not in blocks:
            continue
        shown, row_names, col_names = _shown_block(title, matrix, rows, cols)
        if shown.size:
            chosen.append((title, shown, row_names, col_names))
    return _draw_weight_panels(
        chosen,
        f"compiled {model.program.name}, hidden size {model.layout.hidden_size}",
    )


def _encoder_decoder_blocks(model) -> list[Panel]:
    """(title, matrix, row labels, column labels) of the encoders and decoders.

    Encoders: one row per encoder of node data (columns: the node-feature
    channels) and of edge data (pointers are edge data in CLRS), then the sum
    of their biases, the one bias the features receive.  Decoders read
    ``h_t = [node features; previous hidden; new hidden]``; a node value
    decoder is one column, a pointer decoder four matrices (``W1 h_i``,
    ``W2 h_j``, ``W3 e_ji``, the head ``w4``).
    """
    labels = model.layout.labels()
    net = model.params["net"]
    arr = lambda x: np.asarray(x, np.float64)  # noqa: E731
    panels: list[Panel] = []
    kinds = {"node": [], "edge": []}
    for name, _, location, typ in model.config.spec_entries():
        if f"encoder_{name}" not in net:
            continue
        kind = "edge" if location == "edge" or typ == "pointer" else location
        if kind in kinds:
            kinds[kind].append(name)
    for kind, names in kinds.items():
        if names:
            rows = [arr(net[f"encoder_{n}"]["kernel"])[0] for n in names]
            bias = sum(arr(net[f"encoder_{n}"]["bias"]) for n in names)
            panels.append(
                (
                    f"{kind} encoders",
                    np.vstack([*rows, bias]),
                    [*names, BIAS],
                    list(labels[kind]),
                )
            )
    h_t = list(labels["h_t"])
    values = [
        (n, net[f"decoder_{n}"]["linear_0"])
        for n, _, _, typ in model.config.spec_entries()
        if f"decoder_{n}" in net and typ != "pointer"
    ]
    if values:
        kernel = np.hstack([arr(layer["kernel"]) for _, layer in values])
        bias = np.hstack([arr(layer["bias"]) for _, layer in values])
        # one column per output: a categorical decoder has one per class
        names = [
            name if width == 1 else f"{name}:{c}"
            for name, layer in values
            for width in [arr(layer["kernel"]).shape[1]]
            for c in range(width)
        ]
        panels.append(
            ("value decoders", np.vstack([kernel, bias]), [*h_t, BIAS], names)
        )
    for name, _, _, typ in model.config.spec_entries():
        if f"decoder_{name}" not in net or typ != "pointer":
            continue
        layers = net[f"decoder_{name}"]
        width = arr(layers["linear_0"]["kernel"]).shape[1]
        dims = [f"p{k}" for k in range(width)]
        for title, layer, rows in (
            (f"{name}: W1 h_i", "linear_0", h_t),
            (f"{name}: W2 h_j", "linear_1", h_t),
            (f"{name}: W3 e_ji", "linear_2", list(labels["edge"])),
        ):
            if layer in layers:
                matrix = np.vstack(
                    [arr(layers[layer]["kernel"]), arr(layers[layer]["bias"])[None]]
                )
                panels.append((title, matrix, [*rows, BIAS], dims))
        if "linear_3" in layers:  # one row over the pointer dimensions
            head = arr(layers["linear_3"]["kernel"]).T
            bias = float(arr(layers["linear_3"]["bias"])[0])
            panels.append((f"{name}: head w4 (bias {bias:.3g})", head, ["w4"], dims))
    return panels


def _shown_nonzero(
    title: str, matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str]
) -> Panel:
    """Rows and columns with a label in use and some weight that is not 0."""
    keep_r = _used(rows) & (np.abs(matrix).sum(1) > 0)
    keep_c = _used(cols) & (np.abs(matrix).sum(0) > 0)
    shown = matrix[np.ix_(keep_r, keep_c)]
    return title, shown, list(np.asarray(rows)[keep_r]), list(np.asarray(cols)[keep_c])


def plot_compiled_encoders_decoders(model) -> Figure:
    """The paper's Fig. 7: a compiled model's encoders and decoders, named.

    Only rows and columns with some non-zero weight are drawn: a compiled
    model's hint encoders are zero where its state lives in the hidden
    vector instead (their panels then vanish), which the figure says by
    leaving them out.  Same colour scale and layout as Figs. 6/7.
    """
    panels = []
    for block in _encoder_decoder_blocks(model):
        shown = _shown_nonzero(*block)
        if shown[1].size:
            panels.append(shown)
    return _draw_weight_panels(
        panels,
        f"compiled {model.program.name}: encoders and decoders "
        f"(hidden size {model.layout.hidden_size}; zero rows and columns left out)",
    )


def _draw_weight_panels(chosen: Sequence[Panel], suptitle: str) -> Figure:
    """Heat maps of named weight panels, wrapped into lines, on one symlog scale."""
    lines = _weight_lines(chosen) or [[]]
    widest = max([sum(m.shape[1] for _, m, _, _ in line) for line in lines] + [1])
    # Each panel whose rows differ from its left neighbour's draws its own row
    # labels between the panels: room for them, or the axes collapse.
    labelled = max(
        sum(k == 0 or line[k][2] != line[k - 1][2] for k in range(len(line)))
        for line in lines
    )
    heights = [
        1.6 + WEIGHT_CELL * max([m.shape[0] for _, m, _, _ in line] + [1])
        for line in lines
    ]
    fig = plt.figure(
        figsize=(
            2.6 + WEIGHT_CELL * widest + ROW_LABEL_WIDTH * max(labelled - 1, 0),
            sum(heights),
        ),
        layout="constrained",
    )
    # One subfigure per line (nested grids of unequal widths collapse under
    # constrained layout), each padded to the widest line: cells keep one width.
    lines_figs = fig.subfigures(len(lines), 1, height_ratios=heights, squeeze=False)
    values = np.concatenate([np.abs(m).ravel() for _, m, _, _ in chosen] or [[1.0]])
    vmax = max(float(values.max()), 1e-2)
    norm = SymLogNorm(linthresh=1e-2, vmin=-vmax, vmax=vmax)
    image = None
    for line, line_fig in zip(lines, lines_figs[:, 0], strict=True):
        used = [m.shape[1] for _, m, _, _ in line]
        grid = line_fig.add_gridspec(
            1, len(line) + 1, width_ratios=[*used, max(widest - sum(used), 1e-3)]
        )
        previous_rows = None
        for column, (title, shown, row_names, col_names) in enumerate(line):
            ax = line_fig.add_subplot(grid[column])
            image = ax.imshow(shown, cmap="RdBu_r", norm=norm, aspect="auto")
            ax.set_title(title, fontsize=9)
            same = row_names == previous_rows
            ax.set_yticks(range(len(row_names)), [] if same else row_names, fontsize=8)
            ax.set_xticks(range(len(col_names)), col_names, rotation=90, fontsize=8)
            if row_names[-1] == BIAS:  # set the bias row off from the kernel
                ax.axhline(len(row_names) - 1.5, color="black", lw=0.6)
            previous_rows = row_names
    if image is not None:
        first = lines_figs[0, 0]
        bar = first.colorbar(image, ax=first.axes, shrink=0.8, label="weight (symlog)")
        bar.set_ticks(_symlog_ticks(vmax, 1e-2))
        bar.ax.tick_params(labelsize=MIN_FONT)
    fig.suptitle(suptitle, fontsize=10)
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


def _correlation_line(
    measure: np.ndarray, accuracy: np.ndarray, row: Mapping[str, Any] | None
) -> str:
    """Pearson r with its p-value, and Spearman rho: Table 1's row, as text.

    The p-value is Table 1's permutation p (none below
    :data:`~nar_gap.analysis.stats.MIN_SEEDS_FOR_P` seeds), so the figure and
    the table cannot disagree; ``row`` is computed here when not given.
    """
    if row is None:
        row = correlation_table(accuracy, {"measure": measure})[0]
    n, r, rho = row["n"], row["pearson_r"], row["spearman_rho"]
    if not np.isfinite(r):
        return f"n = {n}: r undefined (fewer than 3 seeds or a constant input)"
    if n < MIN_SEEDS_FOR_P:
        p_text = f"p not computed (n < {MIN_SEEDS_FOR_P})"
    else:
        p_text = f"p = {row['pearson_p']:.2g} (permutation)"
    return f"n = {n}: Pearson r = {r:.2f}, {p_text}; Spearman \u03c1 = {rho:.2f}"


def plot_measure_vs_accuracy(
    measure: np.ndarray,
    accuracy: np.ndarray,
    band,
    xlabel: str,
    title: str,
    correlation: Mapping[str, Any] | None = None,
    compiled: tuple[float, float] | None = (0.0, 1.0),
) -> Figure:
    """Figures 1 and 10: one point per seed, the fitted line and its 95 % band.

    The title's second line gives r, its p-value and rho (a line alone does
    not say how strong the relation is); the compiled model is marked where
    it sits (a star), the point the seeds are measured against.

    Args:
      measure: ``[K]``, the measure of each seed.
      accuracy: ``[K]``, the test accuracy of each seed.
      band: a :class:`nar_gap.analysis.faithfulness.FitBand` computed beforehand.
      xlabel: the measure's name.
      title: the figure's title; the correlations go on a line below it.
      correlation: this measure's Table 1 row (``n``, ``pearson_r``,
        ``pearson_p``, ``spearman_rho``); computed from the points when None.
      compiled: the compiled model's (measure, accuracy); None draws no star.
        The default is Figure 1's (distance 0, accuracy 1).
    """
    fig, ax = plt.subplots(figsize=(4.6, 3.6))
    ax.fill_between(band.x, band.lower, band.upper, color="C0", alpha=0.2, lw=0)
    ax.plot(band.x, band.fit, color="C0", lw=1.5, label="least squares, 95 % band")
    ax.scatter(measure, accuracy, s=14, color="C1", zorder=3, label="seeds")
    if compiled is not None:
        ax.scatter(
            *compiled, s=90, marker="*", color="black", zorder=4, label="compiled"
        )
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel("test accuracy (output)", fontsize=8)
    line = _correlation_line(np.asarray(measure), np.asarray(accuracy), correlation)
    ax.set_title(f"{title}\n{line}", fontsize=8)
    ax.legend(fontsize=7, frameon=False)
    ax.tick_params(labelsize=7)
    return fig


def plot_series_over_time(
    series: dict[str, np.ndarray],
    xlabel: str,
    ylabel: str,
    title: str,
    x: np.ndarray | None = None,
    counts: Sequence[int] | np.ndarray | None = None,
    ylim: tuple[float, float] | None = (0.0, 1.0),
) -> Figure:
    """Figures 2, 4 and 11: per-seed curves ``[K, S]`` (thin) and their mean (bold).

    NaN marks steps where no sample counts; they are left as gaps.  Without
    ``x`` the x axis is the step index, ticked at whole steps only.

    ``ylim``: the y range, by default the whole [0, 1] of a fraction or a
    normalised distance, so a dip of a percent looks like one and not like a
    collapse (None: matplotlib's own range).  ``counts``: how many graphs
    each point averages (one per x value), written above the x axis, so a
    point resting on a handful of graphs is seen as such.
    """
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    grid = None
    for colour, (name, values) in enumerate(series.items()):
        values = np.atleast_2d(np.asarray(values, np.float64))
        grid = np.arange(values.shape[1]) if x is None else np.asarray(x)
        for row in values:
            ax.plot(grid, row, color=f"C{colour}", lw=0.5, alpha=0.25)
        counted = np.sum(~np.isnan(values), axis=0)
        mean = np.where(
            counted > 0, np.nansum(values, axis=0) / np.maximum(counted, 1), np.nan
        )
        ax.plot(
            grid,
            mean,
            color=f"C{colour}",
            lw=2,
            label=f"{name} (mean)",
            clip_on=ylim is None,  # a mean at the top of [0, 1] stays visible
        )
    if x is None:  # the x axis counts steps
        _integer_ticks(ax.xaxis)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if counts is not None:
        counts = np.asarray(counts)
        if grid is None or counts.shape != grid.shape:
            raise ValueError(
                f"{counts.size} counts for {0 if grid is None else grid.size} points"
            )
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
        xlabel = f"{xlabel}\n(numbers above the axis: graphs counted at each point)"
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    if counts is None:
        ax.legend(fontsize=7, frameon=False)
    else:  # above the counts, below curves that sit near 1
        ax.legend(fontsize=7, frameon=False, loc="lower left", bbox_to_anchor=(0, 0.1))
    ax.tick_params(labelsize=7)
    return fig


def _mark_source(ax, source: int) -> None:
    """Triangles on both edges of a heat map, at the source's column and row."""
    style = dict(color="C3", ms=6, clip_on=False, zorder=5, ls="none")
    ax.plot([source], [1.0], marker="v", transform=ax.get_xaxis_transform(), **style)
    ax.plot([0.0], [source], marker=">", transform=ax.get_yaxis_transform(), **style)


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
                _integer_ticks(axis)
            ax.tick_params(labelsize=7)
            if source is not None:
                _mark_source(ax, source)
            if row == 0:
                ax.set_title(f"step {t}", fontsize=8)
            else:
                ax.set_xlabel("sender j", fontsize=8)
            if t == 0:
                ax.set_ylabel(f"{name}\nreceiver i", fontsize=8)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="attention weight")
    marked = f"; red triangles: source node {source}" if source is not None else ""
    fig.suptitle(f"attention (rows receivers i, columns senders j){marked}", fontsize=9)
    return fig


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
    order = np.arange(len(labels))
    if len(linkage):
        tree = hierarchy.dendrogram(
            linkage,
            ax=left,
            labels=list(labels),
            color_threshold=threshold,
            above_threshold_color=NEUTRAL,
            leaf_font_size=8,
        )
        order = np.asarray(tree["leaves"])
        left.axhline(threshold, color=NEUTRAL, ls="--", lw=0.8)
        left.set_ylim(top=1.3 * left.get_ylim()[1])  # room for the legend
        left.legend(
            handles=[
                Line2D([], [], color="C1", label="a cluster (one colour each)"),
                Line2D([], [], color=NEUTRAL, label="above the cut; single seeds"),
                Line2D([], [], color=NEUTRAL, ls="--", label="cut"),
            ],
            fontsize=7,
            frameon=False,
            loc="upper right",
        )
    left.set_xlabel("seed", fontsize=8)
    left.set_ylabel("Ward merge height", fontsize=8)
    left.set_title(title, fontsize=9)
    image = right.imshow(distances[np.ix_(order, order)], cmap="viridis", vmin=0)
    right.set_title("internal distance between seeds", fontsize=9)
    names = [str(labels[k]) for k in order]
    right.set_xticks(range(len(names)), names, fontsize=7, rotation=90)
    right.set_yticks(range(len(names)), names, fontsize=7)
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
        _integer_ticks(ax.xaxis)
        ax.set_xlabel("training step", fontsize=8)
        ax.tick_params(which="both", labelsize=7)
        ax.legend(fontsize=7, frameon=False)
    left.set_ylabel("validation score (output)", fontsize=8)
    right.set_ylabel("training loss at that step", fontsize=8)
    # Step 0 (the untrained model) has no training loss (NaN): a log axis
    # needs the finite losses positive, and NaN must not switch it off.
    losses = np.asarray([r["train_loss"] for r in history], np.float64)
    finite = losses[np.isfinite(losses)]
    if finite.size and finite.min() > 0:
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


def _log_loss(losses: np.ndarray) -> np.ndarray:
    """log10 of the losses, floored at 1e-12; inf and NaN stay non-finite."""
    return np.log10(np.maximum(np.asarray(losses, np.float64), 1e-12))


def log_loss_range(surfaces: Iterable[np.ndarray]) -> tuple[float, float]:
    """(min, max) of log10 loss over the finite points of all ``surfaces``.

    One range for every landscape of an algorithm puts them on one colour
    scale, so a colour means the same loss in each; (0, 1) if none is finite.
    """
    finite = [v[np.isfinite(v)] for v in map(_log_loss, surfaces)]
    values = np.concatenate(finite) if finite else np.zeros(0)
    if not values.size:
        return 0.0, 1.0
    return float(values.min()), float(values.max())


def plot_landscape(
    alphas: np.ndarray,
    betas: np.ndarray,
    losses: np.ndarray,
    title: str,
    vmin: float | None = None,
    vmax: float | None = None,
) -> Figure:
    """Appendix D.11: heat map (left) and surface (right) of a loss landscape.

    Losses are drawn on a log10 scale (compiled minima rise by orders of
    magnitude within the plotted square), between ``vmin`` and ``vmax`` (in
    log10 loss; :func:`log_loss_range` of all the surfaces to be compared,
    default this one's).  A grid point whose loss overflowed (inf or NaN) is
    drawn in :data:`OVERFLOW_COLOUR` and counted in a legend; a contour plot
    would have left it blank, like the background.
    """
    values = _log_loss(losses)
    finite = np.isfinite(values)
    low, high = log_loss_range([losses])
    norm = Normalize(low if vmin is None else vmin, high if vmax is None else vmax)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=OVERFLOW_COLOUR)
    shown = np.ma.masked_invalid(values)
    fig = plt.figure(figsize=(9, 3.8))
    left = fig.add_subplot(1, 2, 1)
    mesh = left.pcolormesh(
        alphas, betas, shown.T, shading="nearest", cmap=cmap, norm=norm
    )
    left.plot([0], [0], "r+", ms=10)
    left.set_xlabel("direction 1", fontsize=8)
    left.set_ylabel("direction 2", fontsize=8)
    left.tick_params(labelsize=7)
    fig.colorbar(mesh, ax=left, label="log10 loss")
    if not finite.all():
        overflowed = f"loss overflowed (non-finite): {int((~finite).sum())} points"
        left.legend(
            handles=[Patch(color=OVERFLOW_COLOUR, label=overflowed)],
            fontsize=7,
            loc="upper left",
            bbox_to_anchor=(0.0, -0.14),
            frameon=False,
        )
    right = fig.add_subplot(1, 2, 2, projection="3d")
    grid_a, grid_b = np.meshgrid(alphas, betas, indexing="ij")
    right.plot_surface(
        grid_a, grid_b, np.where(finite, values, np.nan), cmap=cmap, norm=norm, lw=0
    )
    right.set_zlim(norm.vmin, norm.vmax)
    for axis in (right.xaxis, right.yaxis):
        axis.set_major_locator(MaxNLocator(5))
    right.set_xlabel("direction 1", fontsize=8)
    right.set_ylabel("direction 2", fontsize=8)
    right.set_zlabel("log10 loss", fontsize=8)
    right.tick_params(labelsize=7)
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
        # Whole steps only: a tick between two would be labelled by rounding.
        ax.xaxis.set_major_formatter(
            FuncFormatter(lambda v, _: f"{v:.0f}" if float(v).is_integer() else "")
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


_STATUS_MARKERS = {
    "exact": ("o", "tab:green", "exact"),
    "ties": ("s", "tab:orange", "exact up to near-ties"),
    "error": ("X", "tab:red", "error"),
}
_DTYPE_STYLE = {"float32": ("-", -0.17), "float64": ("--", 0.17)}


def _size_axis(ax, sizes: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(n) for n in sizes], fontsize=MIN_FONT)
    ax.minorticks_off()
    ax.set_xlabel("nodes N", fontsize=8)


def plot_size_sweep(rows: Sequence[Mapping[str, Any]]) -> Figure:
    """Where compiled models stop being exact, and why (the size sweep).

    Top: each graph's verdict against dm-clrs, float32 left of float64.
    Bottom (Bellman-Ford): the smallest gap dm-clrs decided over the
    model's resolution (ties are possible below 1), and the largest distance
    error over the exactness tolerance (an error above 1).
    """
    algorithms = list(dict.fromkeys(r["algorithm"] for r in rows))
    families = list(dict.fromkeys(r["family"] for r in rows))
    sizes = sorted({int(r["num_nodes"]) for r in rows})
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    for ax, algorithm in zip(axes[0], ("bfs", "bellman_ford"), strict=True):
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
        ax.set_yticks(range(len(families)), families, fontsize=MIN_FONT)
        ax.set_ylim(len(families) - 0.5, -0.5)
        _size_axis(ax, sizes)
        ax.set_title(
            f"compiled {algorithm} vs dm-clrs (left: float32, right, outlined: float64)"
            if algorithm in algorithms
            else f"{algorithm}: not run",
            fontsize=8,
        )
    handles = [
        Line2D([], [], ls="", marker=m, color=c, label=label)
        for m, c, label in _STATUS_MARKERS.values()
    ]
    axes[0, 1].legend(
        handles=handles, fontsize=MIN_FONT, frameon=False, loc="lower left"
    )
    panels = (
        (
            "gap_over_resolution",
            "smallest decided gap / resolution",
            "near-ties possible below",
        ),
        (
            "error_over_tolerance",
            "largest distance error / tolerance",
            "an error above",
        ),
    )
    floor = 1e-12  # a zero error drawn at the axis floor
    for ax, (key, label, below) in zip(axes[1], panels, strict=True):
        for colour, family in enumerate(families):
            for dtype, (style, _) in _DTYPE_STYLE.items():
                mine = sorted(
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
                if not mine:
                    continue
                ax.plot(
                    [int(r["num_nodes"]) for r in mine],
                    [max(float(r[key]), floor) for r in mine],
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
        ax.set_ylabel(label, fontsize=8)
        ax.set_title(
            f"Bellman-Ford: {label} (solid float32, dashed float64)", fontsize=8
        )
        ax.tick_params(labelsize=MIN_FONT)
    axes[1, 0].legend(fontsize=MIN_FONT, frameon=False, ncol=2)
    fig.tight_layout()
    return fig


def _measured(
    over_time: Sequence[Mapping[str, Any]], variant: str, measure: str
) -> list[Mapping[str, Any]]:
    """The rows of ``closing_gap_over_time`` of one variant and one measure."""
    return [r for r in over_time if r["variant"] == variant and r["measure"] == measure]


def plot_closing_gap(
    rows: Sequence[Mapping[str, Any]],
    curves: Sequence[Mapping[str, Any]],
    over_time: Sequence[Mapping[str, Any]],
    algorithm: str,
) -> Figure:
    """Each recipe against compiled: how it learns, along the trace, where it ends.

    Left: the mean validation score over training steps per variant (the
    ``long`` curve says whether the trace is still being learned).  Second:
    external faithfulness along the trace on each trace's own [0, 1] clock
    (mean over seeds, band: one std).  Third: Eq. 24's internal distance at
    each hint step (mean over seeds).  Right: test accuracy against Eq. 24's
    internal distance to the compiled model, one point per variant (mean over
    seeds), the compiled model at (0, its accuracy).
    """
    fig, (left, middle, inner, right) = plt.subplots(1, 4, figsize=(15, 3.4))
    variants = [r["variant"] for r in rows if r["variant"] != "compiled"]
    for k, name in enumerate(variants):
        mine = [c for c in curves if c["variant"] == name]
        steps = sorted({int(c["step"]) for c in mine})
        if not steps:
            continue
        mean = [
            np.mean([float(c["val_score"]) for c in mine if int(c["step"]) == s])
            for s in steps
        ]
        left.plot(steps, mean, marker="o", ms=3, color=f"C{k}", label=name)
    _integer_ticks(left.xaxis)
    left.set_xlabel("training step", fontsize=8)
    left.set_ylabel("validation score (mean over seeds)", fontsize=8)
    left.legend(fontsize=7, frameon=False)
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
    middle.set_xlabel("position in the trace (each trace's own clock)", fontsize=8)
    middle.set_ylabel("external faithfulness (mean over hints)", fontsize=8)
    for k, name in enumerate(variants):
        mine = _measured(over_time, name, "internal")
        if mine:
            x = [int(float(r["position"])) for r in mine]
            inner.plot(
                x, [float(r["mean"]) for r in mine], marker="o", ms=3, color=f"C{k}"
            )
    _integer_ticks(inner.xaxis)
    inner.set_xlabel("hint step", fontsize=8)
    inner.set_ylabel("internal distance to compiled (Eq. 24)", fontsize=8)
    for k, name in enumerate(variants):
        row = next(r for r in rows if r["variant"] == name)
        x, y = float(row["internal"]), float(row["accuracy"])
        right.scatter([x], [y], color=f"C{k}", s=30, zorder=3)
        right.annotate(
            name, (x, y), xytext=(4, 3), textcoords="offset points", fontsize=7
        )
    compiled = next((r for r in rows if r["variant"] == "compiled"), None)
    if compiled is not None:
        x, y = float(compiled["internal"]), float(compiled["accuracy"])
        right.scatter([x], [y], marker="*", color="k", s=80, zorder=3)
        right.annotate(
            "compiled", (x, y), xytext=(4, -10), textcoords="offset points", fontsize=7
        )
    right.set_xlabel("internal distance to compiled (Eq. 24)", fontsize=8)
    right.set_ylabel(f"test accuracy (output), {algorithm}", fontsize=8)
    right.set_xlim(left=-0.02)
    for ax in (left, middle, inner, right):
        ax.tick_params(which="both", labelsize=7)
    fig.suptitle(f"{algorithm}: supervising the mechanism", fontsize=10)
    fig.tight_layout()
    return fig


_CONDITION_AXES = {
    "size": "graph size N (CLRS test graphs; training sizes 4-16)",
    "family": "graph family (N = 16)",
    "weight_scale": "edge weights times (N = 16; training: [0, 1))",
}


def plot_generalisation(table: Sequence[Mapping[str, Any]], algorithm: str) -> Figure:
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
                capsize=2,
                color=f"C{j}",
                label=f"{name} ({next(iter(mine.values()))['recipe']})",
            )
        ax.set_xticks(range(len(values)))
        ax.set_xticklabels(values, fontsize=7, rotation=30 if kind == "family" else 0)
        ax.set_xlabel(_CONDITION_AXES[kind], fontsize=8)
        ax.set_ylabel("test accuracy (output)", fontsize=8)
        ax.tick_params(labelsize=7)
        # Accuracy lives in [0, 1]: a t-interval past it is cut at the frame.
        ax.set_ylim(max(ax.get_ylim()[0], -0.02), 1.02)
    axes[0][0].legend(fontsize=7, frameon=False)
    fig.suptitle(
        f"{algorithm}: out of distribution (mean over seeds, 95 % t-interval)",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def plot_transnar_scores(
    summary: Sequence[Mapping[str, Any]], algorithm: str, largest_trained: int
) -> Figure:
    """TransNAR's three scores against graph size, one line per model.

    Mean over seeds with ± one standard deviation; the dotted line marks the
    largest training size (sizes right of it are out of distribution).
    """
    scores = ("shape", "parse", "clrs")
    models = list(dict.fromkeys(r["model"] for r in summary))
    fig, axes = plt.subplots(1, len(scores), figsize=(10.5, 3.2), squeeze=False)
    for ax, score in zip(axes[0], scores, strict=True):
        for j, model in enumerate(models):
            mine = sorted(
                (r for r in summary if r["model"] == model),
                key=lambda r: int(r["num_nodes"]),
            )
            sizes = [int(r["num_nodes"]) for r in mine]
            mean = np.array([float(r[f"{score}_mean"]) for r in mine])
            std = np.array([float(r[f"{score}_std"]) for r in mine])
            # Models that score alike would hide one another: each is shifted
            # a little along the (log) size axis and has its own marker.
            shifted = np.array(sizes, float) * 2 ** (0.05 * (j - 1))
            ax.errorbar(
                shifted, mean, yerr=std, fmt="os^"[j % 3] + "-", ms=4, lw=1,
                capsize=2, color=f"C{j}", label=model,
            )  # fmt: skip
        ax.axvline(largest_trained, color=NEUTRAL, ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({int(r["num_nodes"]) for r in summary}))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("graph size N", fontsize=8)
        ax.set_ylabel(f"{score} score", fontsize=8)
        ax.tick_params(labelsize=MIN_FONT)
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].legend(fontsize=MIN_FONT, frameon=False)
    fig.suptitle(
        f"{algorithm}: TransNAR's scores by size (mean ± std over seeds; "
        "dotted: largest training size)",
        fontsize=9,
    )
    fig.tight_layout()
    return fig
