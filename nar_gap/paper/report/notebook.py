"""What the notebooks share: their setup, and showing a results table, a figure.

Kept in the package so the notebooks do not each paste their own copy.  In
a notebook they display through IPython; run as a script (``nar-gap job``,
on a node without Jupyter or IPython) they print one line each instead.
"""

from __future__ import annotations

import collections
import html
import os
from pathlib import Path
from typing import Any, NamedTuple

from nar_gap import check_backend
from nar_gap.paper.experiments import profiles
from nar_gap.system import collector, files
from nar_gap.training.run import READING_RESULTS_ENV


def table_html(path: str | os.PathLike) -> str:
    """A results CSV as an HTML table (the CSV's rows, no pandas needed)."""
    return rows_html(files.read_table(path), str(path))


def rows_html(rows: list[dict[str, str]], what: str) -> str:
    """Rows of one table as HTML (``what`` names it when there are none)."""
    if not rows:
        return f"<p>{html.escape(what)}: no rows</p>"
    columns = list(dict.fromkeys(k for row in rows for k in row))  # every table's
    head = "".join(f"<th>{html.escape(k)}</th>" for k in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape(row.get(k, ''))}</td>" for k in columns)
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _ipython_display() -> Any:
    """IPython's ``display`` when running under IPython, else None."""
    try:
        from IPython import get_ipython
        from IPython.display import display as ipython_display
    except ImportError:  # an offline node's job: no IPython at all
        return None
    return ipython_display if get_ipython() is not None else None


def display(value: Any) -> None:
    """IPython's display in a notebook; printed in a plain process."""
    shown = _ipython_display()
    if shown is None:
        print(value)
    else:
        shown(value)


def show_markdown(text: str) -> None:
    """Display ``text`` as Markdown (printed as it is outside a notebook)."""
    shown = _ipython_display()
    if shown is None:
        print(text)
        return
    from IPython.display import Markdown

    shown(Markdown(text))


def show_table(results: str | os.PathLike, name: str) -> None:
    """Display ``results/<name>``."""
    shown = _ipython_display()
    if shown is None:
        print(f"table {name}: {len(files.read_table(Path(results) / name))} rows")
        return
    from IPython.display import HTML

    shown(HTML(table_html(Path(results) / name)))


def show_image(path: str | os.PathLike) -> None:
    """Display the PNG at ``path``."""
    shown = _ipython_display()
    if shown is None:
        print(f"figure {Path(path).name}")
        return
    from IPython.display import Image

    shown(Image(filename=str(path)))


def show_figure(figures: str | os.PathLike, stem: str) -> None:
    """Display ``figures/<stem>.png``."""
    show_image(Path(figures) / f"{stem}.png")


def rows_beside(
    name: str, results: Path, profile: str, root: Path | None = None
) -> list[dict[str, str]]:
    """Table ``name`` of this run, then each other profile's committed one.

    Each row gains a first column ``profile``.  This run's rows are those in
    ``results``; the other profiles' are the committed copies in the
    checkout (:func:`~nar_gap.paper.experiments.profiles.committed_dirs`; for the
    gpu profile, ``results/gpu/``), where they exist.  So a cpu run shows
    the GPU's rows under its own, and a gpu archive read back shows the
    cpu run's under its own.
    """
    return [
        {"profile": label, **row}
        for label, folder in folders_beside(results, profile, root)
        if (folder / name).is_file()
        for row in files.read_table(folder / name)
    ]


def folders_beside(
    results: Path, profile: str, root: Path | None = None
) -> list[tuple[str, Path]]:
    """``(profile, folder)``: this run's ``results``, then the others' committed.

    The order :func:`rows_beside` shows tables in and
    :meth:`Display.verdict` looks for a verdict in.
    """
    root = root or profiles.checkout_root()
    committed = root / profiles.committed_dirs(profiles.DEFAULT_PROFILE).results
    others = profiles.committed_results(committed)
    return [(profile, Path(results)), *((p, f) for p, f in others if p != profile)]


