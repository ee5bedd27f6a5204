"""Appendix D.11: loss landscapes, flat and as a surface, on one colour scale."""

from __future__ import annotations

from collections.abc import Iterable

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from nar_gap.paper.plots.style import OVERFLOW_COLOUR, colour_bar, styled


def _log_loss(losses: np.ndarray) -> np.ndarray:
    """log10 of the losses, floored at 1e-12; inf and NaN stay non-finite."""
    return np.log10(np.maximum(np.asarray(losses, np.float64), 1e-12))


def log_loss_range(surfaces: Iterable[np.ndarray]) -> tuple[float, float]:
    """(min, max) of log10 loss over the finite points of all ``surfaces``.

    One range for every landscape of an algorithm puts them on one colour
    scale, so a colour means the same loss in each; (0, 1) if none is finite.
    """
    finite = [v[np.isfinite(v)] for v in map(_log_loss, surfaces)]
    values = np.concatenate(finite) if finite else np.zeros(0)
    if not values.size:
        return 0.0, 1.0
    return float(values.min()), float(values.max())


def _surface(fig: Figure, alphas, betas, values, cmap, norm: Normalize) -> None:
    """The right panel: the finite log10 losses as a surface over the plane."""
    right = fig.add_subplot(1, 2, 2, projection="3d")
    grid_a, grid_b = np.meshgrid(alphas, betas, indexing="ij")
    finite = np.isfinite(values)
    right.plot_surface(
        grid_a, grid_b, np.where(finite, values, np.nan), cmap=cmap, norm=norm, lw=0
    )
    right.set_zlim(norm.vmin, norm.vmax)
    for axis in (right.xaxis, right.yaxis):
        axis.set_major_locator(MaxNLocator(5))
    right.set_xlabel("direction 1")
    right.set_ylabel("direction 2")
    right.set_zlabel("log10 loss")


@styled()
def plot_landscape(
    alphas: np.ndarray,
    betas: np.ndarray,
    losses: np.ndarray,
    title: str,
    vmin: float | None = None,
    vmax: float | None = None,
) -> Figure:
    """Appendix D.11: heat map (left) and surface (right) of a loss landscape.

    Losses are drawn on a log10 scale (compiled minima rise by orders of
    magnitude within the plotted square), between ``vmin`` and ``vmax`` (in
    log10 loss; :func:`log_loss_range` of all the surfaces to be compared,
    default this one's).  A grid point whose loss overflowed (inf or NaN) is
    drawn in :data:`OVERFLOW_COLOUR` and counted in a legend; a contour plot
    would have left it blank, like the background.
    """
    values = _log_loss(losses)
    finite = np.isfinite(values)
    low, high = log_loss_range([losses])
    norm = Normalize(low if vmin is None else vmin, high if vmax is None else vmax)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad=OVERFLOW_COLOUR)
    shown = np.ma.masked_invalid(values)
    fig = plt.figure(figsize=(9, 3.8))
    left = fig.add_subplot(1, 2, 1)
    mesh = left.pcolormesh(
        alphas, betas, shown.T, shading="nearest", cmap=cmap, norm=norm
    )
    left.plot([0], [0], "r+", ms=10)
    left.set_xlabel("direction 1")
    left.set_ylabel("direction 2")
    colour_bar(fig, mesh, "log10 loss", ax=left)
    if not finite.all():
        overflowed = f"loss overflowed (non-finite): {int((~finite).sum())} points"
        left.legend(
            handles=[Patch(color=OVERFLOW_COLOUR, label=overflowed)],
            loc="upper left",
            bbox_to_anchor=(0.0, -0.14),
        )
    _surface(fig, alphas, betas, values, cmap, norm)
    fig.suptitle(title)
    return fig
