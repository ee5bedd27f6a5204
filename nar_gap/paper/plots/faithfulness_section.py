"""Section 4's figures of one algorithm, from the numbers its results files hold.

Figures 1-5, 10 and 11 (and the long traces' Figures 2 and 4) are drawn from
a :class:`FigureData`, which holds only what the faithfulness study's tables
and arrays hold: :func:`~nar_gap.paper.experiments.faithfulness_study.
read_figure_data` reads one back from ``results/``.  So a figure is a
function of the committed files, whether the study has just measured them
or a notebook reads another machine's results (a GPU job's archive): the
same code draws both, and a figure can be drawn again, restyled, without
the trained seeds.  Each figure is keyed by the paper's number for BFS's
figure of its kind (None: the paper has none) and what it shows; the study
names the files (:func:`~nar_gap.paper.experiments.naming.figure_stem`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from nar_gap.analysis.curves import seed_curves
from nar_gap.analysis.faithfulness import (
    external_steps,
    internal_steps,
    uniform_timescale,
)
from nar_gap.analysis.stats import (
    cluster_count_curve,
    correlation_table,
    linear_fit_band,
)
from nar_gap.paper.plots.faithfulness import (
    plot_attention_comparison,
    plot_cluster_sensitivity,
    plot_measure_vs_accuracy,
    plot_series_over_time,
    plot_solution_clusters,
)

#: A figure's key: the paper's number for BFS's figure of its kind, and what.
FigureKey = tuple[int | None, str]

SELECTION = "first_best"  # CLRS's rule, the paper's protocol

# The long traces' figures: the paper's number of the figure each repeats.
LONG_FIGURES = {
    2: "internal_over_time_long_traces",
    4: "trace_uniform_time_long_traces",
}


@dataclasses.dataclass(frozen=True)
class LongTraceData:
    """The seeds on graphs with long traces: what their figures draw.

    Attributes:
      series: ``{name: [K, S]}`` (``internal_along_time``,
        ``external_<hint>_along_time``, ``external_<hint>_uniform``).
      lengths: ``[B]`` hint lengths of the graphs.
      families: ``[B]`` each graph's family.
      num_nodes: the graphs' node count (the largest, if they differ).
    """

    series: dict[str, np.ndarray]
    lengths: np.ndarray
    families: tuple[str, ...]
    num_nodes: int


@dataclasses.dataclass(frozen=True)
class FigureData:
    """What Section 4's figures of one algorithm draw, as the study wrote it.

    Attributes:
      algorithm: the algorithm or arm (``bellman_ford_edge_info``).
      seeds: the seed labels, in the tables' order.
      scalars: ``{name: [K]}`` the per-seed measures (``accuracy``,
        ``internal``, ``external``, ...).
      series: ``{name: [K, S]}`` the per-seed curves of the test split.
      lengths: ``[B]`` hint lengths of the test split.
      distances: ``[K, K]`` inter-solution internal distances.
      linkage: the clusters' Ward linkage.
      cluster_threshold: the widest-gap cut of the linkage.
      cluster_count: the clusters under that cut.
      correlations: Table 1's rows.
      reference: the compiled model's own ``internal``, ``external`` and
        ``accuracy`` on the test split.
      compiled_attention: ``[S, N, N]`` one graph's compiled attention.
      closest_attention: ``[S, N, N]`` the closest seed's, on that graph.
      source: that graph's source node (-1: none).
      long_traces: the seeds on long traces (None: not measured).
    """

    algorithm: str
    seeds: tuple[int, ...]
    scalars: dict[str, np.ndarray]
    series: dict[str, np.ndarray]
    lengths: np.ndarray
    distances: np.ndarray
    linkage: np.ndarray
    cluster_threshold: float
    cluster_count: int
    correlations: list[dict[str, Any]]
    reference: dict[str, float]
    compiled_attention: np.ndarray
    closest_attention: np.ndarray
    source: int
    long_traces: LongTraceData | None = None

    @property
    def closest_seed_index(self) -> int:
        """Index of the seed whose attention is closest to the compiled one."""
        return int(np.argmin(self.scalars["internal"]))

    @property
    def label(self) -> str:
        """The figures' title: the algorithm and its number of seeds."""
        return f"{self.algorithm} ({len(self.seeds)} seeds)"


def hint_names(series: Mapping[str, np.ndarray]) -> list[str]:
    """The hints scored externally, in the order their series were written."""
    return [
        n[len("external_") : -len("_along_time")]
        for n in series
        if n.startswith("external_") and n.endswith("_along_time")
    ]


def draw(data: FigureData) -> dict[FigureKey, Any]:
    """Every figure of ``data``, by its :data:`FigureKey`."""
    return {
        **_internal_figures(data),
        **_external_figures(data),
        **_long_trace_figures(data),
    }


def table1_row(data: FigureData, measure: str) -> dict[str, Any]:
    """``measure``'s main Table 1 row: the figure prints its r, p and rho.

    The main rows are the run's own selection (``first_best`` for the
    paper's runs), never the partial or final ones.  Without such a row,
    one computed from the seeds, as Table 1 computes it.
    """
    rows = data.correlations
    main = rows[0].get("selection", SELECTION) if rows else SELECTION
    row = next(
        (
            r
            for r in rows
            if r["measure"] == measure and r.get("selection", SELECTION) == main
        ),
        None,
    )
    if row is None:
        scalars = data.scalars
        row = correlation_table(scalars["accuracy"], {measure: scalars[measure]})[0]
    return row