class Display:
    """``show.table("x.csv")``, ``show.figure("fig1_...")``: one profile's files."""

    def __init__(
        self,
        results: str | os.PathLike,
        figures: str | os.PathLike,
        profile: str = profiles.DEFAULT_PROFILE,
    ) -> None:
        """Remember where this profile's tables and figures are."""
        self.results, self.figures = Path(results), Path(figures)
        self.profile = profile

    def table(self, name: str) -> None:
        """Display the results table ``name`` (a CSV in the results folder)."""
        show_table(self.results, name)

    def beside(self, name: str) -> None:
        """Display table ``name`` with the other profiles' committed rows under it."""
        rows = rows_beside(name, self.results, self.profile)
        shown = _ipython_display()
        if shown is None:
            counts = collections.Counter(row["profile"] for row in rows)
            each = ", ".join(f"{n} rows ({p})" for p, n in counts.items())
            print(f"table {name}: {each}")
            return
        from IPython.display import HTML

        shown(HTML(rows_html(rows, name)))

    def verdict(self, name: str) -> str:
        """The verdict beside table ``name``: this run's, else a committed profile's.

        In the order of :func:`rows_beside`, so a profile that does not run a
        study still says what the profile that ran it found.
        """
        for _, folder in folders_beside(self.results, self.profile):
            sidecar = files.sidecar_path(folder / name)
            if sidecar.is_file():
                return str(files.read_json(sidecar).get("verdict", ""))
        return f"{name}: neither this run nor a committed profile has written it"

    def figure(self, stem: str) -> None:
        """Display the figure ``stem`` (its PNG in the figures folder)."""
        show_figure(self.figures, stem)


class NotebookSetup(NamedTuple):
    """What a notebook's setup cell leaves it: its sizes, folders and display."""

    profile: profiles.Profile
    dirs: profiles.OutputDirs
    show: Display


#: The first line of a cell that needs trained parameters or measurements
#: held in memory: reading results, it is not run (:func:`setup`).
NEEDS_RUNS = "# needs: trained runs"
SKIPPED = (
    "reading results (FROM_RESULTS): this cell needs trained parameters, and "
    "it was not run. Set PROFILE = 'smoke' and FROM_RESULTS = False in the "
    "first cell to train small models in minutes and try it."
)


def skip_cells_that_need_runs(lines: list[str]) -> list[str]:
    """IPython's input transformer: a :data:`NEEDS_RUNS` cell becomes a message."""
    if lines and lines[0].strip().startswith(NEEDS_RUNS):
        return [f"print({SKIPPED!r})\n"]
    return lines


def _reading_cells() -> None:
    """Skip the cells that need runs from now on, in this kernel (once)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and skip_cells_that_need_runs not in (
        transforms := shell.input_transformers_post
    ):
        transforms.append(skip_cells_that_need_runs)


def setup(
    profile: str,
    runs: str = "",
    results: str = "",
    figures: str = "",
    from_results: bool = False,
) -> NotebookSetup:
    """A notebook's first steps after its ``parameters`` cell, in their order.

    The backend self-check comes first: over several processes it joins
    them, which JAX allows only before its backend starts, and it stops a
    notebook on a JAX known to compute wrong numbers.  Then the profile
    (its ``figure_formats`` become this process's default) and its folders
    (:func:`~nar_gap.paper.experiments.profiles.output_dirs`: ``""`` is the
    profile's own), and where they are, printed.
    ``from_results``: read the profile's tables and figures instead of
    training and measuring (``dirs.reading``); the cells marked
    :data:`NEEDS_RUNS` then print why they did not run.
    """
    print(check_backend().message)
    collector.collect_less_often()  # tracing's garbage: system/collector.py
    chosen = profiles.get(profile)
    os.environ[files.FIGURE_FORMATS_ENV] = ",".join(chosen.figure_formats)
    dirs = profiles.output_dirs(profile, runs, results, figures, from_results)
    print(f"runs in {dirs.runs}, tables in {dirs.results}, figures in {dirs.figures}")
    if from_results:
        os.environ[READING_RESULTS_ENV] = "1"  # any training now fails at once
        _reading_cells()
        print("reading this profile's results: nothing is trained or measured")
    return NotebookSetup(chosen, dirs, Display(dirs.results, dirs.figures, profile))
