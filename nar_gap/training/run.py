"""One training run: the run directory decides, the loop trains, the directory keeps.

:func:`train` is the verb.  The run directory
(:mod:`~nar_gap.training.run_dir`) says what a call does: a run finished for
this very configuration is read back; otherwise each seed resumes from its
checkpoint (or starts fresh) and :func:`~nar_gap.training.loop.train_seeds`
trains it to the end; then the directory keeps each seed's selected
parameters and metrics and the run's tables (over several processes,
process 0 merges them).  The loop knows nothing of finished runs, locks or
merges; this module knows nothing of steps.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from nar_gap.system import files
from nar_gap.system.numerics import starting_precision
from nar_gap.training import hosts
from nar_gap.training.config import TrainConfig
from nar_gap.training.loop import initial_states, train_seeds
from nar_gap.training.run_dir import (
    TrainResult,
    fingerprint,
    finished_run,
    merged_run,
    prepare_run_dir,
    resume_plan,
    selection_reset_step,
    write_run_tables,
    write_seed_results,
)

#: Set by a notebook that reads its profile's results (``FROM_RESULTS``):
#: training there is a bug, refused at once instead of run for hours.
READING_RESULTS_ENV = "NAR_GAP_READING_RESULTS"


def reading_results() -> bool:
    """Whether this process reads results (:data:`READING_RESULTS_ENV`)."""
    return bool(os.environ.get(READING_RESULTS_ENV))


def training_refused(what: str) -> RuntimeError:
    """The one-line error of a process reading results where ``what`` would train."""
    return RuntimeError(
        f"training refused: this process reads results ({READING_RESULTS_ENV} "
        f"is set), and {what} would train here"
    )


def train(
    config: TrainConfig,
    out_dir: str | os.PathLike | None = None,
    *,
    progress: bool = True,
    initial_params: Any | None = None,
) -> TrainResult:
    """Train ``config.seeds`` together; write checkpoints and metrics to ``out_dir``.

    An ``out_dir`` holding a run of the same configuration is resumed: finished
    seeds are not retrained, unfinished ones continue from their last
    checkpoint.  A different configuration there is an error.

    ``initial_params`` (one parameter tree, e.g. a compiled model's) starts
    every seed from the same point instead of its own random initialisation;
    the seeds then differ only in their data order (the stability study).  Its
    fingerprint is kept in the run directory, so a resume from other starting
    parameters is refused.

    While it works in ``out_dir`` it holds that directory's lock
    (:func:`nar_gap.system.files.exclusive`): a second process asking for the
    same run, a notebook run beside another by ``./run_all.sh``, waits and
    then reads the finished run back instead of training it a second time.

    Over several processes (:mod:`nar_gap.training.hosts`; joined here from
    its environment variables if nothing joined before) each process calls
    this with the same arguments, trains its own block of seeds and writes
    their files; process 0 then writes the run's tables, and every process
    returns the whole run, read back from ``out_dir``, which every process
    must see (a shared filesystem between machines).  Only process 0 takes
    the lock, for the whole run: the others wait for it at a barrier, and
    would wait for each other's lock forever if they took it too.

    Refused at once where :data:`READING_RESULTS_ENV` is set: a notebook
    reading its profile's results must train nothing.
    """
    if reading_results():
        raise training_refused(config.network.algorithm)
    hosts.initialize_from_environment()
    out = Path(out_dir) if out_dir is not None else None
    if out is None:
        if hosts.process_count() > 1:
            raise ValueError("training over several processes needs a run directory")
        with starting_precision(initial_params):
            return _train(config, None, progress, initial_params)

    def say_waiting() -> None:
        tqdm.write(f"nar_gap: {out}: another process is training this run; waiting")

    lock = (
        files.exclusive(out, on_wait=say_waiting)
        if hosts.process_index() == 0
        else contextlib.nullcontext()
    )
    with lock, starting_precision(initial_params):
        return _train(config, out, progress, initial_params)


def _share(seeds: Sequence[int]) -> str:
    """What this process trains, when it is one of several ('' otherwise)."""
    if hosts.process_count() == 1:
        return ""
    return (
        f" (process {hosts.process_index()} of {hosts.process_count()} trains "
        f"seeds {seeds[0]}..{seeds[-1]})"
    )


def _train(
    config: TrainConfig,
    out: Path | None,
    progress: bool,
    initial_params: Any | None,
) -> TrainResult:
    own = hosts.own_seeds(config.seeds)  # all of them in one process
    digest = fingerprint(initial_params) if initial_params is not None else ""
    if out is not None:
        prepare_run_dir(config, out, digest)
    plan = resume_plan(config, out)
    if progress:
        where = out if out is not None else "training"
        tqdm.write(f"nar_gap: {where}: {plan.describe()}{_share(own)}")
    finished = finished_run(config, out, plan)
    if finished is not None:
        return finished

    mine = dataclasses.replace(config, seeds=own)
    resets = [0 if out is None else selection_reset_step(out, s) for s in own]
    states = initial_states(mine, out, initial_params)
    trained = train_seeds(mine, states, out, progress, resets)
    if out is not None:
        write_seed_results(config, out, own, trained.states, trained.details)
    if hosts.process_count() > 1:
        return merged_run(config, out, plan, trained.shapes)
    if out is not None:
        rows = [
            {k: v for k, v in d.items() if k != "test_along_time"}
            for d in trained.details
        ]
        write_run_tables(config, out, rows, trained.details)
    return TrainResult(
        config=mine,
        metrics=trained.details,
        params=trained.best,
        out_dir=out,
        plan=plan,
        shapes=trained.shapes,
    )
