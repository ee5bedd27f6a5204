"""Appendix D.11: loss landscapes around compiled, learned and initial parameters.

Each centre gets its own pair of filter-normalised directions (so every
landscape is drawn in its own units, as Li et al. do) and is evaluated on the
same batch.  The table reports, per centre, the loss at the centre, the
sharpness (mean loss rise on a circle of radius 0.1 and of radius 0.5) and the
largest loss on the grid; "compiled minima are sharper than learned ones" is
then a comparison of two columns.

Sharpness compares only within one network class: a radius of 0.1 moves a
hidden-7 network without layer norm and a hidden-128 one with it by
different things.  So beside the compiled centre the table has a learned
minimum of the compiled network's own class (:data:`SAME_CLASS`): the compiled
architecture trained from its random initialisation (notebook 05's
``random`` setting, at the profile's ``same_class_steps``), its best seed by
test score.  Its row says whether it solves the task (:data:`SOLVED_SCORE`):
a minimum that does not is a minimum of the loss, not a learned solution.

One plane is one draw of two directions, so the verdict reads
:func:`plane_sharpness_rows` (``landscape_planes_<a>.csv``): independent
planes through each compiled and same-class network.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from tqdm import tqdm

from nar_gap.analysis.landscape import (
    Landscape,
    loss_grid,
    plane_directions,
    sharpness_on_planes,
)
from nar_gap.compiler import compile_algorithm
from nar_gap.compiler.compiled_model import CompiledModel
from nar_gap.compiler.config import CompilerConfig
from nar_gap.model.model import Model
from nar_gap.model.seeds import init_stacked, unstack_tree
from nar_gap.paper import plots
from nar_gap.paper.experiments import stability
from nar_gap.paper.experiments.naming import landscape_stem
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import (
    baseline_config,
    faithfulness_batch,
    metadata,
    run_dir,
    train_once,
)
from nar_gap.programs.registry import SIZE_FREE_PROGRAMS
from nar_gap.system import files
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.sampling import sample_batch
from nar_gap.training import TrainConfig, TrainResult, train
from nar_gap.training.run_dir import resume_plan

SHARPNESS_RADII = (0.1, 0.5)
# The centre trained in the compiled network's own class (hidden size, no
# layer norm, heads and decoders): the one whose sharpness compares with the
# compiled centre's.
SAME_CLASS = "learned (compiled class)"
# The test score at which a learned centre counts as solving the task (its
# ``solves_task`` column); the compiled networks score 1.
SOLVED_SCORE = 0.95


# The columns that compare the compiled centre with SAME_CLASS (same_class_rows).
SAME_CLASS_COLUMNS = (
    "centre",
    "hidden_size",
    "use_ln",
    "test_score",
    "solves_task",
    "centre_loss",
    "sharpness_r0.1",
    "sharpness_r0.5",
    "max_grid_loss",
)


# Independent planes per network in the sharpness test: the exact one-sided
# rank test of 5 planes against 5 reaches p = 1/252 (4 against 4: 1/70).
SHARPNESS_PLANES = 5
# A network's columns in the planes table besides its centre (the compiled
# network's are empty: it is not trained).
SEED_COLUMNS = ("seed", "test_score", "solves_task", "steps")
# Controls: the compiled network with the compiler's margins times each
# factor.  A compiled minimum's rise grows with its logits, so the verdict
# compares every compiled network that stays exact, the flattest included.
MARGIN_CONTROLS = (0.5,)


def planes_file(algorithm: str) -> str:
    """Notebook 06's per-plane sharpness of the compiled and same-class networks."""
    return f"landscape_planes_{algorithm}.csv"


def landscape_file(algorithm: str) -> str:
    """Per centre: sharpness, curvature and the loss at the centre."""
    return f"landscape_{algorithm}.csv"


def grids_file(algorithm: str) -> str:
    """Every centre's loss grid and the grid's axis."""
    return f"landscape_{algorithm}.npz"


def files_of(algorithm: str) -> list[str]:
    """The results files :func:`run_landscapes` writes for ``algorithm``.

    The planes file only where a compiled centre exists (a size-free program).
    """
    written = [landscape_file(algorithm), grids_file(algorithm)]
    return written + (
        [planes_file(algorithm)] if algorithm in SIZE_FREE_PROGRAMS else []
    )


