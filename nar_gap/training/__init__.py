"""Training many seeds of the CLRS GATv2 at once, with dm-clrs's recipe.

:func:`train` (``run.py``) is the entry point: the run directory
(``run_dir.py``) decides what a call does (read a finished run back, resume,
start) and keeps the results, and the loop (``loop.py``) trains;
:class:`TrainConfig` (``config.py``) says what a run is; the jitted step
(``step.py``), the seed axis over devices (``devices.py``), the data feed
(``feed.py``) and bucketed shapes (``shapes.py``) are the loop's parts;
:func:`train_through` (``segments.py``) trains one run through a list of steps.

The names below are imported on first use, so reading a :class:`TrainConfig`
(the CLI's defaults) does not load JAX, Flax and dm-clrs.
"""

from __future__ import annotations

from nar_gap.system.lazy import lazy_exports

_EXPORTS = {
    "TrainConfig": "nar_gap.training.config",
    "train": "nar_gap.training.run",
    "train_through": "nar_gap.training.segments",
    "CheckpointError": "nar_gap.training.run_dir",
    "ResumePlan": "nar_gap.training.run_dir",
    "TrainResult": "nar_gap.training.run_dir",
    "load_current_params": "nar_gap.training.run_dir",
    "load_params": "nar_gap.training.run_dir",
    "load_run": "nar_gap.training.run_dir",
    "load_run_config": "nar_gap.training.run_dir",
    "read_validation": "nar_gap.training.run_dir",
    "read_validation_table": "nar_gap.training.run_dir",
    "resume_plan": "nar_gap.training.run_dir",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), _EXPORTS)
