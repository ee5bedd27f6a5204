"""Training many seeds at once: the loop, around one state value per group of seeds.

The paper trains GATv2 on CLRS with run.py's defaults and then compares
hundreds of seeds.  Here the seed is an array axis: parameters, optimiser
states and batches of all seeds are stacked along axis 0 and one jitted step
(:mod:`nar_gap.training.step`) updates them together, sharded over devices
(:mod:`nar_gap.training.devices`).

The loop is Flax's ``train_and_evaluate`` shape: a :class:`GroupState` (the
stacked parameters, optimiser states, best-validation parameters and
counters of seeds that share their step) goes in and out of pure functions
-- :func:`train_step`, :func:`score_validation` -- and :func:`save` writes it.
Evaluation follows run.py: validation every ``eval_every`` steps on the CLRS
val split (N = 16), each seed keeps the parameters its selection rule picks
(``TrainConfig.selection``, decided by :func:`improved`; CLRS's rule, the
first best, by default), and the test split (N = 64) is scored with them at
the end.  A fresh start is also validated at step 0, before its first
optimiser step, so every validation history starts from the untrained model.

Over several processes (:mod:`nar_gap.training.hosts`) the same loop runs in
each on its own block of seeds; only what spans every seed (``config.json``,
``metrics.csv``, ``metrics.json``) has one writer, process 0.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from nar_gap.model.network import param_shapes
from nar_gap.model.seeds import init_stacked, score_seeds, stack_trees, unstack_tree
from nar_gap.system import files
from nar_gap.system.numerics import starting_precision
from nar_gap.system.provenance import provenance
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.sampling import eval_batch
from nar_gap.training import hosts
from nar_gap.training.config import SELECTION_RULES, TrainConfig
from nar_gap.training.devices import put_on_devices, seed_sharding
from nar_gap.training.feed import draw_ahead, seed_batches
from nar_gap.training.run_dir import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    INITIAL_FILE,
    METRICS_FILE,
    METRICS_TABLE,
    NO_SCORE,
    PARAMS_FILE,
    ResumePlan,
    TrainResult,
    check_initial,
    check_run_dir,
    check_tree,
    fingerprint,
    load_checkpoint,
    load_run,
    record_validation,
    resume_plan,
    save_checkpoint,
    seed_dir,
    selection_reset_step,
)
from nar_gap.training.step import make_optimizer, make_train_step, step_keys

SeedState = dict[str, Any]  # one seed's checkpoint: params, opt_state, best, counters


@dataclasses.dataclass(frozen=True)
class GroupState:
    """Seeds that share their step, stacked on axis 0.

    ``params`` and ``opt_state`` live on the devices (sharded); the rest are
    host arrays, one entry per seed.  ``skipped`` counts non-finite steps since
    the group started, on the devices, so the loop never waits for it.
    """

    step: int
    params: Any
    opt_state: Any
    best_params: Any
    best_val: np.ndarray
    best_step: np.ndarray
    nonfinite: np.ndarray
    skipped: jax.Array
    last_loss: np.ndarray


def _fresh_seed_state(params: Any, optimizer: Any) -> SeedState:
    return {
        "params": params,
        "opt_state": optimizer.init(params),
        "best_params": params,
        "step": 0,
        "best_val": NO_SCORE,
        "best_step": 0,
        "nonfinite": 0,
        "last_loss": float("nan"),
    }


def initial_states(
    config: TrainConfig, out: Path | None, initial_params: Any | None
) -> list[SeedState]:
    """Every seed's state: its checkpoint if there is one, else a fresh start."""
    template = jax.tree_util.tree_map(
        lambda x: x[0],
        seed_batches(dataclasses.replace(config, seeds=config.seeds[:1]), 0),
    )
    optimizer = make_optimizer(config)
    if initial_params is None:
        initial = init_stacked(config.network, template, config.seeds)
    else:
        check_tree(initial_params, param_shapes(config.network, template))
        initial = stack_trees([jax.device_get(initial_params)] * len(config.seeds))
    states = []
    for index, seed in enumerate(config.seeds):
        state = _fresh_seed_state(unstack_tree(initial, index), optimizer)
        path = None if out is None else seed_dir(out, seed) / CHECKPOINT_FILE
        if path is not None and path.exists():
            state = load_checkpoint(path, state)
        states.append(state)
    return states


