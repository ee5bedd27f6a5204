"""Figures 6-7 and the compiled attention: what a compiled model's weights are.

Weight matrices are drawn with the compiled layout's labels on both axes (the
paper's Figures 6-7), cropped to the dimensions a compiled model uses, on a
symmetric log colour scale because compiled weights span ~1e-2 (leak
cancellation) to ~1e7 (eligibility).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import SymLogNorm
from matplotlib.figure import Figure

from nar_gap.paper.plots.style import (
    BODY,
    MIN_FONT,
    NAMED_CELLS,
    SMALL_PANELS,
    styled,
)

UNUSED = "unused"
BIAS = "bias"
WEIGHT_CELL = 0.22
"""Inches per weight-matrix cell: room for one rotated 7-pt label."""
TITLED_CELLS = 3
"""Cells a one-column panel is drawn across, its title on two lines: at one
cell, the titles of Figure 6's sender, receiver and edge panels ran into each
other."""
ROW_LABEL_WIDTH = 1.6
"""Inches for one more set of row labels inside a line of weight panels."""
WEIGHT_COLUMNS_PER_LINE = 28
"""Weight panels wrap to a new line past this many columns, so Figures 6-7
stay about 8 inches wide and are shown near their saved size."""


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


def _panel_cells(panel: Panel) -> int:
    """The cells ``panel`` is drawn across (one column: :data:`TITLED_CELLS`)."""
    columns = panel[1].shape[1]
    return TITLED_CELLS if columns == 1 else columns


def _panel_title(panel: Panel) -> str:
    """The panel's title, on two lines where it is one column wide."""
    return panel[0].replace(" ", "\n", 1) if panel[1].shape[1] == 1 else panel[0]


def _weight_lines(panels: Sequence[Panel]) -> list[list[Panel]]:
    """Panels in order, a new line once a line would pass the column budget."""
    lines: list[list[Panel]] = []
    width = 0
    for panel in panels:
        columns = _panel_cells(panel)
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


@styled(NAMED_CELLS)
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


@styled(NAMED_CELLS)
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
    widest = max([sum(_panel_cells(p) for p in line) for line in lines] + [1])
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
        used = [_panel_cells(p) for p in line]
        grid = line_fig.add_gridspec(
            1, len(line) + 1, width_ratios=[*used, max(widest - sum(used), 1e-3)]
        )
        previous_rows = None
        for column, panel in enumerate(line):
            _, shown, row_names, col_names = panel
            ax = line_fig.add_subplot(grid[column])
            image = ax.imshow(shown, cmap="RdBu_r", norm=norm, aspect="auto")
            ax.set_title(_panel_title(panel))
            same = row_names == previous_rows
            ax.set_yticks(range(len(row_names)), [] if same else row_names)
            ax.set_xticks(range(len(col_names)), col_names, rotation=90)
            if row_names[-1] == BIAS:  # set the bias row off from the kernel
                ax.axhline(len(row_names) - 1.5, color="black", lw=0.6)
            previous_rows = row_names
    if image is not None:
        first = lines_figs[0, 0]
        bar = first.colorbar(image, ax=first.axes, shrink=0.8)
        bar.set_label("weight (symlog)", size=BODY)
        bar.set_ticks(_symlog_ticks(vmax, 1e-2))
        bar.ax.tick_params(labelsize=MIN_FONT)  # many decades: the smallest text
    fig.suptitle(suptitle)
    return fig


@styled(SMALL_PANELS)
def plot_attention_steps(
    attention: np.ndarray, title: str = "attention", max_steps: int = 8
) -> Figure:
    """Attention of each step, ``(S, n, n)`` (rows receivers, columns senders)."""
    steps = min(len(attention), max_steps)
    fig, axes = plt.subplots(1, steps, figsize=(2.4 * steps, 2.6), squeeze=False)
    for t, ax in enumerate(axes[0]):
        ax.imshow(attention[t], vmin=0.0, vmax=1.0, cmap="Greys")
        ax.set_title(f"step {t}")
        ax.set_xlabel("sender")
        if t == 0:
            ax.set_ylabel("receiver")
    fig.suptitle(title)
    return fig
