"""The faithfulness study of Section 4: learned solutions against the compiled one.

Evaluate many learned solutions against the compiled one, correlate, cluster,
and write the tables and figures.

:func:`faithfulness_study` computes a :class:`FaithfulnessReport` (pure, no
files); :func:`write_report` writes it: CSV tables with JSON sidecars and an
``.npz`` of the series into ``results/``, Figures 1-5, 10 and 11 into
``figures/`` (named by :func:`.naming.figure_stem`: the paper's numbers for
BFS, ``figD2_`` for Bellman-Ford, unnumbered for the rest).

Beside the test split, :func:`run_faithfulness` measures the same seeds on two
more sets of graphs (:mod:`.trace_graphs`), each adding its own columns and
never changing the test split's: graphs with long traces
(:func:`long_trace_study`: ``long_*`` columns, ``long_series_*`` arrays,
Figures 2 and 4 again), where "before the output" is tens of steps, not one
or two; and graphs of the seeds' own training distribution
(:func:`training_set_study`: ``train_*`` and ``final_train_*`` columns), for
Section 4.6's "not even on the training set".
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from nar_gap.analysis.faithfulness import (
    DEFAULT_MARGINS,
    GAP_MEASURES,
    Margins,
    internal_step_count,
    pairwise_internal_distances,
)
from nar_gap.analysis.models import (
    FORCED_MEASURES,
    Models,
    SeedEvaluation,
    check_comparable,
    measure_models,
    measure_with_forced,
    reference_attention,
    reference_points,
)
from nar_gap.analysis.stats import (
    Clusters,
    cluster_counts,
    cluster_solutions,
    correlation_table,
    partial_correlation_table,
)
from nar_gap.compiler import DEFAULT_HIDDEN_SIZE, compile_algorithm
from nar_gap.model.model import Model
from nar_gap.paper import plots
from nar_gap.paper.experiments.naming import figure_stem
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import (
    baseline_config,
    faithfulness_batch,
    metadata,
    train_once,
)
from nar_gap.paper.experiments.trace_graphs import (
    GraphSet,
    long_trace_graphs,
    training_graphs,
)
from nar_gap.paper.plots import faithfulness_section
from nar_gap.paper.plots.faithfulness_section import (
    SELECTION,
    FigureData,
    LongTraceData,
)
from nar_gap.system import files
from nar_gap.tasks.batch import Batch
from nar_gap.training import TrainConfig
from nar_gap.training.run_dir import load_run


@dataclasses.dataclass(frozen=True)
class OnGraphs:
    """The seeds measured on a :class:`.GraphSet` other than the test split.

    Attributes:
      graphs: the graphs (which families, sizes and counted steps).
      evaluation: the seeds' selected parameters (their attention dropped:
        long traces make it the largest array of a report, and no figure
        draws it).
      reference: the compiled model on the same graphs (None: not run).
      final: the seeds' last-step parameters (None: not given).
    """

    graphs: GraphSet
    evaluation: SeedEvaluation
    reference: SeedEvaluation | None = None
    final: SeedEvaluation | None = None


@dataclasses.dataclass(frozen=True)
class FaithfulnessReport:
    """Everything Section 4 reports for one algorithm.

    Attributes:
      algorithm: the algorithm.
      evaluation: per-seed measures (:class:`SeedEvaluation`).
      reference: the compiled model's own evaluation (internal 0, external 1).
      correlations: Table 1 rows.
      distances: ``[K, K]`` inter-solution internal distances.
      clusters: Ward clusters of the solutions.
      summary: one row of headline numbers (means, closest seed, cluster count).
      reference_attention: ``[S, B, N, N]`` the compiled attention.
      num_nodes: ``[B]`` real nodes per sample.
      reference_points: what each gap measure gives for attention nobody
        trained (:func:`~nar_gap.analysis.models.reference_points`), one
        row per point.
      sources: ``[B]`` each sample's source node (CLRS input ``s``; -1 where
        the algorithm has none), marked on Fig. 3.
      selected_steps: ``[K]`` the training step each seed's parameters come
        from (None: unknown, e.g. compiled models).
      final_evaluation: the same seeds' last-step parameters, measured on the
        same batch against the same compiled attention (None: not given).
      long_traces: the seeds and the compiled model on graphs with long
        traces (:func:`long_trace_study`; None: not measured).
      training_set: the seeds, selected and final, on graphs of their own
        training distribution (:func:`training_set_study`; None: not
        measured).
    """

    algorithm: str
    evaluation: SeedEvaluation
    reference: SeedEvaluation
    correlations: list[dict[str, Any]]
    distances: np.ndarray
    clusters: Clusters
    summary: dict[str, Any]
    reference_attention: np.ndarray
    num_nodes: np.ndarray
    reference_points: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    sources: np.ndarray | None = None
    selected_steps: tuple[int, ...] | None = None
    final_evaluation: SeedEvaluation | None = None
    long_traces: OnGraphs | None = None
    training_set: OnGraphs | None = None

    def seed_rows(self) -> list[dict[str, Any]]:
        """One CSV row per seed: accuracy, internal, external (overall, per hint).

        With ``selected_step`` where known, ``final_<measure>`` (the
        last-step parameters' numbers) where they were measured, and the
        other graphs' columns (:func:`graph_set_columns`) after them.
        """
        ev = self.evaluation
        names = ["accuracy", *GAP_MEASURES, *FORCED_MEASURES]
        names += ["external", "external_strict", "external_pre_output"]
        names += sorted(
            n for n in ev.scalars if n.startswith("external_") and n not in names
        )
        final = self.final_evaluation
        rows = []
        for k, seed in enumerate(ev.seeds):
            row: dict[str, Any] = {
                "seed": int(seed),
                "cluster": int(self.clusters.labels[k]),
            }
            if self.selected_steps is not None:
                row["selected_step"] = int(self.selected_steps[k])
            row.update({n: float(ev.scalars[n][k]) for n in names if n in ev.scalars})
            if final is not None:
                row.update(
                    {
                        f"final_{n}": float(final.scalars[n][k])
                        for n in FINAL_COLUMNS
                        if n in final.scalars
                    }
                )
            row.update(graph_set_columns(self, k))
            rows.append(row)
        return rows

    @property
    def closest_seed_index(self) -> int:
        """Index of the seed whose attention is closest to the compiled one."""
        return int(np.argmin(self.evaluation.scalars["internal"]))


# Table 1's measures, in its order; the final-step rows leave the forced ones
# out (they would need a second, teacher-forced pass of the final parameters).
EXTERNAL_MEASURES = ("external", "external_pre_output")
TABLE1_MEASURES = (*GAP_MEASURES, *FORCED_MEASURES, *EXTERNAL_MEASURES)
FINAL_MEASURES = (*GAP_MEASURES, *EXTERNAL_MEASURES)
FINAL_COLUMNS = ("accuracy", "internal", *EXTERNAL_MEASURES)  # per-seed CSV


# The files :func:`write_report` writes, ``<a>`` the algorithm (or its arm,
# ``bellman_ford_edge_info``): the readers (paper, docs' tables) take the
# names from here.
def seeds_file(a: str) -> str:
    """Per seed: every measure (``faithfulness_<a>.csv``)."""
    return f"faithfulness_{a}.csv"


def correlations_file(a: str) -> str:
    """Table 1: each measure's correlation with accuracy."""
    return f"table1_correlations_{a}.csv"


def summary_file(a: str) -> str:
    """One row of headline numbers."""
    return f"faithfulness_summary_{a}.csv"


def reference_points_file(a: str) -> str:
    """What each measure gives for attention nobody trained."""
    return f"faithfulness_reference_points_{a}.csv"


def arrays_file(a: str) -> str:
    """Series, distances, linkage, one sample's attention (:func:`_report_arrays`)."""
    return f"faithfulness_{a}.npz"


def table1(
    scalars: Mapping[str, np.ndarray],
    selected_steps: np.ndarray | None = None,
    final_scalars: Mapping[str, np.ndarray] | None = None,
    selection: str = SELECTION,
) -> list[dict[str, Any]]:
    """Table 1's rows under each selection rule, ``selection`` first.

    Every row starts with a ``selection`` column:

    - ``selection`` (``first_best`` for the paper's runs): each measure
      against accuracy on the parameters the run selected, as the paper
      reports it (:func:`~nar_gap.analysis.stats.correlation_table`).
    - ``<selection>_partial`` (with ``selected_steps``): the same, partial on
      each seed's selected step
      (:func:`~nar_gap.analysis.stats.partial_correlation_table`).  Selecting
      on validation picks each seed from a different step, and how long a
      seed trained can drive both a measure and accuracy.
    - ``final`` (with ``final_scalars``): the same measures on each seed's
      last-step parameters, which all trained equally long (no forced rows).

    Measures a model does not have (``external`` without decoded hints) are
    left out.
    """
    first = {n: scalars[n] for n in TABLE1_MEASURES if n in scalars}
    rows = [
        {"selection": selection, **r}
        for r in correlation_table(scalars["accuracy"], first)
    ]
    if selected_steps is not None:
        partial = partial_correlation_table(
            scalars["accuracy"], first, np.asarray(selected_steps, np.float64)
        )
        rows += [{"selection": f"{selection}_partial", **r} for r in partial]
    if final_scalars is not None:
        last = {n: final_scalars[n] for n in FINAL_MEASURES if n in final_scalars}
        rows += [
            {"selection": "final", **r}
            for r in correlation_table(final_scalars["accuracy"], last)
        ]
    return rows


def _headline(
    batch: Batch,
    models: Models,
    scalars: Mapping[str, np.ndarray],
    distances: np.ndarray,
    clusters: Clusters,
    ref_eval: SeedEvaluation,
) -> dict[str, Any]:
    """The report's one row of headline numbers (:attr:`FaithfulnessReport.summary`)."""
    closest = int(np.argmin(scalars["internal"]))
    off_diagonal = distances[~np.eye(len(distances), dtype=bool)]
    return {
        "algorithm": batch.algorithm,
        "num_seeds": len(models),
        "num_graphs": int(batch.batch_size),
        "num_nodes": int(batch.num_nodes),
        "hidden_size": models.config.hidden_size,
        "mean_accuracy": float(np.mean(scalars["accuracy"])),
        "std_accuracy": float(np.std(scalars["accuracy"])),
        **{
            f"mean_{name}": float(np.mean(scalars[name]))
            for name in (*GAP_MEASURES, *FORCED_MEASURES)
        },
        "closest_internal": float(scalars["internal"][closest]),
        "closest_seed": int(models.seeds[closest]),
        "mean_external": float(np.mean(scalars.get("external", np.nan))),
        "mean_external_pre_output": float(
            np.mean(scalars.get("external_pre_output", np.nan))
        ),
        "mean_inter_solution": float(np.mean(off_diagonal))
        if off_diagonal.size
        else 0.0,
        "num_clusters": clusters.count,
        "cluster_threshold": clusters.threshold,
        **{
            f"clusters {rule}": count
            for rule, count in cluster_counts(distances).items()
            if rule != "widest gap"
        },
        "reference_internal": float(ref_eval.scalars["internal"][0]),
        "reference_external": float(ref_eval.scalars.get("external", [np.nan])[0]),
        "reference_accuracy": float(ref_eval.scalars["accuracy"][0]),
    }


def faithfulness_study(
    models: Models,
    reference: Model,
    batch: Batch,
    margins: Margins = DEFAULT_MARGINS,
    chunk: int = 8,
    progress: bool = True,
    final_models: Models | None = None,
    selection: str = SELECTION,
) -> FaithfulnessReport:
    """Evaluate, compare with the compiled model, correlate and cluster.

    Args:
      models: the learned solutions (any source, one architecture); their
        ``selected_steps``, when known, add Table 1's partial rows.
      reference: the compiled model (or any model taken as ground truth).
      batch: the graphs all models run on (the paper: the test split).
      margins: Eq. 25's margins.
      chunk: seeds per vmapped call.
      progress: show a tqdm bar over the stages.
      final_models: the same seeds' last-step parameters (optional): one more
        pass against the same compiled attention, Table 1's ``final`` rows.
      selection: the rule that selected ``models``' parameters (Table 1's
        label of its main rows).
    """
    check_comparable(models, reference, final_models)
    stages = tqdm(total=5, desc=f"faithfulness {batch.algorithm}", disable=not progress)
    ref_att = reference_attention(reference, batch)
    own = Models.from_models([reference], seeds=[-1], source="compiled")
    ref_eval = measure_models(own, batch, ref_att, margins, chunk=1)
    stages.update(1)
    evaluation = measure_with_forced(models, reference, batch, ref_att, margins, chunk)
    final = (
        None
        if final_models is None
        else measure_models(final_models, batch, ref_att, margins, chunk=chunk)
    )
    stages.update(1)
    distances = pairwise_internal_distances(
        evaluation.attention, batch.lengths, batch.node_mask
    )
    stages.update(1)
    clusters = cluster_solutions(distances)
    scalars = evaluation.scalars
    correlations = table1(
        scalars,
        models.selected_steps,
        None if final is None else final.scalars,
        selection,
    )
    summary = _headline(batch, models, scalars, distances, clusters, ref_eval)
    stages.update(1)
    points = reference_points(models, ref_att, batch, chunk)
    stages.update(1)
    stages.close()
    return FaithfulnessReport(
        algorithm=batch.algorithm,
        evaluation=evaluation,
        reference=ref_eval,
        correlations=correlations,
        distances=distances,
        clusters=clusters,
        summary=summary,
        reference_attention=ref_att,
        num_nodes=np.asarray(batch.node_mask).sum(-1),
        reference_points=points,
        sources=batch.sources,
        selected_steps=models.selected_steps,
        final_evaluation=final,
    )


# --------------------------------------------------------------------------- #
# The same seeds on other graphs: long traces, the training distribution.
# --------------------------------------------------------------------------- #

# Column prefixes of the other graphs' measures in ``faithfulness_<a>.csv``.
LONG_PREFIX, TRAIN_PREFIX, FINAL_TRAIN_PREFIX = "long_", "train_", "final_train_"
# The per-seed columns notebook 03 prints beside the long-trace figures.
GRAPH_SET_HEADLINE = (
    "long_external",
    "long_external_pre_output",
    "long_internal",
    "train_external",
    "final_train_external",
)
# The summary's means over seeds of each set's measures (the compiled model,
# measured against nobody, and the training graphs have no Eq. 24).
LONG_SUMMARY = ("accuracy", "internal", "external", "external_pre_output")
OUTPUT_AND_TRACE = ("accuracy", "external", "external_pre_output")


def graph_measures(scalars: Mapping[str, np.ndarray]) -> list[str]:
    """The measures another set of graphs reports per seed, in column order.

    Accuracy, Eq. 24 (where a reference ran), Eq. 25 and its pre-output
    variant, then each hint's two (``external_<hint>``,
    ``external_pre_output_<hint>``); no strict or calibrated variants.
    """
    first = [n for n in ("accuracy", "internal", *EXTERNAL_MEASURES) if n in scalars]
    per_hint = sorted(
        n
        for n in scalars
        if n.startswith("external_")
        and not n.endswith("_strict")
        and n not in first
        and n != "external_strict"
    )
    return first + per_hint


def graph_set_columns(report: FaithfulnessReport, k: int) -> dict[str, float]:
    """Seed ``k``'s ``long_*``, ``train_*`` and ``final_train_*`` columns."""
    sets = []
    if report.long_traces is not None:
        sets.append((LONG_PREFIX, report.long_traces.evaluation))
    if report.training_set is not None:
        sets.append((TRAIN_PREFIX, report.training_set.evaluation))
        if report.training_set.final is not None:
            sets.append((FINAL_TRAIN_PREFIX, report.training_set.final))
    return {
        f"{prefix}{name}": float(ev.scalars[name][k])
        for prefix, ev in sets
        for name in graph_measures(ev.scalars)
    }


def _light(evaluation: SeedEvaluation) -> SeedEvaluation:
    """``evaluation`` without its attention (see :class:`OnGraphs`)."""
    empty = np.zeros((len(evaluation.seeds), 0), np.float32)
    return dataclasses.replace(evaluation, attention=empty)


def long_trace_study(
    models: Models,
    reference: Model,
    graphs: GraphSet,
    margins: Margins = DEFAULT_MARGINS,
    chunk: int = 8,
) -> OnGraphs:
    """The seeds and the compiled model on graphs with long traces.

    The same measures as on the test split (Eqs. 24 and 25, the pre-output
    variant, the series of Figures 2, 4 and 11), against the compiled
    model's attention on these graphs.  ``reference`` must run their size
    (DFS's program is built for one).  The compiled model's own pass skips
    Eq. 24 (0 against itself): one compile fewer, CI's budget.
    """
    check_comparable(models, reference, None)
    batch = graphs.batch
    ref_att = reference_attention(reference, batch)
    own = Models.from_models([reference], seeds=[-1], source="compiled")
    ref_eval = measure_models(own, batch, None, margins, chunk=1)
    evaluation = measure_models(models, batch, ref_att, margins, chunk=chunk)
    return OnGraphs(graphs, _light(evaluation), reference=_light(ref_eval))


def training_set_study(
    models: Models,
    graphs: GraphSet,
    final_models: Models | None = None,
    margins: Margins = DEFAULT_MARGINS,
    chunk: int = 8,
) -> OnGraphs:
    """The seeds' trace predictions on graphs of their training distribution.

    Section 4.6's "not even on the training set", at the selected and (with
    ``final_models``) the last-step parameters.  No compiled attention:
    Eq. 25 alone, which needs only the true trace.
    """
    if final_models is not None and final_models.seeds != models.seeds:
        raise ValueError("final_models must be the same seeds as models")
    evaluation = measure_models(models, graphs.batch, None, margins, chunk=chunk)
    final = (
        None
        if final_models is None
        else measure_models(final_models, graphs.batch, None, margins, chunk=chunk)
    )
    return OnGraphs(
        graphs, _light(evaluation), final=None if final is None else _light(final)
    )


def _mean(ev: SeedEvaluation, name: str) -> float:
    return float(np.mean(ev.scalars.get(name, np.nan)))


def graph_set_summary(
    long_traces: OnGraphs | None, training_set: OnGraphs | None
) -> dict[str, Any]:
    """The summary's columns for the other graphs (none for a set not measured).

    Which graphs (``long_graphs``, ``train_graphs``: family, N and counted
    steps), the seeds' means, the compiled model's own numbers on the long
    traces (``reference_long_*``), and the largest final external match on
    training graphs over seeds (``max_final_train_external``: below 1, no
    seed predicts its training traces exactly at the end of training).
    """
    row: dict[str, Any] = {}
    if long_traces is not None:
        graphs, ev = long_traces.graphs, long_traces.evaluation
        row.update(
            long_graphs=graphs.label(),
            long_num_graphs=int(graphs.batch.batch_size),
            long_num_nodes=int(graphs.batch.num_nodes),
            long_min_counted_steps=int(graphs.counted_steps.min()),
            long_max_counted_steps=int(graphs.counted_steps.max()),
            **{f"mean_long_{n}": _mean(ev, n) for n in LONG_SUMMARY},
        )
        if long_traces.reference is not None:
            ref = long_traces.reference
            row.update({f"reference_long_{n}": _mean(ref, n) for n in OUTPUT_AND_TRACE})
    if training_set is not None:
        graphs, ev = training_set.graphs, training_set.evaluation
        row.update(
            train_graphs=graphs.label(),
            train_num_graphs=int(graphs.batch.batch_size),
            **{f"mean_train_{n}": _mean(ev, n) for n in OUTPUT_AND_TRACE},
        )
        if training_set.final is not None:
            final = training_set.final
            row.update(
                {f"mean_final_train_{n}": _mean(final, n) for n in OUTPUT_AND_TRACE}
            )
            row["max_final_train_external"] = float(
                np.max(final.scalars.get("external", np.nan))
            )
    return row


def with_graph_sets(
    report: FaithfulnessReport,
    long_traces: OnGraphs | None = None,
    training_set: OnGraphs | None = None,
) -> FaithfulnessReport:
    """``report`` with the other graphs' measures, its summary extended."""
    for on in (long_traces, training_set):
        if on is not None and on.evaluation.seeds != report.evaluation.seeds:
            raise ValueError(
                f"{on.graphs.name}: seeds {on.evaluation.seeds}, the report's "
                f"{report.evaluation.seeds}"
            )
    return dataclasses.replace(
        report,
        long_traces=long_traces,
        training_set=training_set,
        summary={**report.summary, **graph_set_summary(long_traces, training_set)},
    )


def _report_arrays(report: FaithfulnessReport, sample: int) -> dict[str, np.ndarray]:
    """The arrays of a report's ``.npz``.

    Series, distances, linkage, and one sample's compiled and closest-seed
    attention (its real nodes and counted steps) with its source node (-1:
    none).
    """
    ev = report.evaluation
    closest = report.closest_seed_index
    n_real = int(report.num_nodes[sample])
    steps = internal_step_count(ev.lengths[sample])
    return {
        **{f"series_{k}": v for k, v in ev.series.items()},
        "seeds": np.asarray(ev.seeds),
        "distances": report.distances,
        "linkage": report.clusters.linkage,
        "lengths": ev.lengths,
        "compiled_attention": report.reference_attention[
            :steps, sample, :n_real, :n_real
        ],
        "closest_attention": ev.attention[closest, :steps, sample, :n_real, :n_real],
        "source": np.asarray(-1 if report.sources is None else report.sources[sample]),
        **_long_arrays(report),
    }


def _long_arrays(report: FaithfulnessReport) -> dict[str, np.ndarray]:
    """The long traces' series (``long_series_<name>``) and which graphs.

    ``long_series_internal_along_time`` is Figure 2's series there,
    ``long_series_external_<hint>_uniform`` Figure 4's; ``long_lengths``,
    ``long_families`` and ``long_num_nodes`` say per graph what it is.
    """
    if report.long_traces is None:
        return {}
    on = report.long_traces
    return {
        **{f"long_series_{k}": v for k, v in on.evaluation.series.items()},
        "long_lengths": on.evaluation.lengths,
        "long_families": np.asarray(on.graphs.families),
        "long_num_nodes": on.graphs.num_nodes,
    }


def write_report(
    report: FaithfulnessReport,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    metadata: Mapping[str, Any] | None = None,
    sample: int = 0,
) -> list[Path]:
    """Write the tables (CSV + JSON sidecar), the arrays (npz) and the figures.

    Files, with ``<a>`` the algorithm: ``results/faithfulness_<a>.csv`` (per
    seed), ``results/table1_correlations_<a>.csv``,
    ``results/faithfulness_summary_<a>.csv``,
    ``results/faithfulness_reference_points_<a>.csv``, ``results/faithfulness_<a>.npz``
    (series, distances, linkage, and sample ``sample``'s compiled and closest
    attention), and ``figures/<stem>.{png,pdf}``, each stem
    :func:`.naming.figure_stem` of the paper's Figure 1-5, 10 or 11
    (``fig1_bfs_internal_vs_accuracy``, ``figD2_bellman_ford_...``,
    ``fig_dfs_...``).  A report with long traces adds their arrays
    (:func:`_long_arrays`) and Figures 2 and 4 on them
    (:data:`.faithfulness_section.LONG_FIGURES`,
    ``fig2_bfs_internal_over_time_long_traces``); the sidecars then say which
    graphs each set holds (``long_traces``, ``training_graphs``:
    :meth:`.GraphSet.describe`).  The figures are drawn from the files just
    written (:func:`draw_figures`), as a notebook reading results draws them.
    """
    a = report.algorithm
    results, figures = Path(results_dir), Path(figures_dir)
    meta = {
        **(metadata or {}),
        "seeds": list(report.evaluation.seeds),
        **{
            key: on.graphs.describe()
            for key, on in (
                ("long_traces", report.long_traces),
                ("training_graphs", report.training_set),
            )
            if on is not None
        },
    }
    tables = {
        seeds_file(a): report.seed_rows(),
        correlations_file(a): report.correlations,
        summary_file(a): [report.summary],
        reference_points_file(a): report.reference_points,
    }
    written = [files.write_table(results / n, r, meta) for n, r in tables.items()]
    arrays = _report_arrays(report, sample)
    written.append(files.write_arrays(results / arrays_file(a), arrays, meta))
    written += draw_figures(results, figures, a)
    return written


# The per-seed measures the figures draw (Figures 1 and 10, Figure 3's title).
FIGURE_SCALARS = ("accuracy", "internal", "external")


def figure_sources(a: str) -> list[str]:
    """The files Section 4's figures of ``a`` are drawn from, in reading order."""
    return [f(a) for f in (seeds_file, correlations_file, summary_file, arrays_file)]


def _number_or_text(text: str) -> Any:
    """A CSV cell as written (:func:`.files.cell_value`); an empty one NaN."""
    return math.nan if text == "" else files.cell_value(text)


def read_figure_data(results_dir: str | os.PathLike, algorithm: str) -> FigureData:
    """What Section 4's figures of ``algorithm`` draw, read from its written files.

    The per-seed table (:func:`seeds_file`), Table 1 (:func:`correlations_file`),
    the summary (:func:`summary_file`) and the arrays (:func:`arrays_file`), as
    :func:`write_report` wrote them: a missing one is a one-line error naming it.
    """
    results = Path(results_dir)
    paths = [results / name for name in figure_sources(algorithm)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{algorithm}'s figures are drawn from its results, and {results} "
            f"lacks {', '.join(missing)}"
        )
    rows = files.read_table(paths[0])
    correlations = [
        {k: _number_or_text(v) for k, v in row.items()}
        for row in files.read_table(paths[1])
    ]
    summary = {k: _number_or_text(v) for k, v in files.read_table(paths[2])[0].items()}
    with np.load(paths[3]) as loaded:
        arrays = {k: loaded[k] for k in loaded.files}
    return FigureData(
        algorithm=algorithm,
        seeds=tuple(int(r["seed"]) for r in rows),
        scalars={
            n: np.array([files.float_cell(r[n]) for r in rows])
            for n in FIGURE_SCALARS
            if n in rows[0]
        },
        series=_prefixed(arrays, "series_"),
        lengths=arrays["lengths"],
        distances=arrays["distances"],
        linkage=arrays["linkage"],
        cluster_threshold=float(summary["cluster_threshold"]),
        cluster_count=int(summary["num_clusters"]),
        correlations=correlations,
        reference={m: float(summary[f"reference_{m}"]) for m in FIGURE_SCALARS},
        compiled_attention=arrays["compiled_attention"],
        closest_attention=arrays["closest_attention"],
        source=int(arrays["source"]),
        long_traces=_long_trace_data(arrays),
    )


def _prefixed(arrays: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    """The arrays named ``<prefix><name>``, by ``name``, in the file's order."""
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}


def _long_trace_data(arrays: Mapping[str, np.ndarray]) -> LongTraceData | None:
    """The long traces' part of a report's arrays (None: not measured)."""
    if "long_lengths" not in arrays:
        return None
    return LongTraceData(
        series=_prefixed(arrays, "long_series_"),
        lengths=arrays["long_lengths"],
        families=tuple(str(f) for f in arrays["long_families"]),
        num_nodes=int(np.max(arrays["long_num_nodes"])),
    )


def draw_figures(
    results_dir: str | os.PathLike, figures_dir: str | os.PathLike, algorithm: str
) -> list[Path]:
    """Draw ``algorithm``'s figures from its results files into ``figures_dir``.

    Each figure's sidecar names the files it was drawn from (``drawn_from``),
    whose own sidecars say which run, device and versions measured them.
    """
    drawn_from = figure_sources(algorithm)
    written: list[Path] = []
    drawn = faithfulness_section.draw(read_figure_data(results_dir, algorithm))
    for (number, what), fig in drawn.items():
        stem = figure_stem(number, algorithm, what)
        written += files.save_figure(
            fig, Path(figures_dir) / stem, metadata={"drawn_from": drawn_from}
        )
        plots.close(fig)
    return written


def _on_other_graphs(
    profile: Profile, config: TrainConfig, selected: Models, final: Models
) -> tuple[OnGraphs, OnGraphs]:
    """The seeds on ``profile``'s long traces and on their training graphs.

    The compiled model is built again for the long traces' size (DFS's
    program needs it; the others ignore it).
    """
    algorithm = config.network.algorithm
    long = long_trace_graphs(algorithm, profile.long_traces)
    compiled = compile_algorithm(
        algorithm, hidden_size=DEFAULT_HIDDEN_SIZE, num_nodes=long.batch.num_nodes
    )
    return (
        long_trace_study(selected, compiled, long),
        training_set_study(selected, training_graphs(config), final),
    )


def run_faithfulness(
    profile: Profile,
    algorithm: str,
    dirs: OutputDirs,
    progress: bool = True,
    edge_info: bool = False,
):
    """Section 4 for one algorithm: the baseline seeds against compiled (hidden 128).

    DFS's program is compiled for the faithfulness graphs' size (its ``v``
    needs ``N``; every test graph has ``profile.test_num_nodes`` nodes).
    ``edge_info``: measure the baselines' edge-information arm instead
    (notebook 02 trains it for the profile's ``edge_info_baselines``), whose
    files are named ``<algorithm>_edge_info``: the like-for-like pairing
    with a compiled network that uses edge information, as Bellman-Ford's
    does.  The paper pairs compiled with the default network.  For the
    profile's ``trace_graph_algorithms``, the same seeds are also measured
    on ``profile.long_traces``'s graphs and on their training distribution
    (:func:`with_graph_sets`).

    Reading (``dirs.reading``): nothing is measured; the figures are drawn
    again from the files this call would write (:func:`draw_figures`), and
    None comes back (the report's full arrays exist only where it was
    measured).
    """
    if dirs.reading:
        arm = f"{algorithm}_edge_info" if edge_info else algorithm
        dirs.read_back(summary_file(arm))
        draw_figures(dirs.results, dirs.figures, arm)
        return None
    config = baseline_config(profile, algorithm, edge_info)
    run = train_once(config, dirs.runs, progress)
    batch = faithfulness_batch(profile, algorithm)
    compiled = compile_algorithm(
        algorithm, hidden_size=DEFAULT_HIDDEN_SIZE, num_nodes=batch.num_nodes
    )
    final = Models.from_run(load_run(run.out_dir, parameters="final"))
    report = faithfulness_study(
        Models.from_run(run),
        compiled,
        batch,
        progress=progress,
        final_models=final,
        selection=config.selection,
    )
    if algorithm in profile.trace_graph_algorithms:
        report = with_graph_sets(
            report, *_on_other_graphs(profile, config, Models.from_run(run), final)
        )
    network = "edge information" if edge_info else "default"
    report = dataclasses.replace(
        report,
        algorithm=f"{algorithm}_edge_info" if edge_info else algorithm,
        summary={**report.summary, "network": network},
    )
    write_report(
        report,
        dirs.results,
        dirs.figures,
        metadata(
            profile, config=config.to_dict(), compiled_hidden_size=DEFAULT_HIDDEN_SIZE
        ),
    )
    return report
