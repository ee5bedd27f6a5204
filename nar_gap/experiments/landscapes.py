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

from nar_gap.data import Batch
from nar_gap.landscape import Landscape, loss_grid
from nar_gap.network import NetworkConfig

SHARPNESS_RADII = (0.1, 0.5)


@dataclasses.dataclass(frozen=True)
class Centre:
    """A point in some network's parameter space, with a name for the tables."""

    label: str
    config: NetworkConfig
    params: Any


def landscape_rows_and_surfaces(
    centres: list[Centre],
    batch: Batch,
    seed: int = 0,
    radius: float = 1.0,
    points: int = 21,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Landscape]]:
    """One table row and one landscape per centre (directions seeded by ``seed``)."""
    rows, surfaces = [], {}
    for index, centre in enumerate(
        tqdm(centres, desc="landscapes", disable=not progress)
    ):
        key = jax.random.fold_in(jax.random.PRNGKey(seed), index)
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
            "centre": centre.label,
            "algorithm": batch.algorithm,
            "hidden_size": centre.config.hidden_size,
            "centre_loss": land.centre_loss,
        }
        row.update({f"sharpness_r{r:g}": rise for r, rise in land.sharpness.items()})
        row["max_grid_loss"] = float(np.max(land.losses))
        row["radius"] = radius
        row["points"] = points
        rows.append(row)
        surfaces[centre.label] = land
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
    and ``figures/fig_landscape_<a>_<centre>.{png,pdf}``.
    """
    from nar_gap import io, plots

    results, figures = Path(results_dir), Path(figures_dir)
    written = [io.write_table(results / f"landscape_{algorithm}.csv", rows, metadata)]
    arrays = {f"{label}_losses": land.losses for label, land in surfaces.items()}
    if surfaces:
        arrays["axis"] = next(iter(surfaces.values())).alphas
    written.append(io.write_npz_atomic(results / f"landscape_{algorithm}.npz", arrays))
    for label, land in surfaces.items():
        fig = plots.plot_landscape(
            land.alphas, land.betas, land.losses, f"{algorithm}: {label} parameters"
        )
        written += io.save_figure(fig, figures / f"fig_landscape_{algorithm}_{label}")
        plots.close(fig)
    return written