def group_state(states: list[SeedState], sharding: Any) -> GroupState:
    """Stack seeds that share their step into one :class:`GroupState`."""

    def stacked(key: str) -> Any:
        return stack_trees([s[key] for s in states])

    def column(key: str, dtype: Any) -> np.ndarray:
        return np.array([s[key] for s in states], dtype)

    return GroupState(
        step=int(states[0]["step"]),
        params=put_on_devices(stacked("params"), sharding),
        opt_state=put_on_devices(stacked("opt_state"), sharding),
        best_params=stacked("best_params"),
        best_val=column("best_val", np.float64),
        best_step=column("best_step", np.int64),
        nonfinite=column("nonfinite", np.int64),
        skipped=put_on_devices(jnp.zeros(len(states), jnp.int32), sharding),
        last_loss=column("last_loss", np.float64),
    )


def seed_states(state: GroupState) -> list[SeedState]:
    """A :class:`GroupState` back as one checkpoint per seed (host arrays)."""
    params, opt_state, skipped = jax.device_get(
        (state.params, state.opt_state, state.skipped)
    )
    return [
        {
            "params": unstack_tree(params, k),
            "opt_state": unstack_tree(opt_state, k),
            "best_params": unstack_tree(state.best_params, k),
            "step": state.step,
            "best_val": float(state.best_val[k]),
            "best_step": int(state.best_step[k]),
            "nonfinite": int(state.nonfinite[k] + skipped[k]),
            "last_loss": float(state.last_loss[k]),
        }
        for k in range(len(state.best_val))
    ]


def train_step(
    state: GroupState,
    step_fn: Callable,
    batch: Batch,
    keys: jax.Array,
    scales: jax.Array | None = None,
) -> tuple[GroupState, jax.Array, jax.Array]:
    """One optimiser step of every seed: ``(state, loss, finite)``."""
    params, opt_state, loss, finite = step_fn(
        state.params, state.opt_state, batch, keys, scales
    )
    skipped = state.skipped + (~finite).astype(jnp.int32)
    new = dataclasses.replace(
        state, step=state.step + 1, params=params, opt_state=opt_state, skipped=skipped
    )
    return new, loss, finite


def improved(scores: np.ndarray, best: np.ndarray, rule: str) -> np.ndarray:
    """Per seed: do the parameters just validated replace the selected ones?

    ``scores`` are this validation's, ``best`` the selected parameters' (the
    best so far); ``rule`` is ``TrainConfig.selection``.  ``first_best``
    (``>``, CLRS's) keeps the earliest of equal scores, ``last_best``
    (``>=``) the latest, ``final`` takes every validation, so the last one,
    at the run's last step, wins.  A NaN score wins only under ``final``.
    """
    scores = np.asarray(scores, np.float64)
    best = np.asarray(best, np.float64)
    if rule == "first_best":
        return scores > best
    if rule == "last_best":
        return scores >= best
    if rule == "final":
        return np.ones(np.broadcast(scores, best).shape, bool)
    raise ValueError(f"selection must be one of {SELECTION_RULES}, got {rule!r}")


def selected_position(
    scores: Sequence[float], rule: str, best: float = NO_SCORE
) -> int | None:
    """Which of one seed's validations, in order, ``rule`` selects (None: none).

    :func:`improved` applied along a validation history, as the loop applies
    it; ``best`` is the score to beat before the first (``NO_SCORE``: none).
    """
    chosen = None
    for position, score in enumerate(scores):
        if improved(np.array([score]), np.array([best]), rule)[0]:
            chosen, best = position, score
    return chosen


