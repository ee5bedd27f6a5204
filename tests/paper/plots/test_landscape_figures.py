"""Appendix D.11's landscapes: one colour scale, overflow drawn and counted."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.cm import ScalarMappable
from matplotlib.colors import to_rgba

from nar_gap.analysis.landscape import Landscape
from nar_gap.paper import plots
from nar_gap.paper.experiments.landscape_study import landscape_figures


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _surfaces() -> dict[str, Landscape]:
    axis = np.linspace(-1.0, 1.0, 9)
    bowl = np.add.outer(axis**2, axis**2)
    overflowed = 10.0 ** (6 * bowl)
    overflowed[0, :3] = np.inf
    overflowed[1, 0] = np.nan
    return {
        "compiled": Landscape(axis, axis, overflowed, 1.0),
        "learned": Landscape(axis, axis, 1.0 + bowl, 1.0),
    }


def _mesh(fig) -> ScalarMappable:
    """The flat panel's heat map (the first panel; the colour bar has one too)."""
    return next(c for c in fig.axes[0].collections if isinstance(c, ScalarMappable))


def test_landscapes_of_one_algorithm_share_one_colour_scale():
    surfaces = _surfaces()
    figs = landscape_figures(surfaces, "bfs")
    assert set(figs) == {"fig17_bfs_landscape_compiled", "fig17_bfs_landscape_learned"}
    limits = {_mesh(fig).get_clim() for fig in figs.values()}
    expected = plots.log_loss_range(land.losses for land in surfaces.values())
    assert limits == {expected}
    assert np.all(np.isfinite(expected))
    assert expected[1] == pytest.approx(12.0)  # 10 ** (6 * 2), not inf


def test_landscape_draws_overflowed_points_in_a_labelled_colour():
    figs = landscape_figures(_surfaces(), "bfs")
    for stem, fig in figs.items():
        mesh = _mesh(fig)
        assert mesh.get_cmap().get_bad() == pytest.approx(
            to_rgba(plots.OVERFLOW_COLOUR)
        )
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        texts = [t.get_text() for legend in legends for t in legend.get_texts()]
        if stem.endswith("compiled"):
            assert texts == ["loss overflowed (non-finite): 4 points"]
            assert np.ma.count_masked(mesh.get_array()) == 4
        else:
            assert texts == []


def test_landscape_surface_names_all_three_axes():
    fig = landscape_figures(_surfaces(), "bfs")["fig17_bfs_landscape_learned"]
    surface = next(ax for ax in fig.axes if ax.name == "3d")
    assert surface.get_xlabel() == "direction 1"
    assert surface.get_ylabel() == "direction 2"
    assert "loss" in surface.get_zlabel()
