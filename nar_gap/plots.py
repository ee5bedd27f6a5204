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


def plot_compiled_weights(model, blocks: Sequence[str] | None = None) -> Figure:
    """Heat maps of a compiled model's processor weights, rows and columns named.

    Args:
      model: a :class:`nar_gap.compiler.CompiledModel`.
      blocks: titles to draw (default: all of values, skip, senders,
        receivers, edges, head, biases).
    """
    chosen = [b for b in _blocks(model) if blocks is None or b[0] in blocks]
    fig, axes = plt.subplots(
        1, len(chosen), figsize=(3.2 * len(chosen), 4.2), squeeze=False
    )
    values = np.concatenate([np.abs(m).ravel() for _, m, _, _ in chosen])
    vmax = float(values.max()) if values.size else 1.0
    norm = SymLogNorm(linthresh=1e-2, vmin=-vmax, vmax=vmax)
    image = None
    for ax, (title, matrix, rows, cols) in zip(axes[0], chosen, strict=True):
        # Biases' rows are the sub-layers; label columns with each space's names.
        keep_r = (
            _used(rows)
            if title not in ("head a", "biases")
            else np.ones(len(rows), bool)
        )
        keep_c = _used(cols)
        if title == "biases":
            keep_c = np.ones(matrix.shape[1], bool) & (np.abs(matrix).sum(0) > 0)
        shown = matrix[np.ix_(keep_r, keep_c)]
        image = ax.imshow(shown, cmap="RdBu_r", norm=norm, aspect="auto")
        ax.set_title(title, fontsize=9)
        ax.set_yticks(range(shown.shape[0]), np.asarray(rows)[keep_r], fontsize=6)
        col_names = (
            [f"c{k}" for k in np.flatnonzero(keep_c)]
            if title == "biases"
            else list(np.asarray(cols)[keep_c])
        )
        ax.set_xticks(range(shown.shape[1]), col_names, rotation=90, fontsize=6)
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
