"""Closing the gap (issue 18): can supervision teach the compiled mechanism?

Can a trained GATv2 be made to execute the compiled mechanism, at the same
accuracy?  The paper leaves open why high accuracy comes without faithful
mechanisms and suggests under-convergence on traces.  This study trains the
same architecture several ways, over the same seeds, and measures each result
against the compiled model with the calibrated measures of notebook 03:

* ``plain``: the CLRS loss on hints and outputs: notebook 02's baseline run
  itself, read at its first ``Profile.closing_gap_seeds`` seeds (nothing new
  is trained for it);
* ``attention``: plus ``KL(compiled || trained)`` of every step's attention
  (:func:`~nar_gap.training.supervision.attention_kl`);
* ``state``: plus a learned linear probe of every step's hidden state trained
  onto the compiled variables (:func:`~nar_gap.training.supervision.state_mse`);
* ``long``: the plain run's seeds trained on to ``closing_gap_long_factor``
  times the baseline's steps (:func:`~nar_gap.training.run_dir.continue_from`:
  the same trajectory, extended), the paper's under-convergence explanation
  tested directly (its validation curve at the top of the training sizes says
  whether the trace is still being learned).  Its selection starts again
  after the plain run's last step (``continue_from(..., reselect=True)``):
  under CLRS's first-best rule a seed whose plain run validated at 1.0 would
  otherwise keep its early parameters, and ``long`` would measure ``plain``
  again.

``attention`` and ``state`` train those seeds again (same data order, same
width), one change each; ``long`` goes on where ``plain`` stopped.  Each
variant gets one row (means over those seeds): test accuracy, Eq. 24's
internal distance and the argmax agreement with the compiled model (both over
the counted receivers), external faithfulness, accuracy at each
``generalisation_sizes`` graph size, sharpness (mean loss rise at radius
0.1 in a filter-normalised plane, the number notebook 06 compares), and the
training steps the measured parameters come from (:func:`selection_columns`:
with saturated validation a "200-step" model may be a step-50 one), beside
the compiled model's own row; and each variant's external and internal
faithfulness along the trace (:func:`time_rows`).
:func:`verdict` then answers the issue's question from the table: which
variant, if any, is faithful (internal <= 0.05, agreement >= 0.99) at
>= 99 % accuracy.  It is computed, so a negative answer reads as one.

Sharpness is of the plain CLRS loss at every centre (the supervision terms
are not part of it): the landscape every variant is compared on is the one
the compiled model sits in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from tqdm import tqdm

from nar_gap.analysis.curves import step_means
from nar_gap.analysis.landscape import model_sharpness
from nar_gap.analysis.models import (
    Models,
    SeedEvaluation,
    measure_models,
    reference_attention,
    selected_step,
)
from nar_gap.analysis.stats import finite_summary
from nar_gap.analysis.verdicts import (  # the bar; closing_gap.FAITHFUL_* still reads
    FAITHFUL_ACCURACY,
    FAITHFUL_AGREEMENT,  # noqa: F401
    FAITHFUL_ATTENTION,
    FAITHFUL_INTERNAL,  # noqa: F401
    is_faithful,
)
from nar_gap.compiler import compile_algorithm
from nar_gap.model.model import Model
from nar_gap.paper import plots
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import (
    baseline_config,
    faithfulness_batch,
    first_graphs,
    metadata,
    run_dir,
)
from nar_gap.system import files
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.sampling import eval_batch, sample_batch
from nar_gap.training import TrainConfig, train
from nar_gap.training.run_dir import continue_from, read_validation
from nar_gap.training.supervision import with_state_probe

VARIANTS = ("plain", "attention", "state", "long")
SHARPNESS_RADIUS = 0.1


def results_file(algorithm: str) -> str:
    """The table: one row per variant, the compiled model's last."""
    return f"closing_gap_{algorithm}.csv"


def validation_file(algorithm: str) -> str:
    """Each variant's validation score over its training steps."""
    return f"closing_gap_validation_{algorithm}.csv"


def over_time_file(algorithm: str) -> str:
    """External and internal faithfulness along the trace (:func:`time_rows`)."""
    return f"closing_gap_over_time_{algorithm}.csv"


def figure_stem(algorithm: str) -> str:
    """The table's figure."""
    return f"fig_closing_gap_{algorithm}"


