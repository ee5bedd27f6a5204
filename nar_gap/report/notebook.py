"""What the notebooks share: their setup, and showing a results table, a figure.

Kept in the package so the notebooks do not each paste their own copy.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import NamedTuple

from IPython.display import HTML, Image, display

from nar_gap import check_backend
from nar_gap.experiments import profiles
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


class NotebookSetup(NamedTuple):
    """What a notebook's setup cell leaves it: its sizes, folders and display."""

    profile: profiles.Profile
    dirs: profiles.OutputDirs
    show: Display


def setup(
    profile: str, runs: str = "", results: str = "", figures: str = ""
) -> NotebookSetup:
    """A notebook's first steps after its ``parameters`` cell, in their order.

    The backend self-check comes first: over several processes it joins
    them, which JAX allows only before its backend starts, and it stops a
    notebook on a JAX known to compute wrong numbers.  Then the profile
    and its folders (:func:`~nar_gap.experiments.profiles.output_dirs`:
    ``""`` is the profile's own), and where they are, printed.
    """
    print(check_backend().message)
    chosen = profiles.get(profile)
    dirs = profiles.output_dirs(profile, runs, results, figures)
    print(f"runs in {dirs.runs}, tables in {dirs.results}, figures in {dirs.figures}")
    return NotebookSetup(chosen, dirs, Display(dirs.results, dirs.figures))
