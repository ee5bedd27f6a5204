"""Where the modules of the flat layout went: an import of an old path says so.

``import nar_gap.pipeline`` (say) fails with a ``ModuleNotFoundError`` whose
one line names the new place, instead of a bare "No module named".  Three old
paths keep working instead (``nar_gap.train``, ``nar_gap.data``,
``nar_gap.faithfulness``: thin modules of their own).
"""

from __future__ import annotations

import importlib.abc
import sys

MOVED: dict[str, str] = {
    "nar_gap._clrs": "nar_gap.benchmark._clrs",
    "nar_gap.specs": "nar_gap.benchmark.specs",
    "nar_gap.algorithms": "nar_gap.benchmark.algorithms",
    "nar_gap.exactness": "nar_gap.benchmark.exactness",
    "nar_gap.graphs": "nar_gap.benchmark.graphs",
    "nar_gap.gatv2": "nar_gap.model.gatv2",
    "nar_gap.network": "nar_gap.model (config, network, encoders, decoders)",
    "nar_gap.losses": "nar_gap.model.losses",
    "nar_gap.evaluation": "nar_gap.model.scores",
    "nar_gap.clrs_import": "nar_gap.model.from_dmclrs",
    "nar_gap.interpreter": "nar_gap.programs.interpreter",
    "nar_gap.compiler.compile": "nar_gap.compiler.compiling (nar_gap.compile)",
    "nar_gap.statistics": "nar_gap.analysis.stats",
    "nar_gap.landscape": "nar_gap.analysis.landscape",
    "nar_gap.faithfulness_study": "nar_gap.experiments.faithfulness_study",
    "nar_gap.stability": "nar_gap.experiments.stability",
    "nar_gap.landscape_study": "nar_gap.experiments.landscapes",
    "nar_gap.ablations": "nar_gap.experiments.ablations",
    "nar_gap.profiles": "nar_gap.experiments.profiles",
    "nar_gap.plots": "nar_gap.experiments.plots",
    "nar_gap.pipeline": "nar_gap.experiments (one module per notebook)",
    "nar_gap.notebook_runner": "nar_gap.experiments.notebook_runner",
    "nar_gap.io": "nar_gap.system.files",
    "nar_gap.provenance": "nar_gap.system.provenance",
    "nar_gap.backend_check": "nar_gap.system.backend_check",
}


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # noqa: D102
        if fullname in MOVED:
            raise ModuleNotFoundError(
                f"{fullname} moved to {MOVED[fullname]} (nar_gap's layered layout; "
                "see the README, 'How the code is laid out')",
                name=fullname,
            )
        return None


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