def score_validation(
    config: TrainConfig, state: GroupState, val_batch: Batch, out: Path | None = None
) -> GroupState:
    """Score every seed on the validation split; apply the selection rule.

    Where :func:`improved` says so (``config.selection``), a seed's current
    parameters become its selected ones.  With a run directory, the scores
    join its validation history
    (:func:`~nar_gap.training.run_dir.record_validation`).
    """
    scores = score_seeds(config.network, state.params, val_batch)["score"]
    if out is not None:
        record_validation(out, config.seeds, state.step, scores, state.last_loss)
    better = improved(scores, state.best_val, config.selection)
    current = jax.device_get(state.params)
    best = jax.tree_util.tree_map(
        lambda b, c: np.where(better.reshape((-1,) + (1,) * (b.ndim - 1)), c, b),
        state.best_params,
        current,
    )
    return dataclasses.replace(
        state,
        best_params=best,
        best_val=np.where(better, scores, state.best_val),
        best_step=np.where(better, state.step, state.best_step),
    )


def starts_fresh(state: GroupState) -> bool:
    """Whether the group starts untrained, so step 0 is validated first.

    Step 0 is then in the validation history (the curves of notebook 02 start
    from the untrained model) and a candidate like any other: under
    ``first_best`` it stays selected only if no later validation beats it.
    Validation reads the parameters and changes nothing that training uses (a
    step's data and keys depend on seed and step alone), so the trained
    parameters are those of a run without it.  A resumed or continued group
    (step > 0) has its earlier validations already.
    """
    return state.step == 0


def save(
    state: GroupState, seeds: tuple[int, ...], out: Path | None
) -> list[SeedState]:
    """Write each seed's checkpoint (atomically); returns the per-seed states."""
    per_seed = seed_states(state)
    if out is not None:
        for seed, seed_state in zip(seeds, per_seed, strict=True):
            save_checkpoint(seed_dir(out, seed) / CHECKPOINT_FILE, seed_state)
    return per_seed


def _due(every: int, done: int, last: int) -> bool:
    return bool(every and done % every == 0) or done == last


def train_group(
    config: TrainConfig,
    states: list[SeedState],
    out: Path | None,
    val_batch: Batch,
    progress: bool,
    shapes: collections.Counter | None = None,
) -> list[SeedState]:
    """Train seeds that share their current step up to ``config.steps``.

    ``shapes`` (if given) counts the steps run at each padded (nodes, steps).
    """
    sharding = seed_sharding(len(config.seeds))
    step_fn = make_train_step(config)
    state = group_state(states, sharding)
    if starts_fresh(state):
        state = score_validation(config, state, val_batch, out)
    steps = range(state.step, config.steps)
    batches = draw_ahead(config, steps)
    bar = tqdm(
        total=config.steps,
        initial=state.step,
        desc=f"{config.network.algorithm} x{len(config.seeds)} seeds",
        disable=not progress,
        unit="step",
        dynamic_ncols=True,
    )
    try:
        for step, batch in zip(steps, batches, strict=False):
            if shapes is not None:
                shapes[(batch.num_nodes, batch.num_steps)] += 1
            keys = step_keys(config.seeds, step)
            scales = jnp.full(len(config.seeds), config.supervision_scale(step))
            state, loss, finite = train_step(
                state,
                step_fn,
                put_on_devices(batch, sharding),
                put_on_devices(keys, sharding),
                put_on_devices(scales, sharding),
            )
            if _due(config.eval_every, state.step, config.steps):
                loss, finite = jax.device_get((loss, finite))
                state = score_validation(
                    config,
                    dataclasses.replace(state, last_loss=np.asarray(loss)),
                    val_batch,
                    out,
                )
                bar.set_postfix(
                    loss=f"{np.nanmean(loss):.3f}", val=f"{np.mean(state.best_val):.3f}"
                )
                if not finite.all():
                    bad = [
                        s for s, ok in zip(config.seeds, finite, strict=True) if not ok
                    ]
                    tqdm.write(
                        f"nar_gap: non-finite loss for seeds {bad} at step {state.step}"
                    )
            if _due(config.checkpoint_every, state.step, config.steps):
                states = save(state, config.seeds, out)
            bar.update(1)
    finally:
        bar.close()
    return states


