"""``nar_gap.train``: the training entry point, and the old module path kept working.

``nar_gap.train(config, out_dir)`` trains (it is :func:`nar_gap.training.train`),
and code written for the flat layout (``from nar_gap.train import TrainConfig,
load_run``) still imports: this module re-exports :mod:`nar_gap.training`'s
public names and is itself callable, so ``import nar_gap.train`` cannot shadow
the function.  New code imports from :mod:`nar_gap.training`.

Calling ``nar_gap.train`` is the public verb and stays.  Reading a name
through the module path (``from nar_gap.train import TrainConfig``) warns
once: that path is removed in nar_gap 0.3.0
(:data:`nar_gap.system.legacy.REMOVAL`).
"""

import sys
import types

from nar_gap import training as _training
from nar_gap.system.legacy import warn_moved
from nar_gap.training import train

# the flat layout's names, read through __getattr__ with a warning
_FLAT_NAMES = (
    "CheckpointError",
    "ResumePlan",
    "RunResult",
    "TrainConfig",
    "TrainResult",
    "load_current_params",
    "load_params",
    "load_run",
    "load_run_config",
    "resume_plan",
)
__all__ = ["train"]


# the flat layout's names for the training layer's
_RENAMED = {"RunResult": "TrainResult"}


def __getattr__(name: str):
    """A name of the flat layout, read from :mod:`nar_gap.training` (warns once)."""
    if name not in _FLAT_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warn_moved(f"nar_gap.train.{name}", f"nar_gap.training.{_RENAMED.get(name, name)}")
    return getattr(_training, _RENAMED.get(name, name))


class _CallableModule(types.ModuleType):
    """The module ``nar_gap.train`` that is also the function ``nar_gap.train``."""

    def __call__(self, *args, **kwargs):
        return train(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
