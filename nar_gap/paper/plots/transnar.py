"""Notebook 08: TransNAR's scores against graph size."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from nar_gap.paper.plots.style import COMPACT_TITLES, NEUTRAL, styled


@styled(COMPACT_TITLES)
def plot_transnar_scores(
    summary: Sequence[Mapping[str, Any]],
    algorithm: str,
    largest_trained: int,
    rules: Sequence[Mapping[str, Any]] = (),
) -> Figure:
    """TransNAR's three scores and the content score against size, per model.

    Mean over seeds with ± one standard deviation; the dotted line marks the
    largest training size (sizes right of it are out of distribution).  The
    content panel (CLRS score among answers of the right length) has no
    point where no seed wrote one.  ``rules`` (rows of
    ``transnar_rules_<algorithm>.csv``) are drawn grey on the two CLRS
    panels: what answering without search scores on the same graphs.
    """
    scores = ("shape", "parse", "clrs", "content")
    models = list(dict.fromkeys(r["model"] for r in summary))
    fig, axes = plt.subplots(1, len(scores), figsize=(13.5, 3.2), squeeze=False)
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
                color=f"C{j}", label=model,
            )  # fmt: skip
        if score in ("clrs", "content"):
            _draw_rules(ax, rules)
        ax.axvline(largest_trained, color=NEUTRAL, ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({int(r["num_nodes"]) for r in summary}))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("graph size N")
        ax.set_ylabel(
            "CLRS score, right shape" if score == "content" else f"{score} score"
        )
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].legend()
    drawn = [line for line in axes[0][2].lines if line.get_label().startswith("rule")]
    if drawn:
        axes[0][2].legend(handles=drawn, fontsize="small")
    fig.suptitle(
        f"{algorithm}: TransNAR's scores by size (mean ± std over seeds; "
        "dotted: largest training size)"
    )
    fig.tight_layout()
    return fig


def _draw_rules(ax: Any, rules: Sequence[Mapping[str, Any]]) -> None:
    ordered = sorted(rules, key=lambda r: int(r["num_nodes"]))
    sizes = [int(r["num_nodes"]) for r in ordered]
    for name, style in (("one_hop", "--"), ("self", ":")):
        if ordered and name in ordered[0]:
            scores = [float(r[name]) for r in ordered]
            ax.plot(sizes, scores, style, color=NEUTRAL, lw=1, label=f"rule: {name}")
