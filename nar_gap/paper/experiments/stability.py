"""Appendix D.8: are compiled minima stable under further training?

Start every seed from the compiled parameters and keep training with Adam; the
seeds differ only in their data order.  Along the way (at
``Profile.stability_points`` evenly spaced steps) every seed is evaluated on
the test graphs: accuracy, internal distance to the compiled attention,
external faithfulness, and how far its parameters moved (relative L2,
``‖θ − θ_c‖ / ‖θ_c‖``).  The same architecture trained from its random
initialisation for the same steps is the "trained" row of Table 16.

Training resumes segment by segment in one run directory
(:func:`~nar_gap.training.segments.train_through`), so an interrupted study
redoes nothing that was finished, and every number is a pure function of the
seeds.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from nar_gap.analysis.models import (
    Models,
    measure_models,
    reference_attention,
    relative_drift,
)
from nar_gap.analysis.stats import mean_std_max
from nar_gap.compiler import compile_algorithm
from nar_gap.model.seeds import init_stacked
from nar_gap.paper import plots
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import faithfulness_batch, metadata, run_dir
from nar_gap.system import files
from nar_gap.tasks.batch import Batch
from nar_gap.training import TrainConfig, train_through

ROWS_FILE = "stability_rows.json"


def stability_file(algorithm: str) -> str:
    """Every evaluation of training on from compiled."""
    return f"stability_{algorithm}.csv"


def table16_file(algorithm: str) -> str:
    """Table 16: per setting and step, the evaluations' summary."""
    return f"table16_stability_{algorithm}.csv"


def figure_stem(algorithm: str) -> str:
    """The drift figure."""
    return f"fig_stability_{algorithm}"


def schedule(steps: int, points: int, early: int = 6) -> list[int]:
    """Evaluation steps: ``early`` of 1, 2, 4, 8, ... and ``points`` evenly spaced.

    Trained on from compiled weights, accuracy collapses within the first
    Adam steps (before step 62 at the cpu profile, the first evenly spaced
    point), so the doubling steps resolve the collapse; the evenly spaced
    ones, ending at ``steps``, the recovery.
    """
    doubling = {2**k for k in range(early) if 2**k < steps}
    even = {max(1, round(steps * (k + 1) / points)) for k in range(points)}
    return sorted(doubling | even)


def _measured_rows(
    model: Any,
    config: TrainConfig,
    batch: Batch,
    ref: Any,
    label: str,
    step: int,
    params: Any,
) -> list[dict[str, Any]]:
    """One row per seed of ``params`` (stacked) at ``step`` (:func:`train_on_from`)."""
    models = Models(config.network, params, tuple(config.seeds))
    ev = measure_models(models, batch, ref)
    drift = relative_drift(params, model.params)
    return [
        {
            "start": label,
            "optimizer": config.optimizer,
            "learning_rate": config.learning_rate,
            "seed": int(seed),
            "step": step,
            "accuracy": float(ev.scalars["accuracy"][k]),
            "internal": float(ev.scalars["internal"][k]),
            "external": float(ev.scalars.get("external", [np.nan] * len(drift))[k]),
            "param_drift": float(drift[k]),
        }
        for k, seed in enumerate(config.seeds)
    ]


def _start_params(model: Any, config: TrainConfig, batch: Batch, start: str) -> Any:
    """Every seed's parameters at step 0, stacked: the compiled ones, or its init."""
    if start == "compiled":
        return jax.tree_util.tree_map(
            lambda x: np.stack([np.asarray(x)] * len(config.seeds)), model.params
        )
    # where training from scratch starts: each seed's initialisation
    return init_stacked(config.network, batch, config.seeds)


