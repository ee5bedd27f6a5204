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

:func:`train_seeds` is the loop's whole: states in, trained and tested
seeds out, checkpoints and validation records written on the way.  Whether
a run needs training at all, and where its results go, is the run
directory's to say (:mod:`nar_gap.training.run`, the ``train`` verb).  Over
several processes the same loop runs in each on its own block of seeds.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from nar_gap.model.network import param_shapes
from nar_gap.model.seeds import init_stacked, score_seeds, stack_trees, unstack_tree
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.sampling import eval_batch
from nar_gap.training.config import SELECTION_RULES, TrainConfig
from nar_gap.training.devices import put_on_devices, seed_sharding
from nar_gap.training.feed import draw_ahead, seed_batches
from nar_gap.training.run_dir import (
    CHECKPOINT_FILE,
    NO_SCORE,
    check_tree,
    load_checkpoint,
    record_validation,
    save_checkpoint,
    seed_dir,
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


@dataclasses.dataclass(frozen=True)
class Trained:
    """What the loop hands back: every seed trained to ``config.steps``.

    ``states``: each seed's final state (checkpointed); ``details``: each
    seed's metrics, its selected parameters scored on the test split (with
    the per-step series, ``test_along_time``); ``best``: the selected
    parameters, stacked; ``shapes``: steps run at each padded (nodes, steps).
    """

    states: list[SeedState]
    details: list[dict]
    best: Any
    shapes: dict


def train_seeds(
    config: TrainConfig,
    states: list[SeedState],
    out: Path | None,
    progress: bool,
    reset_steps: Sequence[int] | None = None,
) -> Trained:
    """Train ``config.seeds`` from ``states`` to ``config.steps``, then test them.

    Seeds advance in lockstep groups that share their current step (a
    resumed run may hold seeds at several).  ``reset_steps``: per seed, the
    step after which selection restarted (the run directory's
    :func:`~nar_gap.training.run_dir.selection_reset_step`; 0: never).
    """
    states = list(states)
    shapes: collections.Counter = collections.Counter()
    groups: dict[int, list[int]] = {}
    for index, state in enumerate(states):
        groups.setdefault(int(state["step"]), []).append(index)
    algorithm = config.network.algorithm
    val_batch = eval_batch(algorithm, "val", config.val_num_nodes, config.eval_graphs)
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
    test_batch = eval_batch(
        algorithm, "test", config.test_num_nodes, config.eval_graphs
    )
    # Placed as validation placed them: the scorer compiled for validation then
    # serves the test split too wherever the two batches share a shape (host
    # arrays are another input sharding to jit, so another compile: about 1 s
    # of every smoke run).
    placed = put_on_devices(best, seed_sharding(len(config.seeds)))
    test = score_seeds(config.network, placed, test_batch)
    resets = list(reset_steps) if reset_steps is not None else [0] * len(states)
    rows = [
        _summary_row(seed, s, test, k, config.selection, resets[k])
        for k, (seed, s) in enumerate(zip(config.seeds, states, strict=True))
    ]
    details = [
        {**row, "test_along_time": _along_time(test, k)} for k, row in enumerate(rows)
    ]
    return Trained(states, details, best, dict(sorted(shapes.items())))
