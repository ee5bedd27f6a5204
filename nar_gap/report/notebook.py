"""What the notebooks share to show results: a results table, a figure.

Kept in the package so the notebooks do not each paste their own copy.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from IPython.display import HTML, Image, display

from nar_gap.system import files


def table_html(path: str | os.PathLike) -> str:
    """A results CSV as an HTML table (the CSV's rows, no pandas needed)."""
    rows = files.read_table(path)
    if not rows:
        return f"<p>{html.escape(str(path))}: no rows</p>"
    head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row.values()) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def show_table(results: str | os.PathLike, name: str) -> None:
    """Display ``results/<name>``."""
    display(HTML(table_html(Path(results) / name)))


def show_figure(figures: str | os.PathLike, stem: str) -> None:
    """Display ``figures/<stem>.png``."""
    display(Image(filename=str(Path(figures) / f"{stem}.png")))


class Display:
    """``show.table("x.csv")``, ``show.figure("fig1_...")``: one profile's files."""

    def __init__(self, results: str | os.PathLike, figures: str | os.PathLike) -> None:
        """Remember where this profile's tables and figures are."""
        self.results, self.figures = Path(results), Path(figures)

    def table(self, name: str) -> None:
        """Display the results table ``name`` (a CSV in the results folder)."""
        show_table(self.results, name)

    def figure(self, stem: str) -> None:
        """Display the figure ``stem`` (its PNG in the figures folder)."""
        show_figure(self.figures, stem)