def centre_name(label: str) -> str:
    """``label`` as one file-name word: ``learned_compiled_class``, say."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def centre_stem(algorithm: str, label: str) -> str:
    """The figure stem of the centre ``label`` (:func:`.naming.landscape_stem`)."""
    return landscape_stem(algorithm, centre_name(label))


def centre_key(index: int, seed: int = 0) -> jax.Array:
    """The key of the ``index``-th centre's plane: its two directions come from it."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), index)


def landscape_rows_and_surfaces(
    centres: Mapping[str, Model],
    batch: Batch,
    seed: int = 0,
    radius: float = 1.0,
    points: int = 21,
    progress: bool = True,
    columns: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Landscape]]:
    """One table row and one landscape per named centre (directions from ``seed``).

    ``columns``: more columns for a centre's row, by label (a trained
    centre's test score, :func:`score_columns`).
    """
    rows, surfaces = [], {}
    for index, (label, centre) in enumerate(
        tqdm(centres.items(), desc="landscapes", disable=not progress)
    ):
        key = centre_key(index, seed)
        land, _ = loss_grid(
            centre.config,
            centre.params,
            batch,
            key,
            radius=radius,
            points=points,
            radii=SHARPNESS_RADII,
        )
        row = {
            "centre": label,
            "algorithm": batch.algorithm,
            "hidden_size": centre.config.hidden_size,
            "use_ln": centre.config.use_ln,
            "centre_loss": land.centre_loss,
        }
        row.update({f"sharpness_r{r:g}": rise for r, rise in land.sharpness.items()})
        row["max_grid_loss"] = float(np.max(land.losses))
        row["radius"] = radius
        row["points"] = points
        row.update((columns or {}).get(label, {}))
        rows.append(row)
        surfaces[label] = land
    return rows, surfaces


def plane_key(network: int, plane: int) -> jax.Array:
    """The key of the ``network``-th network's ``plane``-th test plane.

    Folded from :func:`centre_key`, so no test plane is a figure's plane.
    """
    return jax.random.fold_in(centre_key(network), plane)


def plane_sharpness_rows(
    networks: Sequence[tuple[Model, Mapping[str, Any]]],
    batch: Batch,
    planes: int = SHARPNESS_PLANES,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Sharpness on ``planes`` independent planes through each network.

    ``networks``: ``(model, columns)`` pairs, ``columns`` naming the network
    (``centre``, ``seed``, its test score).  One row per network and plane:
    the columns, ``plane``, and the mean loss rise on the circles of
    :data:`SHARPNESS_RADII`.  A network's planes come from :func:`plane_key`
    of its position, so adding a network last keeps the others' planes.
    """
    rows = []
    for index, (model, columns) in enumerate(
        tqdm(networks, desc="sharpness planes", disable=not progress)
    ):
        keys = [plane_key(index, plane) for plane in range(planes)]
        for plane, rises in enumerate(
            sharpness_on_planes(model, batch, keys, SHARPNESS_RADII)
        ):
            rises = {f"sharpness_r{r:g}": rise for r, rise in rises.items()}
            rows.append({**columns, "plane": plane, **rises})
    return rows


def planes_by_network(rows: Sequence[Mapping[str, str]]) -> dict[tuple, list]:
    """A planes table's rows per ``(centre, seed)`` (a compiled network's seed: "")."""
    networks: dict[tuple, list] = {}
    for row in rows:
        networks.setdefault((row["centre"], row["seed"]), []).append(row)
    return networks


def same_class_rows(rows: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The compiled row and :data:`SAME_CLASS`'s, in :data:`SAME_CLASS_COLUMNS`.

    The two centres whose sharpness compares: one network class, one
    compiled and one trained (a missing value is ``""``).
    """
    return [
        {column: row.get(column, "") for column in SAME_CLASS_COLUMNS}
        for row in rows
        if row["centre"] in ("compiled", SAME_CLASS)
    ]


