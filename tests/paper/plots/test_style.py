"""The one look: the style sheet is applied to every figure, and only to it."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest

from nar_gap.paper import plots
from nar_gap.paper.plots import style

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _sensitivity(top: float = 3.7):
    """A figure whose ticks (at this ``top``) depend on the tick-label size."""
    heights = np.linspace(0.0, top, 200)
    counts = {"ward linkage": np.maximum(1, 12 - (heights / top * 11).astype(int))}
    return plots.plot_cluster_sensitivity(heights, counts, (top / 2, 6), "bfs")


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60)
    return buffer.getvalue()


def test_figures_are_drawn_with_agg():
    assert matplotlib.get_backend().lower() == "agg"


def test_the_sheet_sets_the_figure_s_text_sizes():
    ax = _sensitivity().axes[0]
    assert ax.title.get_fontsize() == 9
    assert ax.xaxis.label.get_fontsize() == 8
    assert {t.get_fontsize() for t in ax.get_xticklabels()} == {style.MIN_FONT}
    legend = ax.get_legend()
    assert not legend.get_frame_on()
    assert {t.get_fontsize() for t in legend.get_texts()} == {style.MIN_FONT}


def test_drawing_a_figure_leaves_matplotlib_s_settings_as_they_were():
    before = dict(matplotlib.rcParams)
    _sensitivity()
    assert dict(matplotlib.rcParams) == before
    assert matplotlib.rcParams["xtick.labelsize"] == "medium"  # the default


def test_a_figure_saved_outside_the_sheet_looks_as_drawn_inside():
    """Callers save after the function returns; matplotlib counts the ticks
    that fit when it draws, from the tick-label size it reads then."""
    outside = _png(_sensitivity())
    with style.figure_style():
        inside = _png(_sensitivity())
    assert outside == inside


def test_a_figure_fits_its_ticks_by_the_sheet_s_size_after_it_returns():
    fig = _sensitivity()
    axes = [ax.xaxis for ax in fig.axes] + [ax.yaxis for ax in fig.axes]
    outside = [axis.get_tick_space() for axis in axes]
    with style.figure_style():
        assert [axis.get_tick_space() for axis in axes] == outside


def test_no_text_of_the_sheet_is_smaller_than_min_font():
    sheet = matplotlib.rc_params_from_file(style.SHEET, use_default_template=False)
    text = ("font.size", "labelsize", "titlesize", "fontsize")
    sizes = {key: float(value) for key, value in sheet.items() if key.endswith(text)}
    assert sizes and min(sizes.values()) == style.MIN_FONT


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib")
def test_the_sheet_is_package_data():
    import fnmatch

    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["nar_gap.paper.plots"]
    assert style.SHEET.is_file()
    assert any(fnmatch.fnmatch(style.SHEET.name, p) for p in patterns)


def test_the_figures_compute_no_statistic():
    """Means, correlations and fits come from nar_gap.analysis, passed in."""
    computing = (
        "correlation_table(",
        "np.mean(",
        "np.nanmean(",
        "np.nansum(",
        "np.std(",
    )
    for path in (ROOT / "nar_gap" / "plots").glob("*.py"):
        text = path.read_text()
        assert not [c for c in computing if c in text], path.name
