"""Training in segments: one run trained through a list of steps, seen at each.

:func:`train` resumes a run directory when only ``steps`` changes, so training
to step 4, then to step 8, in one directory is the run trained to step 8
with its parameters at step 4 seen on the way.  A study that measures a run
along the way (the stability study, D.8) calls :func:`train_through` with its
measuring steps and a callback.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

from nar_gap.training.config import TrainConfig
from nar_gap.training.run import train
from nar_gap.training.run_dir import load_current_params


def _never(step: int) -> bool:
    return False


def train_through(
    config: TrainConfig,
    out_dir: str | os.PathLike,
    steps: Sequence[int],
    on_step: Callable[[int, Any], None],
    *,
    initial_params: Any | None = None,
    progress: bool = True,
    skip: Callable[[int], bool] = _never,
) -> None:
    """Train ``config`` in ``out_dir`` through ``steps``, calling ``on_step`` at each.

    ``on_step(step, params)`` gets the stacked parameters of every seed at
    ``step`` (:func:`~nar_gap.training.run_dir.load_current_params`), in the
    order of ``steps``, which must increase.  ``config.steps`` is ignored:
    the run ends at the last of ``steps``.  ``initial_params`` is
    :func:`train`'s.

    A step where ``skip(step)`` holds is neither trained to nor passed on:
    what ``on_step`` would make of it was kept from an earlier, interrupted
    call, whose run directory is already past it.

    Raises:
      ValueError: ``steps`` do not increase, or the run directory holds a run
        trained past a step that is not skipped (its parameters there are
        gone).
    """
    if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
        raise ValueError(f"steps must increase, got {list(steps)}")
    for step in steps:
        if skip(step):
            continue
        segment = dataclasses.replace(config, steps=step)
        result = train(
            segment, out_dir, progress=progress, initial_params=initial_params
        )
        reached = {int(m["steps"]) for m in result.metrics}
        if reached != {step}:
            raise ValueError(
                f"{out_dir} holds a run already trained to {sorted(reached)} "
                f"steps; step {step} cannot be evaluated there (use a fresh directory)"
            )
        on_step(step, load_current_params(out_dir))