def variant_configs(profile: Profile, algorithm: str) -> dict[str, TrainConfig]:
    """The four training recipes: the baseline run, and three on its first seeds.

    ``plain`` is notebook 02's baseline configuration itself (all its seeds:
    the study reads the first ``closing_gap_seeds`` of them, so it trains
    nothing new); the other recipes train those seeds again with one change
    each, so every row compares the same seeds, data order and width.
    """
    plain = baseline_config(profile, algorithm)
    seeds = plain.seeds[: profile.closing_gap_seeds]
    weight = profile.supervision_weight
    return {
        "plain": plain,
        "attention": dataclasses.replace(plain, seeds=seeds, attention_weight=weight),
        "state": dataclasses.replace(
            plain,
            seeds=seeds,
            network=with_state_probe(plain.network),
            state_weight=weight,
        ),
        "long": dataclasses.replace(
            plain, seeds=seeds, steps=plain.steps * profile.closing_gap_long_factor
        ),
    }


def long_run_dir(config: TrainConfig, runs: Path) -> Path:
    """Where ``long`` trains: its configuration's address, marked as reselected.

    Its own directory, not :func:`~nar_gap.paper.experiments.runs.run_dir`'s: a
    ``long`` run continued before selection restarted after the plain run's
    end kept plain's selected parameters, and must not be read back as this.
    """
    address = run_dir(config, runs)
    return address.with_name(f"{address.name}_reselected")


def _first_seeds(models: Models, seeds: Sequence[int]) -> Models:
    """``models`` restricted to ``seeds`` (in that order)."""
    index = [models.seeds.index(s) for s in seeds]
    params = jax.tree_util.tree_map(lambda x: np.asarray(x)[index], models.params)
    steps = getattr(models, "selected_steps", None)
    if steps is None:
        return Models(models.config, params, tuple(seeds), models.source)
    picked = tuple(steps[i] for i in index)
    return Models(models.config, params, tuple(seeds), models.source, picked)


def why_unchanged(metrics: Mapping[str, Any], plain_steps: int) -> str:
    """Why a ``long`` seed's parameters are from the plain run's steps, in words.

    ``metrics`` is the seed's row of the long run.  Where its selection was
    restarted after the plain run (``selection_reset_step``), only validation
    scores that were never finite keep it there; otherwise the rule kept the
    plain run's choice: under ``first_best`` nothing later scored higher (at
    1.0, nothing could).
    """
    seed, step = metrics["seed"], selected_step(metrics)
    rule = metrics["selection"]
    score = float(metrics["best_val_score"])
    if int(metrics["selection_reset_step"]) >= plain_steps:
        return f"seed {seed}: no finite validation score after step {plain_steps}"
    if rule == "first_best" and score >= 1.0:
        return (
            f"seed {seed}: first_best keeps step {step}, validated at the "
            "ceiling 1.0, which no later step can beat"
        )
    than = "higher than" if rule == "first_best" else "at least"
    return (
        f"seed {seed}: {rule} keeps step {step}: no later step scored "
        f"{than} {score:.3f}"
    )


def selection_columns(
    metrics: Sequence[Mapping[str, Any]],
    seeds: Sequence[int],
    plain_steps: int | None = None,
) -> dict[str, Any]:
    """A variant's model selection, for its table row.

    ``metrics``: the run's per-seed metrics; ``seeds``: the ones measured.
    ``selected_steps`` lists each seed's selected step in seed order (space
    separated: one cell), with their range.  With ``plain_steps`` (the
    ``long`` row) also how many seeds' parameters come from after the plain
    run's last step, and, for each that does not, why (:func:`why_unchanged`).
    """
    by_seed = {int(m["seed"]): m for m in metrics}
    chosen = [by_seed[s] for s in seeds]
    steps = [selected_step(m) for m in chosen]
    columns: dict[str, Any] = {
        "selection": chosen[0]["selection"],
        "selected_steps": " ".join(str(s) for s in steps),
        "selected_step_min": min(steps),
        "selected_step_max": max(steps),
    }
    if plain_steps is not None:
        kept = [m for m, s in zip(chosen, steps, strict=True) if s <= plain_steps]
        columns["selected_after_plain"] = len(chosen) - len(kept)
        columns["not_after_plain"] = "; ".join(
            why_unchanged(m, plain_steps) for m in kept
        )
    return columns


def _mean(values: Any) -> float:
    return float(np.mean(np.asarray(values, np.float64)))


