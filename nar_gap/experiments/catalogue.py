"""The notebooks, in run order: one list, read by the planner, the report, the tests.

What each notebook needs first and its priority stay in the notebook's own
metadata (``nar_gap.needs``, ``nar_gap.priority``), which ``./run_all.sh``
reads; a test keeps this list and the ``notebooks/`` folder the same.
"""

from __future__ import annotations

import dataclasses

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
)


def numbers(compared: str | None = None) -> tuple[str, ...]:
    """The notebooks' numbers in run order (those compared with ``compared``)."""
    return tuple(n.number for n in NOTEBOOKS if compared in (None, n.compared))


def stems() -> dict[str, str]:
    """``{number: stem}`` of every notebook, in run order."""
    return {n.number: n.stem for n in NOTEBOOKS}