def train_on_from(
    model: Any,
    config: TrainConfig,
    batch: Batch,
    out_dir: str | os.PathLike,
    points: int,
    start: str = "compiled",
    progress: bool = True,
    early: int = 6,
    label: str | None = None,
) -> list[dict[str, Any]]:
    """Train ``config.seeds`` on from ``model.params`` (``start="random"``: from init).

    ``label`` names the setting in the rows' ``start`` column (default:
    ``start``), so controls trained from the same start stay apart.

    Evaluated at step 0 and at :func:`schedule`'s steps (``early`` doubling
    steps, ``points`` evenly spaced ones).

    Returns one row per (seed, evaluation step), step 0 included: ``seed``,
    ``step``, ``accuracy``, ``internal`` (to ``model``'s attention),
    ``external``, ``param_drift`` (from ``model.params``), ``optimizer``,
    ``learning_rate``.
    """
    label = start if label is None else label
    if config.network != model.config:
        raise ValueError(
            "the training config's network must be the compiled model's "
            "(use dataclasses.replace(config, network=model.config))"
        )
    ref = reference_attention(model, batch)
    # Evaluations already made in this run directory, by step: a resumed study
    # must not evaluate a later checkpoint under an earlier step's name.
    record_file = Path(out_dir) / ROWS_FILE
    done = files.read_json(record_file) if record_file.exists() else {}

    def key(step: int) -> str:
        return f"{label}:{step}:{list(config.seeds)}"

    def record(step: int, params: Any) -> None:
        done[key(step)] = _measured_rows(model, config, batch, ref, label, step, params)
        files.write_json_atomic(record_file, done)

    rows = _measured_rows(
        model, config, batch, ref, label, 0, _start_params(model, config, batch, start)
    )
    steps = schedule(config.steps, points, early)
    train_through(
        config,
        out_dir,
        steps,
        record,
        initial_params=model.params if start == "compiled" else None,
        progress=progress,
        skip=lambda step: key(step) in done,
    )
    for step in steps:
        rows += done[key(step)]
    return rows


def summary_rows(rows: list[dict[str, Any]], algorithm: str) -> list[dict[str, Any]]:
    """Table 16: per start (compiled / random), at the first and last step."""
    table = []
    for start in dict.fromkeys(r["start"] for r in rows):
        mine = [r for r in rows if r["start"] == start]
        for step in sorted(
            {min(r["step"] for r in mine), max(r["step"] for r in mine)}
        ):
            at = [r for r in mine if r["step"] == step]
            accuracy = [r["accuracy"] for r in at]
            table.append(
                {
                    "algorithm": algorithm,
                    "start": start,
                    "step": step,
                    "seeds": len(at),
                    "performance": mean_std_max(accuracy),
                    "accuracy_mean": float(np.mean(accuracy)),
                    "accuracy_std": float(np.std(accuracy)),
                    "accuracy_max": float(np.max(accuracy)),
                    "internal_mean": float(np.mean([r["internal"] for r in at])),
                    "param_drift_mean": float(np.mean([r["param_drift"] for r in at])),
                }
            )
    return table


def write_stability(
    rows: list[dict[str, Any]],
    algorithm: str,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    metadata: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write every evaluation, Table 16 and the drift figure.

    Files: ``results/stability_<a>.csv``, ``results/table16_stability_<a>.csv``
    and ``figures/fig_stability_<a>.{png,pdf}``.
    """
    results, figures = Path(results_dir), Path(figures_dir)
    written = [
        files.write_table(results / stability_file(algorithm), rows, metadata),
        files.write_table(
            results / table16_file(algorithm),
            summary_rows(rows, algorithm),
            metadata,
        ),
    ]
    fig = plots.plot_stability(rows, f"{algorithm}: training on from compiled")
    written += files.save_figure(fig, figures / figure_stem(algorithm))
    plots.close(fig)
    return written


def stability_settings(
    config: TrainConfig, profile: Profile
) -> list[tuple[str, str, TrainConfig]]:
    """``(label, start, config)`` of every training the study runs.

    The paper's two (Adam at the config's rate, from compiled and from random
    initialisation), then the profile's controls from compiled: an optimiser
    and a rate each, labelled e.g. ``compiled, sgd lr 0.001``.
    """
    settings = [("compiled", "compiled", config), ("random", "random", config)]
    for optimizer, rate in profile.stability_controls:
        control = dataclasses.replace(config, optimizer=optimizer, learning_rate=rate)
        settings.append((f"compiled, {optimizer} lr {rate:g}", "compiled", control))
    return settings


def run_stability(
    profile: Profile,
    algorithm: str,
    dirs: OutputDirs,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """D.8: the minimal compiled model trained on, against the same from random.

    Reading (``dirs.reading``): the rows of ``stability_<a>.csv``, as written.
    """
    if dirs.reading:
        return dirs.read_back(stability_file(algorithm))
    compiled = compile_algorithm(algorithm, hidden_size=None)
    config = profile.train_config(
        compiled.config, seeds=profile.seed_list(profile.stability_orders)
    )
    batch = faithfulness_batch(profile, algorithm)
    rows = []
    for label, start, setting in stability_settings(config, profile):
        out = dirs.runs / f"stability_{start}_{run_dir(setting, dirs.runs).name}"
        rows += train_on_from(
            compiled,
            setting,
            batch,
            out,
            profile.stability_points,
            start,
            progress,
            profile.stability_early,
            label,
        )
    write_stability(
        rows,
        algorithm,
        dirs.results,
        dirs.figures,
        metadata(profile, config=config.to_dict()),
    )
    return rows