@dataclasses.dataclass(frozen=True)
class Graphs:
    """What every row is measured on, the same for every variant.

    Attributes:
      test: the faithfulness study's test graphs.
      reference: the compiled model's attention on ``test``.
      by_size: test graphs of each ``generalisation_sizes`` size.
      loss: the batch sharpness is measured on (notebook 06's).
    """

    test: Batch
    reference: np.ndarray
    by_size: Mapping[int, Batch]
    loss: Batch


def _over_seeds(
    name: str, measure: str, clock: str, values: np.ndarray
) -> list[dict[str, Any]]:
    """``[K, T]`` per-seed values -> one row per position: mean and std over seeds.

    Positions where no seed has a value (no counted step there) are left out.
    """
    values = np.asarray(values, np.float64)
    positions = values.shape[1]
    rows = []
    for t in range(positions):
        summary = finite_summary(values[:, t])
        if summary.n == 0:
            continue
        where = (t + 0.5) / positions if clock == "uniform" else t
        rows.append(
            {
                "variant": name,
                "measure": measure,
                "clock": clock,
                "position": where,
                "mean": summary.mean,
                "std": summary.std,
                "seeds": summary.n,
            }
        )
    return rows


def time_rows(name: str, evaluation: SeedEvaluation) -> list[dict[str, Any]]:
    """External and internal faithfulness over time, for one variant.

    ``external``: the fraction of real nodes whose hint prediction matches
    dm-clrs's next hint, averaged over the hints, on each trace's own [0, 1]
    clock (notebook 03's Figure 4 timescale, ``clock = uniform``).
    ``internal``: Eq. 24's distance at each hint step (``clock = step``),
    over the samples whose trace counts there.  Does a recipe that is faithful
    on average stay faithful to the end of the trace?
    """
    uniform = [v for k, v in evaluation.series.items() if k.endswith("_uniform")]
    rows = []
    if uniform:
        external = np.mean(np.stack(uniform), axis=0)  # over hints: [K, bins]
        rows += _over_seeds(name, "external", "uniform", external)
    if "internal_along_time" in evaluation.series:
        internal = evaluation.series["internal_along_time"]
        rows += _over_seeds(name, "internal", "step", internal)
    return rows


@dataclasses.dataclass(frozen=True)
class VariantResult:
    """One recipe, measured: its table row and its rows over time."""

    row: dict[str, Any]
    over_time: list[dict[str, Any]]


def measure_variant(name: str, models: Models, graphs: Graphs) -> VariantResult:
    """One table row (means over the seeds of every measure) and its curves."""
    evaluation = measure_models(models, graphs.test, graphs.reference)
    scalars = evaluation.scalars
    row: dict[str, Any] = {
        "variant": name,
        "seeds": len(models),
        "hidden_size": models.config.hidden_size,
        "accuracy": _mean(scalars["accuracy"]),
        "accuracy_min": float(np.min(scalars["accuracy"])),
        "internal": _mean(scalars["internal"]),
        "internal_min": float(np.min(scalars["internal"])),
        "argmax_agreement": _mean(scalars["argmax_agreement"]),
        "external": _mean(scalars.get("external", np.nan)),
    }
    for size, batch in graphs.by_size.items():
        row[f"accuracy_n{size}"] = _mean(
            measure_models(models, batch).scalars["accuracy"]
        )
    rises = [
        model_sharpness(models.model(k), graphs.loss, k, SHARPNESS_RADIUS)
        for k in range(len(models))
    ]
    row["sharpness"] = _mean(rises)
    return VariantResult(row, time_rows(name, evaluation))


def _compiled(compiled: Model, graphs: Graphs) -> VariantResult:
    own = Models.from_models([compiled], seeds=[-1], source="compiled")
    result = measure_variant("compiled", own, graphs)
    row = {**result.row, "seeds": 0, "hidden_size": compiled.config.hidden_size}
    return VariantResult(row, result.over_time)


def verdict(rows: Sequence[Mapping[str, Any]]) -> str:
    """One sentence, from the table: which trained variant (if any) is faithful."""
    trained = [r for r in rows if r["variant"] != "compiled"]
    faithful = [r["variant"] for r in trained if is_faithful(r)]
    closest = min(trained, key=lambda r: r["internal"])
    bar = f"{FAITHFUL_ATTENTION} at accuracy >= {FAITHFUL_ACCURACY:g}"
    if faithful:
        return f"{', '.join(faithful)} meet the bar ({bar}) on the mean over seeds."
    return (
        f"No variant meets the bar ({bar}). Closest: {closest['variant']} at "
        f"internal {closest['internal']:.3f}, agreement "
        f"{closest['argmax_agreement']:.3f}, accuracy {closest['accuracy']:.3f}."
    )


