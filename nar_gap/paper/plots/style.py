"""The one look of nar_gap's figures: a style sheet, a palette, and how to apply it.

The sheet (``nar_gap.mplstyle``, shipped with the package) sets every text
size and the legends' frame once.  Each ``plot_*`` function draws under it
with :func:`styled`, plus at most one of the exceptions named here: a figure
whose panels are small, whose tick labels are its content, or whose titles
are sentences.  So a figure's look is read in two places, the sheet and this
module, and never in the drawing code.  Colours that stand for something
(overflow, neutral, the compiled model, the source node) are named here too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.colorbar import Colorbar
from matplotlib.figure import Figure, SubFigure
from matplotlib.ticker import MaxNLocator

SHEET = Path(__file__).with_name("nar_gap.mplstyle")
"""The style sheet: a file of rcParams, package data (``pyproject.toml``)."""

MIN_FONT = 7
"""Smallest text, in points at the saved size: the sheet's tick labels and
legends, and the notes a figure writes on its axes."""

BODY = "medium"
"""matplotlib's body size (the sheet's ``font.size``): colour bars keep it, as
they were drawn before the sheet existed."""

# Exceptions to the sheet, one per kind of figure that needs one.
COMPACT_TITLES: Mapping[str, Any] = {"axes.titlesize": 8, "figure.titlesize": 9}
"""Titles that are sentences or carry a second line (Figures 1 and 10's
correlations, the size sweep, Figure 3, TransNAR's scores)."""
SMALL_PANELS: Mapping[str, Any] = {
    "axes.labelsize": 7,
    "xtick.labelsize": 6,
    "ytick.labelsize": 6,
}
"""Many 2-inch panels in a row (the compiled attention of each step)."""
NAMED_CELLS: Mapping[str, Any] = {"xtick.labelsize": 8, "ytick.labelsize": 8}
"""Tick labels that name each row and column (Figures 6-7): they are the
figure's content, so one size above the numbers on other axes."""

# The palette: colours that mean something.
OVERFLOW_COLOUR = "magenta"
"""Landscape cells whose loss overflowed (inf or NaN): no viridis colour."""
NEUTRAL = "grey"
"""Dendrogram links above the cut, singletons included: no cluster's colour."""
COMPILED_COLOUR = "black"
"""The compiled model's star, the point learned seeds are measured against."""
SOURCE_COLOUR = "C3"
"""The triangles that mark the source node on attention maps."""

Draw = TypeVar("Draw", bound=Callable[..., Figure])


@contextmanager
def figure_style(exceptions: Mapping[str, Any] | None = None) -> Iterator[None]:
    """Figures made inside take the sheet (and ``exceptions``); rcParams return after.

    Text sizes are fixed when an artist is made, so a figure made here keeps
    its look when it is saved later, outside.
    """
    with plt.style.context([str(SHEET), dict(exceptions or {})]):
        yield


def styled(exceptions: Mapping[str, Any] | None = None) -> Callable[[Draw], Draw]:
    """Decorate a figure function: it draws under :func:`figure_style`."""

    def decorate(draw: Draw) -> Draw:
        @functools.wraps(draw)
        def drawn(*args: Any, **kwargs: Any) -> Figure:
            with figure_style(exceptions):
                fig = draw(*args, **kwargs)
                _keep_tick_sizes(fig)
            return fig

        return drawn  # type: ignore[return-value]

    return decorate


def _keep_tick_sizes(fig: Figure) -> None:
    """Write each axis's tick-label sizes into the axis, for draws after the sheet.

    A figure is saved after its function returns, outside the sheet, and
    matplotlib reads ``xtick.labelsize`` again when it draws (how many ticks
    fit an axis, the size of a tick made then): without this, a saved figure
    would get the tick count of matplotlib's default size.
    """
    for ax in fig.findobj(Axes):
        for axis in (ax.xaxis, ax.yaxis, getattr(ax, "zaxis", None)):
            if axis is None:
                continue
            for which, ticks in (
                ("major", axis.get_major_ticks(1)),
                ("minor", axis.get_minor_ticks(1)),
            ):
                size = ticks[0].label1.get_fontsize()
                axis.set_tick_params(which=which, labelsize=size)


def colour_bar(
    figure: Figure | SubFigure, mappable: Any, label: str | None = None, **kwargs: Any
) -> Colorbar:
    """``figure.colorbar`` with its numbers and its label in the :data:`BODY` size."""
    bar = figure.colorbar(mappable, **kwargs)
    bar.ax.tick_params(labelsize=BODY)
    if label is not None:
        bar.set_label(label, size=BODY)
    return bar


def integer_ticks(axis: Axis) -> None:
    """Steps are counts: tick whole numbers only (no "step 2.5")."""
    axis.set_major_locator(MaxNLocator(integer=True))


def close(fig: Figure) -> None:
    """Release a figure once it is saved (long sweeps make many)."""
    plt.close(fig)