def _measure_figure(data: FigureData, measure: str, xlabel: str):
    """Figure 1 or 10: a measure against accuracy, with the compiled point."""
    scalars = data.scalars
    return plot_measure_vs_accuracy(
        scalars[measure],
        scalars["accuracy"],
        linear_fit_band(scalars[measure], scalars["accuracy"]),
        xlabel,
        data.label,
        correlation=table1_row(data, measure),
        compiled=(data.reference[measure], data.reference["accuracy"]),
    )


def _internal_figures(data: FigureData) -> dict[FigureKey, Any]:
    """Figures 1, 2, 3 and 5: the internal measure and the clusters."""
    closest, source = data.closest_seed_index, data.source
    return {
        (1, "internal_vs_accuracy"): _measure_figure(
            data, "internal", "internal distance to compiled (Eq. 24, 0 = identical)"
        ),
        (2, "internal_over_time"): plot_series_over_time(
            {"internal distance": seed_curves(data.series["internal_along_time"])},
            "step",
            "internal distance to compiled",
            data.label,
        ),
        (3, "closest_attention"): plot_attention_comparison(
            data.compiled_attention,
            data.closest_attention,
            f"seed {data.seeds[closest]} "
            f"(internal {data.scalars['internal'][closest]:.3f})",
            source=source if source >= 0 else None,
        ),
        (5, "solution_clusters"): plot_solution_clusters(
            data.distances,
            data.linkage,
            data.cluster_threshold,
            [str(s) for s in data.seeds],
            f"{data.label}: {data.cluster_count} clusters",
        ),
        (None, "cluster_sensitivity"): _cluster_sensitivity(data),
    }


def _cluster_sensitivity(data: FigureData):
    """The cluster count against the cut height, for both linkages."""
    top = max(float(np.max(data.distances, initial=0.0)), data.cluster_threshold)
    heights = np.linspace(0.0, 1.05 * max(top, 1e-3), 200)
    counts = {
        f"{method} linkage": cluster_count_curve(data.distances, heights, method)
        for method in ("average", "ward")
    }
    return plot_cluster_sensitivity(
        heights,
        counts,
        (data.cluster_threshold, data.cluster_count),
        f"{data.label}: clusters by cut height",
    )


def _external_figures(data: FigureData) -> dict[FigureKey, Any]:
    """Figures 10, 4 and 11: the external measure (none without decoded hints).

    Figures 4 and 11 write under each point how many test graphs it averages:
    a step only long traces reach, or a bin of the normalised clock, can rest
    on a few graphs (the steps that count: :func:`external_steps`).
    """
    series = data.series
    hints = hint_names(series)
    if not hints:
        return {}
    return {
        (10, "external_vs_accuracy"): _measure_figure(
            data, "external", "external faithfulness (Eq. 25, 1 = exact trace)"
        ),
        (4, "trace_uniform_time"): _trace_uniform_figure(
            series, data.lengths, hints, data.label
        ),
        (11, "trace_over_time"): plot_series_over_time(
            {h: seed_curves(series[f"external_{h}_along_time"]) for h in hints},
            "step",
            "trace accuracy",
            data.label,
            counts=_counted_steps(series, data.lengths, hints).sum(1),
        ),
    }


def _counted_steps(
    series: Mapping[str, np.ndarray], lengths: np.ndarray, hints: list[str]
) -> np.ndarray:
    """``[S, B]`` the steps Eq. 25 counts, over the series' steps."""
    steps = series[f"external_{hints[0]}_along_time"].shape[1]
    return np.asarray(external_steps(lengths, steps), bool)


def _trace_uniform_figure(
    series: Mapping[str, np.ndarray], lengths: np.ndarray, hints: list[str], label: str
):
    """Figure 4: each hint's match on every trace's own clock, graphs per bin."""
    bins = series[f"external_{hints[0]}_uniform"].shape[1]
    valid = _counted_steps(series, lengths, hints)
    steps = valid.shape[0]
    # A graph counts in a bin when one of its steps falls there: the same
    # binning as the figure's values, one graph at a time.
    in_bin = [
        ~np.isnan(uniform_timescale(np.ones((steps, 1)), valid[:, [b]], bins))
        for b in range(valid.shape[1])
    ]
    per_bin = np.sum(in_bin, axis=0) if in_bin else np.zeros(bins, int)
    return plot_series_over_time(
        {h: seed_curves(series[f"external_{h}_uniform"]) for h in hints},
        "fraction of the trace",
        "trace accuracy",
        label,
        x=(np.arange(bins) + 0.5) / bins,
        counts=per_bin,
    )


def _long_trace_figures(data: FigureData) -> dict[FigureKey, Any]:
    """Figures 2 and 4 again, on the long traces (none if not measured)."""
    on = data.long_traces
    if on is None:
        return {}
    families = ", ".join(dict.fromkeys(on.families))
    label = f"{data.label}, {families} of N = {on.num_nodes}"
    along = on.series["internal_along_time"]
    figs = {
        (2, LONG_FIGURES[2]): plot_series_over_time(
            {"internal distance": seed_curves(along)},
            "step",
            "internal distance to compiled",
            label,
            counts=np.asarray(internal_steps(on.lengths, along.shape[1])).sum(1),
        )
    }
    hints = hint_names(data.series)
    if hints:
        figs[(4, LONG_FIGURES[4])] = _trace_uniform_figure(
            on.series, on.lengths, hints, label
        )
    return figs
