"""``nar_gap.train``: the training entry point, and the old module path kept working.

``nar_gap.train(config, out_dir)`` trains (it is :func:`nar_gap.training.train`),
and code written for the flat layout (``from nar_gap.train import TrainConfig,
load_run``) still imports: this module re-exports :mod:`nar_gap.training`'s
public names and is itself callable, so ``import nar_gap.train`` cannot shadow
the function.  New code imports from :mod:`nar_gap.training`.
"""

import sys
import types

from nar_gap.training import (
    CheckpointError,
    ResumePlan,
    TrainConfig,
    TrainResult,
    load_current_params,
    load_params,
    load_run,
    load_run_config,
    resume_plan,
    train,
)

RunResult = TrainResult  # the flat layout's name

__all__ = [
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
    "train",
]


class _CallableModule(types.ModuleType):
    """The module ``nar_gap.train`` that is also the function ``nar_gap.train``."""

    def __call__(self, *args, **kwargs):
        return train(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
