"""Where the modules of the flat layout went: reaching an old path says so.

``from nar_gap import pipeline`` or ``nar_gap.pipeline`` (say) fails with a
``ModuleNotFoundError`` whose one line names the new place, instead of a bare
"no attribute".  This module is loaded only then (``nar_gap.__getattr__``):
no import hook runs on ``import nar_gap``, so ``import nar_gap.pipeline``
gets Python's plain "No module named".  The hints go in nar_gap 0.3.0
(:data:`nar_gap.system.legacy.REMOVAL`).  Old paths that keep working
(``nar_gap.train``, ``nar_gap.faithfulness``, ...) are modules of their own.
"""

from __future__ import annotations

MOVED: dict[str, str] = {
    "nar_gap._clrs": "nar_gap.tasks._clrs",
    "nar_gap.specs": "nar_gap.tasks.specs",
    "nar_gap.algorithms": "nar_gap.tasks.algorithms",
    "nar_gap.exactness": "nar_gap.tasks.exactness",
    "nar_gap.graphs": "nar_gap.tasks.graphs",
    "nar_gap.gatv2": "nar_gap.model.gatv2",
    "nar_gap.network": "nar_gap.model (config, network, encoders, decoders)",
    "nar_gap.losses": "nar_gap.model.losses",
    "nar_gap.evaluation": "nar_gap.model.scores",
    "nar_gap.clrs_import": "nar_gap.model.from_dmclrs",
    "nar_gap.interpreter": "nar_gap.programs.interpreter",
    "nar_gap.statistics": "nar_gap.analysis.stats",
    "nar_gap.landscape": "nar_gap.analysis.landscape",
    "nar_gap.faithfulness_study": "nar_gap.experiments.faithfulness_study",
    "nar_gap.stability": "nar_gap.experiments.stability",
    "nar_gap.landscape_study": "nar_gap.experiments.landscape_study",
    "nar_gap.ablations": "nar_gap.experiments.ablations",
    "nar_gap.profiles": "nar_gap.experiments.profiles",
    "nar_gap.pipeline": "nar_gap.experiments (one module per notebook)",
    "nar_gap.notebook_runner": "nar_gap.tools.notebook_runner",
    "nar_gap.io": "nar_gap.system.files",
    "nar_gap.provenance": "nar_gap.system.provenance",
    "nar_gap.backend_check": "nar_gap.system.backend_check",
}


def moved_error(fullname: str) -> Exception:
    """The error for reaching ``fullname``: where it went, or a plain AttributeError."""
    if fullname in MOVED:
        # an ImportError, not an AttributeError: ``from nar_gap import x``
        # turns an AttributeError into "cannot import name", losing the hint
        return ModuleNotFoundError(
            f"{fullname} moved to {MOVED[fullname]} (nar_gap's layered layout; "
            "see docs/layout.md); the hint goes in nar_gap 0.3.0",
            name=fullname,
        )
    package, _, name = fullname.rpartition(".")
    return AttributeError(f"module {package!r} has no attribute {name!r}")
