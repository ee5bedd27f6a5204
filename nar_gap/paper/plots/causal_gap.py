"""The causal-gap figure (notebook 03): what swapping attention does, and probes.

Four panels: each seed's output score as trained, with the compiled
attention, with uniform and with self-only attention, and the compiled
network with each seed's attention; the same swaps one hint step at a time
(mean over seeds); the probes' score per variable (linear and MLP) for
trained, random-init and compiled models, beside the trained decoders';
and, along the trace, the trained decoders against a probe of their state.  The numbers
come from :mod:`nar_gap.paper.experiments.causal_gap`'s tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from nar_gap.paper.plots.style import integer_ticks, styled

Rows = Sequence[Mapping[str, Any]]

SWAPS = (
    ("score", "trained"),
    ("with_compiled_attention", "+ compiled attention"),
    ("with_uniform_attention", "+ uniform attention"),
    ("with_self_attention", "+ self-only attention"),
    ("compiled_with_seed_attention", "compiled + seed's attention"),
)


def _swaps(ax, seeds: Rows, means: Mapping[str, float]) -> None:
    rng = np.random.default_rng(0)  # jitter only: the points are the seeds
    for k, (key, _) in enumerate(SWAPS):
        values = np.array([float(r[key]) for r in seeds])
        ax.scatter(k + rng.uniform(-0.15, 0.15, len(values)), values, s=10, alpha=0.7)
        ax.plot([k - 0.3, k + 0.3], [means[key]] * 2, color="k", lw=1.5)
    ax.set_xticks(range(len(SWAPS)), [label for _, label in SWAPS], rotation=30)
    ax.set_ylabel("output score (test graphs)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("attention swapped at every step")


def _steps(ax, means: Mapping[str, Mapping[int, float]]) -> None:
    for key, label in (
        ("with_compiled_attention", "trained + compiled attention"),
        ("compiled_with_seed_attention", "compiled + seed's attention"),
    ):
        ax.plot(list(means[key]), list(means[key].values()), marker="o", label=label)
    integer_ticks(ax.xaxis)
    ax.set_xlabel("hint step swapped (alone)")
    ax.set_ylabel("output score, mean over seeds")
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    ax.set_title("one step at a time")


def _probes(ax, pooled: Mapping[str, Mapping[tuple[str, str], float]]) -> None:
    variables = sorted(pooled)
    bars = (
        ("trained", "probe_state", "trained: probe of h"),
        ("trained", "probe_state_mlp", "trained: MLP probe of h"),
        ("random init", "probe_state", "random init: probe of h"),
        ("random init", "probe_state_mlp", "random init: MLP probe of h"),
        ("compiled", "probe_state", "compiled: probe of h"),
        ("trained", "probe_inputs", "trained: probe of the decoder's inputs"),
        ("trained", "decoder", "trained: its decoder"),
    )
    width = 0.8 / len(bars)
    for j, (kind, column, label) in enumerate(bars):
        heights = [pooled[v].get((kind, column), np.nan) for v in variables]
        offset = (j - (len(bars) - 1) / 2) * width
        ax.bar(np.arange(len(variables)) + offset, heights, width, label=label)
    ax.set_xticks(range(len(variables)), variables)
    ax.set_ylabel("accuracy (R² for a scalar), held-out graphs")
    ax.set_ylim(0, 1.3)
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.legend(fontsize="x-small", loc="upper center", ncol=2)
    ax.set_title("what the decoders' inputs hold")


def _probe_steps(ax, along: Mapping[str, Mapping[str, Mapping[int, float]]]) -> None:
    """Along the trace: the trained decoders against a probe of h, per variable."""
    for k, (variable, means) in enumerate(along.items()):
        for column, style, label in (
            ("decoder", "-", "its decoder"),
            ("probe_state", "--", "probe of h"),
            ("probe_state_mlp", ":", "MLP probe of h"),
        ):
            ax.plot(
                list(means[column]),
                list(means[column].values()),
                style,
                color=f"C{k}",
                marker="o",
                ms=3,
                label=f"{variable}: {label}",
            )
    integer_ticks(ax.xaxis)
    ax.set_xlabel("hint step")
    ax.set_ylabel("score, mean over trained seeds")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize="x-small")
    ax.set_title("along the trace")


@styled()
def plot_causal_gap(seeds: Rows, means: Mapping[str, Any], title: str) -> Figure:
    """The four panels (module docstring) under ``title`` (algorithm, case).

    ``seeds``: the per-seed swap rows, drawn as points; ``means``: the means
    over seeds the study computed
    (:func:`~nar_gap.paper.experiments.causal_gap.figure_means`).
    """
    fig, axes = plt.subplots(1, 4, figsize=(17, 4))
    _swaps(axes[0], seeds, means["swaps"])
    _steps(axes[1], means["steps"])
    _probes(axes[2], means["probes"])
    _probe_steps(axes[3], means["along"])
    fig.suptitle(f"{title}: which part of the gap changes the output (ours)")
    fig.tight_layout()
    return fig