def validation_rows(
    dirs: Mapping[str, Path], seeds: Sequence[int]
) -> list[dict[str, Any]]:
    """Every validation of ``seeds`` in every variant's run: the curves."""
    chosen = set(seeds)
    return [
        {"variant": name, **row}
        for name, out in dirs.items()
        for row in read_validation(out)
        if row["seed"] in chosen
    ]


def run_closing_gap(
    profile: Profile,
    algorithm: str,
    dirs: OutputDirs,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Train every variant, measure it against compiled, write table and figure.

    Files: ``results/closing_gap_<a>.csv`` (one row per variant and the
    compiled model, + sidecar with the verdict), ``results/
    closing_gap_validation_<a>.csv`` (validation score over training steps),
    ``results/closing_gap_over_time_<a>.csv`` (:func:`time_rows`: external
    and internal faithfulness along the trace) and ``figures/
    fig_closing_gap_<a>.{png,pdf}``.  Reading (``dirs.reading``): the rows of
    ``closing_gap_<a>.csv``, typed (:func:`verdict` compares its numbers).
    """
    if dirs.reading:
        return dirs.read_back(results_file(algorithm), typed=True)
    configs = variant_configs(profile, algorithm)
    seeds = configs["attention"].seeds
    run_dirs = {name: run_dir(config, dirs.runs) for name, config in configs.items()}
    run_dirs["long"] = long_run_dir(configs["long"], dirs.runs)
    results = {}
    for name, config in configs.items():
        if name == "long":  # the plain run, trained on: its first steps are reused
            continue_from(run_dirs["plain"], config, run_dirs[name], reselect=True)
        results[name] = train(config, run_dirs[name], progress=progress)
    test = faithfulness_batch(profile, algorithm)
    compiled = compile_algorithm(algorithm, hidden_size=None)
    graphs = Graphs(
        test=test,
        reference=reference_attention(compiled, test),
        by_size={
            size: first_graphs(
                eval_batch(algorithm, "test", size), profile.faithfulness_graphs
            )
            for size in profile.generalisation_sizes
        },
        loss=sample_batch(algorithm, profile.val_num_nodes, profile.batch_size, seed=2),
    )
    measured = {"compiled": _compiled(compiled, graphs)}
    extra: dict[str, dict[str, Any]] = {"compiled": {"steps": 0}}
    plain_steps = configs["plain"].steps
    for name in tqdm(
        VARIANTS, desc=f"closing the gap {algorithm}", disable=not progress
    ):
        models = _first_seeds(Models.from_run(results[name]), seeds)
        measured[name] = measure_variant(name, models, graphs)
        after = plain_steps if name == "long" else None
        extra[name] = {
            "steps": configs[name].steps,
            **selection_columns(results[name].metrics, seeds, after),
        }
    rows = [{**m.row, **extra[name]} for name, m in measured.items()]
    write_closing_gap(
        rows,
        validation_rows(run_dirs, seeds),
        [r for m in measured.values() for r in m.over_time],
        algorithm,
        dirs,
        metadata(profile, seeds=list(seeds), verdict=verdict(rows)),
    )
    return rows


def write_closing_gap(
    rows: Sequence[Mapping[str, Any]],
    curves: Sequence[Mapping[str, Any]],
    over_time: Sequence[Mapping[str, Any]],
    algorithm: str,
    dirs: OutputDirs,
    meta: Mapping[str, Any],
) -> list[Path]:
    """The table, the two kinds of curves and the figure, each written atomically."""
    written = [
        files.write_table(dirs.results / results_file(algorithm), rows, meta),
        files.write_table(dirs.results / validation_file(algorithm), curves, meta),
        files.write_table(dirs.results / over_time_file(algorithm), over_time, meta),
    ]
    val_means = {
        name: step_means([c for c in curves if c["variant"] == name], "val_score")
        for name in dict.fromkeys(c["variant"] for c in curves)
    }
    fig = plots.plot_closing_gap(rows, val_means, over_time, algorithm)
    written += files.save_figure(fig, dirs.figures / figure_stem(algorithm))
    plots.close(fig)
    return written