def _summary_row(
    seed: int,
    state: SeedState,
    test: dict[str, Any],
    index: int,
    selection: str,
    reset_step: int = 0,
) -> dict:
    """One seed's metrics; ``test`` scores its selected parameters.

    ``selected_step`` is the step of the selected parameters under
    ``selection`` (``best_val_score`` is that step's validation score).
    ``selection_reset_step`` is the step at which
    :func:`~nar_gap.training.run_dir.continue_from` restarted selection (only
    validations after it were candidates), 0 when it never was.
    """
    row = {
        "seed": seed,
        "steps": int(state["step"]),
        "final_loss": float(state["last_loss"]),
        "selection": selection,
        "selected_step": int(state["best_step"]),
        "selection_reset_step": int(reset_step),
        "best_val_score": float(state["best_val"]),
        "nonfinite_steps": int(state["nonfinite"]),
        "test_score": float(test["score"][index]),
    }
    for name, values in test.items():
        if name != "score" and not name.endswith("_along_time"):
            row[f"test_{name}"] = float(values[index])
    return row


def _along_time(test: dict[str, Any], index: int) -> dict[str, list[float]]:
    return {
        name: np.asarray(values[index]).tolist()
        for name, values in test.items()
        if name.endswith("_along_time")
    }


def _prepare_run_dir(config: TrainConfig, out: Path, initial_digest: str) -> None:
    """Check and claim ``out``; every process checks, so each can refuse alone.

    Only process 0 writes, and the others go on once it has, so no process
    trains into a directory whose configuration is not yet written.
    """
    files.ensure_dir(out)
    check_run_dir(out, config)
    check_initial(out, initial_digest)
    if hosts.process_index() == 0:
        files.write_json_atomic(out / CONFIG_FILE, config.to_dict())
        files.write_json_atomic(out / INITIAL_FILE, {"initial_params": initial_digest})
    hosts.barrier("prepared")


def _write_seed_results(
    config: TrainConfig,
    out: Path,
    seeds: Sequence[int],
    states: list[SeedState],
    details: list[dict],
) -> None:
    """Each of ``seeds``' selected parameters and metrics (``config``: the run's)."""
    for seed, state, detail in zip(seeds, states, details, strict=True):
        directory = seed_dir(out, seed)
        files.write_bytes_atomic(
            directory / PARAMS_FILE, flax.serialization.to_bytes(state["best_params"])
        )
        files.write_json_atomic(
            directory / METRICS_FILE,
            {"config": config.to_dict(), "seed": seed, **detail},
        )


def _write_run_tables(
    config: TrainConfig, out: Path, rows: list[dict], details: list[dict]
) -> None:
    """``metrics.csv`` and ``metrics.json``: every seed of the run, in its order."""
    files.write_csv_atomic(out / METRICS_TABLE, rows)
    files.write_json_atomic(
        out / METRICS_FILE,
        {"config": config.to_dict(), **provenance(), "seeds": details},
    )


def _saved_details(out: Path, seed: int) -> dict:
    """One seed's metrics as :func:`_train` computed them, read back from its file.

    JSON gives back each float exactly, and NaN as None, which
    :func:`~nar_gap.system.files.to_jsonable` writes as NaN was: tables
    merged from these files are the bytes one process would have written.
    """
    saved = files.read_json(seed_dir(out, seed) / METRICS_FILE)
    return {key: value for key, value in saved.items() if key != "config"}


