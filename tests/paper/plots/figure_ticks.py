"""Reading a figure's ticks as a reader sees them (shared by tests/paper/plots)."""

from __future__ import annotations


def labelled_ticks(ax, axis: str = "x") -> list[tuple[float, str]]:
    """(location, label) of the major ticks a reader sees on ``axis``."""
    ax.figure.canvas.draw()
    which = ax.xaxis if axis == "x" else ax.yaxis
    low, high = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    return [
        (float(tick.get_loc()), tick.label1.get_text())
        for tick in which.get_major_ticks()
        if low <= tick.get_loc() <= high and tick.label1.get_text()
    ]


def assert_whole_steps(ax, axis: str = "x") -> None:
    ticks = labelled_ticks(ax, axis)
    assert ticks
    for loc, label in ticks:
        assert float(loc).is_integer(), ticks
        assert label.replace("\N{MINUS SIGN}", "-") == str(int(loc)), ticks
