"""The notebooks, in run order: one list, read by the planner, the report, the tests.

What each notebook needs first and its priority stay in the notebook's own
metadata (``nar_gap.needs``, ``nar_gap.priority``), which ``./run_all.sh``
reads; a test keeps this list and the ``notebooks/`` folder the same.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

from nar_gap.paper.experiments.profiles import checkout_root

#: What a notebook's last table weighs our results against.
PAPER, TRANSNAR, BEYOND = "paper", "transnar", "beyond"


@dataclasses.dataclass(frozen=True)
class Notebook:
    """One notebook: its number, its file's stem, and what it is compared with.

    ``compared``: :data:`PAPER` (it ends with the paper's claims against
    ours), :data:`TRANSNAR` (TransNAR's published trend against ours; the
    README reports it apart) or :data:`BEYOND` (it goes beyond both: no
    comparison table).
    """

    number: str
    stem: str
    compared: str


NOTEBOOKS: tuple[Notebook, ...] = (
    Notebook("01", "01_compile", PAPER),
    Notebook("02", "02_baselines", PAPER),
    Notebook("03", "03_faithfulness", PAPER),
    Notebook("04", "04_ablations", PAPER),
    Notebook("05", "05_stability", PAPER),
    Notebook("06", "06_loss_landscapes", PAPER),
    Notebook("07", "07_closing_the_gap", BEYOND),
    Notebook("08", "08_transnar", TRANSNAR),
    Notebook("09", "09_confirmation", BEYOND),
)


def numbers(compared: str | None = None) -> tuple[str, ...]:
    """The notebooks' numbers in run order (those compared with ``compared``)."""
    return tuple(n.number for n in NOTEBOOKS if compared in (None, n.compared))


def stems() -> dict[str, str]:
    """``{number: stem}`` of every notebook, in run order."""
    return {n.number: n.stem for n in NOTEBOOKS}


def notebook_parameters(number: str, root: Path | None = None) -> dict[str, Any]:
    """The literals of notebook ``number``'s parameters cell (its defaults).

    Read from the notebook itself, so the planner and the list of files a
    notebook writes follow an edited list of algorithms, and no copy of it
    is kept elsewhere: it needs the checkout that holds the notebooks (the
    offline bundle carries it).
    """
    path = (root or checkout_root()) / "notebooks" / f"{stems()[number]}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the notebooks' parameters are read from a "
            "checkout (run it from one)"
        )
    cells = json.loads(path.read_text())["cells"]
    tagged = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    found: dict[str, Any] = {}
    for cell in tagged:
        for node in ast.parse("".join(cell["source"])).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    found[target.id] = ast.literal_eval(node.value)
    return found
