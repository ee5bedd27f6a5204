"""Appendix D.11: loss landscapes around compiled, learned and initial parameters.

Each centre gets its own pair of filter-normalised directions (so every
landscape is drawn in its own units, as Li et al. do) and is evaluated on the
same batch.  The table reports, per centre, the loss at the centre, the
sharpness (mean loss rise on a circle of radius 0.1 and of radius 0.5) and the
largest loss on the grid; "compiled minima are sharper than learned ones" is
then a comparison of two columns.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
from tqdm import tqdm

from nar_gap import plots
from nar_gap.analysis.landscape import Landscape, loss_grid, plane_directions
from nar_gap.compiler import compile_algorithm
from nar_gap.experiments.naming import landscape_stem
from nar_gap.experiments.profiles import OutputDirs, Profile
from nar_gap.experiments.runs import baseline_config, metadata, train_once
from nar_gap.model.model import Model
from nar_gap.model.seeds import init_stacked, unstack_tree
from nar_gap.programs.registry import SIZE_FREE_PROGRAMS
from nar_gap.system import files
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.sampling import sample_batch

SHARPNESS_RADII = (0.1, 0.5)


def landscape_file(algorithm: str) -> str:
    """Per centre: sharpness, curvature and the loss at the centre."""
    return f"landscape_{algorithm}.csv"


def grids_file(algorithm: str) -> str:
    """Every centre's loss grid and the grid's axis."""
    return f"landscape_{algorithm}.npz"


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
) -> tuple[list[dict[str, Any]], dict[str, Landscape]]:
    """One table row and one landscape per named centre (directions from ``seed``)."""
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
            "centre_loss": land.centre_loss,
        }
        row.update({f"sharpness_r{r:g}": rise for r, rise in land.sharpness.items()})
        row["max_grid_loss"] = float(np.max(land.losses))
        row["radius"] = radius
        row["points"] = points
        rows.append(row)
        surfaces[label] = land
    return rows, surfaces


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
    and ``figures/<stem>.{png,pdf}`` with the stem :func:`.naming.landscape_stem`
    (``fig17_bfs_landscape_<centre>``, the paper's Figure 17, for BFS;
    ``fig_landscape_<a>_<centre>`` otherwise).
    """
    results, figures = Path(results_dir), Path(figures_dir)
    written = [files.write_table(results / landscape_file(algorithm), rows, metadata)]
    arrays = {f"{label}_losses": land.losses for label, land in surfaces.items()}
    if surfaces:
        arrays["axis"] = next(iter(surfaces.values())).alphas
    written.append(files.write_npz_atomic(results / grids_file(algorithm), arrays))
    for stem, fig in landscape_figures(surfaces, algorithm).items():
        written += files.save_figure(fig, figures / stem)
        plots.close(fig)
    return written


def landscape_figures(
    surfaces: Mapping[str, Landscape], algorithm: str
) -> dict[str, plots.Figure]:
    """One figure per centre (:func:`.naming.landscape_stem`), on one colour scale.

    The scale spans the finite log10 losses of all the centres, so the
    compiled, learned and initial landscapes compare by colour.
    """
    vmin, vmax = plots.log_loss_range(land.losses for land in surfaces.values())
    return {
        landscape_stem(algorithm, label): plots.plot_landscape(
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
    """D.11: compiled (minimal), learned (best baseline seed) and initial parameters.

    An algorithm without a program that runs every size (DFS's is built
    for one graph size) has no compiled centre yet: its landscapes are the
    learned and the initial ones.
    """
    centres = landscape_centres(profile, algorithm, dirs, progress)
    rows, surfaces = landscape_rows_and_surfaces(
        centres.models,
        centres.batch,
        points=profile.landscape_points,
        progress=progress,
    )
    write_landscapes(
        rows,
        surfaces,
        algorithm,
        dirs.results,
        dirs.figures,
        metadata(profile, learned_seed=centres.learned_seed),
    )
    return rows


@dataclasses.dataclass(frozen=True)
class Centres:
    """The models a landscape is drawn around, and the batch it is drawn on."""

    models: dict[str, Model]  # "compiled" (when size-free), "learned", "initial"
    batch: Batch
    learned_seed: int

    def directions(self, label: str, seed: int = 0) -> tuple[Any, Any]:
        """The two directions of ``label``'s plane in :func:`run_landscapes`."""
        index = list(self.models).index(label)
        return plane_directions(centre_key(index, seed), self.models[label].params)


def landscape_centres(
    profile: Profile, algorithm: str, dirs: OutputDirs, progress: bool = True
) -> Centres:
    """D.11's centres: compiled (minimal), learned (best baseline seed), its start.

    The learned seed is the baseline run's best on the test graphs; it is
    trained (or read back) in ``dirs.runs``.
    """
    config = baseline_config(profile, algorithm)
    run = train_once(config, dirs.runs, progress)
    best = int(np.argmax([m["test_score"] for m in run.metrics]))
    batch = sample_batch(algorithm, profile.val_num_nodes, profile.batch_size, seed=2)
    initial = init_stacked(config.network, batch, (int(config.seeds[best]),))
    compiled = (
        {"compiled": compile_algorithm(algorithm, hidden_size=None)}
        if algorithm in SIZE_FREE_PROGRAMS
        else {}
    )
    models = {
        **compiled,
        "learned": Model(config.network, unstack_tree(run.params, best)),
        "initial": Model(config.network, unstack_tree(initial, 0)),  # its start
    }
    return Centres(models, batch, int(config.seeds[best]))