def _merged_run(
    config: TrainConfig,
    out: Path,
    plan: ResumePlan,
    shapes: collections.Counter,
) -> TrainResult:
    """After every process wrote its seeds: process 0 writes the run's tables.

    Every process then returns the whole run, read back from ``out`` (its
    ``shapes`` are its own seeds').
    """
    hosts.barrier("trained")
    if hosts.process_index() == 0:
        details = [_saved_details(out, seed) for seed in config.seeds]
        rows = [
            {key: value for key, value in detail.items() if key != "test_along_time"}
            for detail in details
        ]
        _write_run_tables(config, out, rows, details)
    hosts.barrier("merged")
    run = load_run(out)
    metrics = [{k: v for k, v in m.items() if k != "config"} for m in run.metrics]
    return dataclasses.replace(
        run,
        config=config,
        metrics=metrics,
        plan=plan,
        shapes=dict(sorted(shapes.items())),
    )


def _finished_run(
    config: TrainConfig, out: Path | None, plan: ResumePlan
) -> TrainResult | None:
    """The saved results of a run that already finished ``config``, else None.

    Every notebook that reuses notebook 02's baselines calls :func:`train` on
    them; scoring 32 hidden-128 seeds again only to write the same numbers
    took about 13 s a call on 2 cores.  The saved metrics are used only when
    they were written for this very configuration (steps and seeds included)
    and every checkpoint is at its target: anything else is scored again.
    """
    if out is None or any(done != config.steps for done in plan.steps_done.values()):
        return None
    try:
        saved = TrainConfig.from_dict(files.read_json(out / METRICS_FILE)["config"])
        run = load_run(out)
    except Exception:  # unreadable, or from another version: score again
        return None
    if saved != config:
        return None
    metrics = [{k: v for k, v in m.items() if k != "config"} for m in run.metrics]
    return dataclasses.replace(run, config=config, metrics=metrics, plan=plan)


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
        _prepare_run_dir(config, out, digest)
    plan = resume_plan(config, out)
    if progress:
        where = out if out is not None else "training"
        tqdm.write(f"nar_gap: {where}: {plan.describe()}{_share(own)}")
    finished = _finished_run(config, out, plan)
    if finished is not None:
        return finished

    algorithm = config.network.algorithm
    val_batch = eval_batch(algorithm, "val", config.val_num_nodes, config.eval_graphs)
    test_batch = eval_batch(
        algorithm, "test", config.test_num_nodes, config.eval_graphs
    )
    run_config, config = config, dataclasses.replace(config, seeds=own)
    states = initial_states(config, out, initial_params)

    # Seeds advance in lockstep groups that share their current step.
    shapes: collections.Counter = collections.Counter()
    groups: dict[int, list[int]] = {}
    for index, state in enumerate(states):
        groups.setdefault(int(state["step"]), []).append(index)
    for start, members in sorted(groups.items()):
        if start < config.steps:
            group = dataclasses.replace(
                config, seeds=tuple(config.seeds[i] for i in members)
            )
            trained = train_group(
                group, [states[i] for i in members], out, val_batch, progress, shapes
            )
            for index, state in zip(members, trained, strict=True):
                states[index] = state

    best = stack_trees([s["best_params"] for s in states])
    # Placed as validation placed them: the scorer compiled for validation then
    # serves the test split too wherever the two batches share a shape (host
    # arrays are another input sharding to jit, so another compile: about 1 s
    # of every smoke run).
    placed = put_on_devices(best, seed_sharding(len(config.seeds)))
    test = score_seeds(config.network, placed, test_batch)
    resets = [0 if out is None else selection_reset_step(out, s) for s in config.seeds]
    rows = [
        _summary_row(seed, s, test, k, config.selection, resets[k])
        for k, (seed, s) in enumerate(zip(config.seeds, states, strict=True))
    ]
    details = [
        {**row, "test_along_time": _along_time(test, k)} for k, row in enumerate(rows)
    ]
    if out is not None:
        _write_seed_results(run_config, out, config.seeds, states, details)
    if hosts.process_count() > 1:
        return _merged_run(run_config, out, plan, shapes)
    if out is not None:
        _write_run_tables(run_config, out, rows, details)
    return TrainResult(
        config=config,
        metrics=details,
        params=best,
        out_dir=out,
        plan=plan,
        shapes=dict(sorted(shapes.items())),
    )