def write_landscapes(
    rows: list[dict[str, Any]],
    surfaces: Mapping[str, Landscape],
    algorithm: str,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    metadata: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Write the landscape table, its grids and one figure per centre.

    Files: ``results/landscape_<a>.csv`` (+ sidecar, + ``.npz`` of the grids)
    and ``figures/<stem>.{png,pdf}`` with the stem :func:`centre_stem`
    (``fig17_bfs_landscape_<centre>``, the paper's Figure 17, for BFS;
    ``fig_landscape_<a>_<centre>`` otherwise; ``<centre>`` is
    :func:`centre_name`'s).
    """
    results, figures = Path(results_dir), Path(figures_dir)
    written = [files.write_table(results / landscape_file(algorithm), rows, metadata)]
    arrays = {
        f"{centre_name(label)}_losses": land.losses for label, land in surfaces.items()
    }
    if surfaces:
        arrays["axis"] = next(iter(surfaces.values())).alphas
    written.append(
        files.write_arrays(results / grids_file(algorithm), arrays, metadata)
    )
    for stem, fig in landscape_figures(surfaces, algorithm).items():
        written += files.save_figure(fig, figures / stem)
        plots.close(fig)
    return written


def landscape_figures(
    surfaces: Mapping[str, Landscape], algorithm: str
) -> dict[str, plots.Figure]:
    """One figure per centre (:func:`centre_stem`), on one colour scale.

    The scale spans the finite log10 losses of all the centres, so the
    compiled, learned and initial landscapes compare by colour.
    """
    vmin, vmax = plots.log_loss_range(land.losses for land in surfaces.values())
    return {
        centre_stem(algorithm, label): plots.plot_landscape(
            land.alphas,
            land.betas,
            land.losses,
            f"{algorithm}: {label} parameters",
            vmin=vmin,
            vmax=vmax,
        )
        for label, land in surfaces.items()
    }


def run_landscapes(
    profile: Profile,
    algorithm: str,
    dirs: OutputDirs,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """D.11: compiled (minimal), learned (best baseline seed), initial parameters.

    And last, a learned minimum of the compiled network's class
    (:data:`SAME_CLASS`, :func:`same_class_run`), and the sharpness test's
    planes (:func:`plane_sharpness_rows`, :func:`planes_file`).  An algorithm
    without a program that runs every size (DFS's is built for one graph
    size) has no compiled centre yet: its landscapes are the learned and the
    initial ones.  Reading (``dirs.reading``): the rows of
    ``landscape_<a>.csv``, as written.
    """
    if dirs.reading:
        return dirs.read_back(landscape_file(algorithm))
    centres = landscape_centres(profile, algorithm, dirs, progress)
    rows, surfaces = landscape_rows_and_surfaces(
        centres.models,
        centres.batch,
        points=profile.landscape_points,
        progress=progress,
        columns=centres.columns,
    )
    meta = metadata(profile, learned_seed=centres.learned_seed)
    write_landscapes(rows, surfaces, algorithm, dirs.results, dirs.figures, meta)
    if centres.compared:
        planes = plane_sharpness_rows(
            centres.compared, centres.batch, progress=progress
        )
        files.write_table(dirs.results / planes_file(algorithm), planes, meta)
    return rows


@dataclasses.dataclass(frozen=True)
class Centres:
    """The models a landscape is drawn around, and the batch it is drawn on."""

    # "compiled" (when size-free), "learned", "initial", then SAME_CLASS (when
    # size-free): new centres go last, so the others keep their planes
    models: dict[str, Model]
    batch: Batch
    learned_seed: int
    # per trained centre: its seed, test score and whether that solves the task
    columns: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    # the networks the sharpness test compares (plane_sharpness_rows): the
    # compiled one, every same-class seed and the compiled margin controls,
    # each with its columns
    compared: tuple[tuple[Model, dict[str, Any]], ...] = ()

    def directions(self, label: str, seed: int = 0) -> tuple[Any, Any]:
        """The two directions of ``label``'s plane in :func:`run_landscapes`."""
        index = list(self.models).index(label)
        return plane_directions(centre_key(index, seed), self.models[label].params)


def best_seed(run: TrainResult) -> int:
    """The index of ``run``'s seed with the best test score (first of ties)."""
    return int(np.argmax([m["test_score"] for m in run.metrics]))


def score_columns(run: TrainResult, index: int) -> dict[str, Any]:
    """A trained centre's columns: its seed, steps, test score, and solved or not.

    A minimum that does not solve the task is another claim than a learned
    solution's, so the row says which it is.
    """
    score = float(run.metrics[index]["test_score"])
    solves = score >= SOLVED_SCORE
    return {
        "seed": int(run.config.seeds[index]),
        "seeds_trained": len(run.config.seeds),
        "steps": run.config.steps,
        "test_score": score,
        "solves_task": solves,
        "note": "solves the task"
        if solves
        else f"does not solve the task in {run.config.steps} steps "
        f"(test score below {SOLVED_SCORE:g}): a minimum of the loss, "
        "not a learned solution",
    }


def same_class_config(profile: Profile, compiled: CompiledModel) -> TrainConfig:
    """Notebook 05's ``random`` setting: the compiled network, from random init.

    The compiled model's own :class:`~nar_gap.model.config.NetworkConfig`
    (hidden size, no layer norm, heads, decoders), the profile's optimiser,
    ``stability_orders`` seeds, as :func:`.stability.run_stability` trains
    it, for the profile's ``same_class_steps`` (0: its ``steps``, notebook
    05's own run).
    """
    return profile.train_config(
        compiled.config,
        seeds=profile.seed_list(profile.stability_orders),
        steps=profile.same_class_steps or profile.steps,
    )


def same_class_dir(config: TrainConfig, runs: str | os.PathLike) -> Path:
    """Where :func:`.stability.run_stability` trains ``config`` from random init."""
    return Path(runs) / f"stability_random_{run_dir(config, runs).name}"


def same_class_run(
    profile: Profile,
    compiled: CompiledModel,
    dirs: OutputDirs,
    progress: bool = True,
) -> TrainResult:
    """Notebook 05's ``random`` run of ``compiled``'s class, read back.

    Not finished there (notebook 06 called alone, or ``same_class_steps``
    longer than notebook 05 trains), it is trained here by notebook 05's own
    function, so that notebook later finds it done.
    """
    config = same_class_config(profile, compiled)
    out = same_class_dir(config, dirs.runs)
    done = resume_plan(config, out).steps_done.values()
    if any(step != config.steps for step in done):
        batch = faithfulness_batch(profile, config.network.algorithm)
        stability.train_on_from(
            compiled,
            config,
            batch,
            out,
            profile.stability_points,
            "random",
            progress,
            profile.stability_early,
        )
    return train(config, out, progress=progress)


def landscape_centres(
    profile: Profile, algorithm: str, dirs: OutputDirs, progress: bool = True
) -> Centres:
    """D.11's centres: compiled (minimal), learned (best baseline seed), its start.

    The learned seed is the baseline run's best on the test graphs; it is
    trained (or read back) in ``dirs.runs``.  A size-free program adds
    :data:`SAME_CLASS`, the best seed of :func:`same_class_run`.
    """
    config = baseline_config(profile, algorithm)
    run = train_once(config, dirs.runs, progress)
    best = best_seed(run)
    batch = sample_batch(algorithm, profile.val_num_nodes, profile.batch_size, seed=2)
    initial = init_stacked(config.network, batch, (int(config.seeds[best]),))
    models = {
        "learned": Model(config.network, unstack_tree(run.params, best)),
        "initial": Model(config.network, unstack_tree(initial, 0)),  # its start
    }
    columns = {"learned": score_columns(run, best)}
    if algorithm not in SIZE_FREE_PROGRAMS:
        return Centres(models, batch, int(config.seeds[best]), columns)
    test = sample_batch(algorithm, profile.test_num_nodes, profile.batch_size, seed=3)
    compiled_ones = compiled_networks(algorithm, (batch, test))
    compiled = compiled_ones[0][0]
    same = same_class_run(profile, compiled, dirs, progress)
    index = best_seed(same)
    models = {
        "compiled": compiled,
        **models,
        SAME_CLASS: Model(compiled.config, unstack_tree(same.params, index)),
    }
    columns[SAME_CLASS] = score_columns(same, index)
    seeds = []
    for i in range(len(same.config.seeds)):
        scores = score_columns(same, i)
        row = {"centre": SAME_CLASS, "exact": ""} | {k: scores[k] for k in SEED_COLUMNS}
        seeds.append((Model(compiled.config, unstack_tree(same.params, i)), row))
    # the controls last: a network's planes follow its position
    compared = (compiled_ones[0], *seeds, *compiled_ones[1:])
    return Centres(models, batch, int(config.seeds[best]), columns, compared)


def margin_label(factor: float) -> str:
    """The centre name of the compiled network at ``factor`` times the margins."""
    return "compiled" if factor == 1 else f"compiled, margins x{factor:g}"


def compiled_networks(
    algorithm: str, batches: Sequence[Batch]
) -> list[tuple[Model, dict[str, Any]]]:
    """The compiled network and its :data:`MARGIN_CONTROLS`, with their columns.

    Each says whether it is ``exact`` (dm-clrs's trace on every batch): only
    an exact one is a compiled solution.
    """
    networks = []
    for factor in (1, *MARGIN_CONTROLS):
        config = CompilerConfig().with_margins_times(factor)
        model = compile_algorithm(algorithm, hidden_size=None, config=config)
        exact = all(model.agrees(batch) for batch in batches)
        columns = {"centre": margin_label(factor), "exact": exact}
        networks.append((model, {**columns, **dict.fromkeys(SEED_COLUMNS, "")}))
    return networks
