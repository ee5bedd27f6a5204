"""Training many seeds at once: one jitted, vmapped step, sharded over devices.

The paper trains GATv2 on CLRS with run.py's defaults and then compares
hundreds of seeds.  Here the seed is an array axis: parameters, optimiser
states and batches of all seeds are stacked along axis 0 and one
``jit(vmap(step))`` updates them together.  When several devices exist the seed
axis is sharded over them with a ``NamedSharding`` (JAX's own SPMD partitioner
splits the computation; no ``pmap``), so the same code fills one CPU, one GPU
or several.

Each step's data are a pure function of ``(seed, step)`` (see
:func:`nar_gap.data.train_batch`), so a run resumes from a checkpoint without
replaying the samplers, and the same arguments give the same numbers.  Shapes
are bucketed -- graph sizes to ``node_buckets`` (padding nodes are masked out
exactly), trace lengths to a short geometric ladder -- so a run compiles a
handful of times instead of once per (size, length).

Optimiser: dm-clrs's ``clip_by_global_norm -> scale_by_adam -> scale(-lr)``.
A step whose loss or gradient is not finite is skipped for that seed (its
parameters are kept) and counted in its metrics; other seeds go on.
Evaluation follows run.py: validation every ``eval_every`` steps on the CLRS
val split (N = 16), the best-validation parameters are kept, and the test
split (N = 64) is scored with them at the end.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from tqdm import tqdm

from nar_gap import data as data_lib
from nar_gap import io
from nar_gap._clrs import clrs
from nar_gap.data import Batch
from nar_gap.evaluation import hint_scores, output_scores
from nar_gap.losses import total_loss
from nar_gap.network import Network, NetworkConfig
from nar_gap.provenance import provenance, versions  # noqa: F401 (versions: old name)

# run.py's training edge probabilities, 0.1 ... 0.9.
PAPER_EDGE_PROBABILITIES: tuple[float, ...] = tuple(
    round(0.1 * i, 1) for i in range(1, 10)
)
PAPER_TRAIN_LENGTHS: tuple[int, ...] = (4, 7, 11, 13, 16)
CHECKPOINT_FILE = "checkpoint.msgpack"
PARAMS_FILE = "params.msgpack"
INITIAL_FILE = "initial.json"
CONFIG_FILE = "config.json"


class CheckpointError(ValueError):
    """A checkpoint or run directory cannot be used (corrupt, or another config)."""


class TrainingError(RuntimeError):
    """Training could not go on (with the reason in the message)."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run; defaults are the paper's.

    Attributes:
      network: the architecture and hint-loop options.
      seeds: one model per seed, trained together.
      steps: optimiser steps per seed (paper: 10 000).
      batch_size: samples per step and seed (paper: 32).
      learning_rate: Adam's (paper: 1e-3).
      grad_clip_norm: global-norm clipping (paper: 1.0; 0 disables).
      train_lengths: graph sizes cycled one batch each (paper: 4, 7, 11, 13, 16).
      edge_probabilities: Erdős–Rényi p grid for training (run.py's 0.1..0.9).
      random_pos: randomise ``pos`` in training (run.py: True).
      l1_weight: weight of the L1 penalty Σ|θ| (the paper's minimal models).
      eval_every: validation period in steps (0: only at the end).
      checkpoint_every: checkpoint period in steps (0: only at the end).
      val_num_nodes, test_num_nodes: sizes of the evaluation splits; at 16 and
        64 these are exactly CLRS-30's val and test sets.
      node_buckets: graph sizes are padded up to the smallest bucket that fits
        (sizes above every bucket stay as they are; empty: no node padding, one
        compile per size).  Padded nodes are masked out exactly, so this trades
        some compute on small graphs for fewer compiles: with the paper's sizes
        4..16, (8, 16) compiles about a third as often as no buckets.
      time_buckets: trace lengths are padded up to the smallest bucket that
        fits; lengths above every bucket (all of them when empty) go up the
        ladder 2, 3, 4, 6, 8, 12, 16, ... .  Padded steps are masked exactly.
        Few coarse buckets mean few compiles (each costs ~10 s on a CPU) but
        more padded compute: right for short runs and tests.
    """

    network: NetworkConfig
    seeds: tuple[int, ...] = (0,)
    steps: int = 10_000
    batch_size: int = 32
    learning_rate: float = 1e-3
    grad_clip_norm: float = 1.0
    train_lengths: tuple[int, ...] = PAPER_TRAIN_LENGTHS
    edge_probabilities: tuple[float, ...] = PAPER_EDGE_PROBABILITIES
    random_pos: bool = True
    l1_weight: float = 0.0
    eval_every: int = 500
    checkpoint_every: int = 500
    val_num_nodes: int = 16
    test_num_nodes: int = 64
    node_buckets: tuple[int, ...] = (8, 16)
    time_buckets: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        problems = []
        if not self.seeds:
            problems.append("at least one seed is needed")
        if len(set(self.seeds)) != len(self.seeds):
            problems.append(f"seeds must be distinct, got {self.seeds}")
        if any(not 0 <= s < 2**31 for s in self.seeds):
            problems.append("seeds must be in [0, 2**31)")
        for label, value, low in (
            ("steps", self.steps, 0),
            ("batch_size", self.batch_size, 1),
            ("eval_every", self.eval_every, 0),
            ("checkpoint_every", self.checkpoint_every, 0),
            ("val_num_nodes", self.val_num_nodes, 2),
            ("test_num_nodes", self.test_num_nodes, 2),
        ):
            if value < low:
                problems.append(f"{label} must be >= {low}, got {value}")
        if not self.train_lengths or min(self.train_lengths) < 2:
            problems.append(
                f"train_lengths must be sizes >= 2, got {self.train_lengths}"
            )
        if not self.learning_rate > 0:
            problems.append(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.grad_clip_norm < 0 or self.l1_weight < 0:
            problems.append("grad_clip_norm and l1_weight must be >= 0")
        if any(b < 2 for b in self.node_buckets):
            problems.append(f"node_buckets must be sizes >= 2, got {self.node_buckets}")
        if any(b < 1 for b in self.time_buckets):
            problems.append(f"time_buckets must be >= 1, got {self.time_buckets}")
        net = self.network
        if net.use_pre_att_bias:
            sizes = {
                "training graphs (train_lengths, --lengths)": max(self._padded_sizes()),
                "validation graphs (val_num_nodes, --val-size)": self.val_num_nodes,
                "test graphs (test_num_nodes, --test-size)": self.test_num_nodes,
            }
            too_big = [f"{what} of {n}" for what, n in sizes.items() if n > net.pre_att_bias_nodes]
            if too_big:
                problems.append(
                    f"use_pre_att_bias with pre_att_bias_nodes={net.pre_att_bias_nodes} "
                    f"cannot run on {', '.join(too_big)} nodes: its N x N bias fixes "
                    f"the size, so train, validate and test at "
                    f"{net.pre_att_bias_nodes} nodes or below"
                )
        if problems:
            raise ValueError("invalid TrainConfig: " + "; ".join(problems))

    def _padded_sizes(self) -> list[int]:
        return [bucket_nodes(n, self.node_buckets) for n in self.train_lengths]

    def to_dict(self) -> dict[str, Any]:
        return io.to_jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> TrainConfig:
        fields = dict(payload)
        fields["network"] = NetworkConfig(**fields["network"])
        for name in (
            "seeds",
            "train_lengths",
            "edge_probabilities",
            "node_buckets",
            "time_buckets",
        ):
            fields[name] = tuple(fields[name])
        return cls(**fields)


# --------------------------------------------------------------------------- #
# Shapes: bucketing node counts and trace lengths.
# --------------------------------------------------------------------------- #


def bucket_nodes(num_nodes: int, buckets: Sequence[int]) -> int:
    """The smallest bucket >= num_nodes (num_nodes itself when none fits)."""
    fitting = [b for b in buckets if b >= num_nodes]
    return min(fitting) if fitting else num_nodes


def bucket_steps(num_steps: int, buckets: Sequence[int] = ()) -> int:
    """The smallest of ``buckets`` that fits, else the next rung of 2, 3, 4, 6, 8, ...

    The ladder wastes at most 50 % of the steps and has two rungs per octave.
    """
    fitting = [b for b in buckets if b >= num_steps]
    if fitting:
        return min(fitting)
    if num_steps <= 2:
        return max(num_steps, 1)
    power = 2 ** math.floor(math.log2(num_steps))
    if num_steps == power:
        return power
    return power * 3 // 2 if num_steps <= power * 3 // 2 else power * 2


def pad_for_training(
    batches: Sequence[Batch],
    node_buckets: Sequence[int],
    time_buckets: Sequence[int] = (),
) -> Batch:
    """Pad each seed's batch to a common bucketed shape and stack along axis 0."""
    num_nodes = bucket_nodes(max(b.num_nodes for b in batches), node_buckets)
    num_steps = bucket_steps(max(b.num_steps for b in batches), time_buckets)
    padded = [
        data_lib.pad_batch(b, num_nodes=num_nodes, num_steps=num_steps) for b in batches
    ]
    return data_lib.stack_seeds(padded)


# --------------------------------------------------------------------------- #
# The jitted functions.
# --------------------------------------------------------------------------- #


def make_optimizer(config: TrainConfig) -> optax.GradientTransformation:
    """dm-clrs BaselineModel's optimiser (clip, Adam, scale by -lr)."""
    if config.grad_clip_norm > 0:
        return optax.chain(
            optax.clip_by_global_norm(config.grad_clip_norm),
            optax.scale_by_adam(),
            optax.scale(-config.learning_rate),
        )
    return optax.adam(config.learning_rate)


def _step_key(seed: int, step: int) -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(seed), step)


def _rngs(key: jax.Array) -> dict[str, jax.Array]:
    dropout, teacher = jax.random.split(key)
    return {"dropout": dropout, "teacher": teacher}


def loss_fn(
    config: TrainConfig, params: Any, batch: Batch, key: jax.Array
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The CLRS training loss of one seed (plus the optional L1 penalty)."""
    out = Network(config.network).apply(
        {"params": params}, batch, repred=False, rngs=_rngs(key)
    )
    loss, terms = total_loss(config.network, out, batch)
    if config.l1_weight > 0:
        l1 = sum(jnp.sum(jnp.abs(p)) for p in jax.tree_util.tree_leaves(params))
        terms = {**terms, "l1": l1}
        loss = loss + config.l1_weight * l1
    return loss, terms


def make_train_step(config: TrainConfig) -> Callable:
    """``(params, opt_state, batch, keys) -> (params, opt_state, loss, finite)``, all seeds.

    One jitted function per network and optimiser setting (not per seed list),
    so runs and tests that share them share compiled executables.
    """
    return _train_step(
        dataclasses.replace(
            config, seeds=(0,), steps=0, eval_every=0, checkpoint_every=0
        )
    )


@functools.lru_cache(maxsize=16)
def _train_step(config: TrainConfig) -> Callable:
    optimizer = make_optimizer(config)

    def single(params, opt_state, batch, key):
        (loss, _), grads = jax.value_and_grad(
            lambda p: loss_fn(config, p, batch, key), has_aux=True
        )(params)
        finite = jnp.isfinite(loss) & jnp.all(
            jnp.stack(
                [jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)]
            )
        )
        updates, new_opt_state = optimizer.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        keep = lambda new, old: jnp.where(finite, new, old)  # noqa: E731
        params = jax.tree_util.tree_map(keep, new_params, params)
        opt_state = jax.tree_util.tree_map(keep, new_opt_state, opt_state)
        return params, opt_state, loss, finite

    return jax.jit(jax.vmap(single), donate_argnums=(0, 1))


def evaluate_params(config: NetworkConfig, params: Any, batch: Batch) -> dict[str, Any]:
    """Output score and hint scores of one parameter set (unjitted; vmap/jit it)."""
    out = Network(config).apply({"params": params}, batch, repred=True)
    return {**output_scores(config, out, batch), **hint_scores(config, out, batch)}


@functools.lru_cache(maxsize=16)
def _seed_evaluator(config: NetworkConfig) -> Callable:
    # Bounded like _train_step: a notebook that trains dozens of configurations
    # in one kernel must not keep every configuration's executables alive.
    return jax.jit(
        jax.vmap(lambda p, b: evaluate_params(config, p, b), in_axes=(0, None))
    )


def evaluate(
    config: NetworkConfig, stacked_params: Any, batch: Batch, chunk: int = 8
) -> dict[str, np.ndarray]:
    """Scores of every seed in ``stacked_params`` (leading seed axis) on one batch.

    Seeds are evaluated ``chunk`` at a time (vmapped) to bound memory on big
    graphs; the result has a leading seed axis on every entry.
    """
    batch = data_lib.pad_batch(batch, num_steps=bucket_steps(batch.num_steps))
    return in_seed_chunks(
        lambda part: _seed_evaluator(config)(part, batch), stacked_params, chunk
    )


def in_seed_chunks(
    fn: Callable[[Any], dict[str, Any]], stacked_params: Any, chunk: int
) -> dict[str, np.ndarray]:
    """``fn`` on ``chunk`` seeds at a time, results joined on the seed axis.

    ``fn`` is a vmapped, jitted evaluation over the leading seed axis; chunks
    bound its memory on big graphs.
    """
    num_seeds = jax.tree_util.tree_leaves(stacked_params)[0].shape[0]

    def seeds_from(start: int) -> Any:
        return jax.tree_util.tree_map(
            lambda x: x[start : start + chunk], stacked_params
        )

    pieces = [
        jax.device_get(fn(seeds_from(start))) for start in range(0, num_seeds, chunk)
    ]
    return {k: np.concatenate([np.asarray(p[k]) for p in pieces]) for k in pieces[0]}


# --------------------------------------------------------------------------- #
# Sharding over devices.
# --------------------------------------------------------------------------- #


def seed_sharding(
    num_seeds: int, devices: Sequence[Any] | None = None
) -> NamedSharding:
    """Shard axis 0 (seeds) over as many devices as divide the seed count."""
    devices = list(devices if devices is not None else jax.devices())
    count = max(d for d in range(1, len(devices) + 1) if num_seeds % d == 0)
    mesh = Mesh(np.array(devices[:count]), ("seeds",))
    return NamedSharding(mesh, PartitionSpec("seeds"))


def _put(tree: Any, sharding: NamedSharding) -> Any:
    return jax.device_put(tree, sharding)


# --------------------------------------------------------------------------- #
# Data pipeline: step-indexed batches, prefetched on a thread.
# --------------------------------------------------------------------------- #


def _seed_batches(config: TrainConfig, step: int) -> Batch:
    batches = [
        data_lib.train_batch(
            config.network.algorithm,
            seed,
            step,
            lengths=config.train_lengths,
            batch_size=config.batch_size,
            p=config.edge_probabilities,
            random_pos=config.random_pos,
        )
        for seed in config.seeds
    ]
    return pad_for_training(batches, config.node_buckets, config.time_buckets)


def _prefetch(
    make: Callable[[int], Any], steps: range, depth: int = 3
) -> Iterator[Any]:
    """Yield ``make(step)`` for each step, computed ahead on a daemon thread.

    Sampling is Python (dm-clrs's probing); XLA releases the GIL while it
    computes, so the next batches are drawn while the current step runs.
    """
    buffer: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for step in steps:
                if stop.is_set():
                    return
                buffer.put((step, make(step), None))
        except BaseException as error:  # surfaced in the consumer
            buffer.put((None, None, error))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        for _ in steps:
            step, item, error = buffer.get()
            if error is not None:
                raise error
            yield item
    finally:
        stop.set()


# --------------------------------------------------------------------------- #
# Checkpoints.
# --------------------------------------------------------------------------- #


def _seed_dir(out_dir: Path, seed: int) -> Path:
    return out_dir / f"seed_{seed}"


def _unstack(tree: Any, index: int) -> Any:
    return jax.tree_util.tree_map(lambda x: np.asarray(x[index]), tree)


def _stack(trees: Sequence[Any]) -> Any:
    return jax.tree_util.tree_map(lambda *xs: np.stack(xs), *trees)


def _save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    io.write_bytes_atomic(path, flax.serialization.to_bytes(state))


def _load_checkpoint(path: Path, target: dict[str, Any]) -> dict[str, Any]:
    try:
        return flax.serialization.from_bytes(target, path.read_bytes())
    except Exception as error:  # msgpack / structure errors all mean "unusable"
        raise CheckpointError(
            f"checkpoint {path} is corrupt or from another model "
            f"({type(error).__name__}); delete it or use another --out"
        ) from None


def _checkpoint_step(path: Path) -> int:
    """The step a checkpoint holds (0 when there is none)."""
    if not path.exists():
        return 0
    try:
        return int(flax.serialization.msgpack_restore(path.read_bytes())["step"])
    except Exception as error:
        raise CheckpointError(
            f"checkpoint {path} is corrupt or from another model "
            f"({type(error).__name__}); delete it or use another --out"
        ) from None


def _seed_ranges(seeds: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    parts, ordered = [], sorted(seeds)
    start = previous = ordered[0]
    for seed in [*ordered[1:], None]:
        if seed is not None and seed == previous + 1:
            previous = seed
            continue
        parts.append(f"{start}" if start == previous else f"{start}-{previous}")
        if seed is not None:
            start = previous = seed
    return ", ".join(parts)


@dataclasses.dataclass(frozen=True)
class ResumePlan:
    """What :func:`train` will do in a run directory, seed by seed.

    Attributes:
      steps_done: ``{seed: steps in its checkpoint}`` (0: no checkpoint).
      target: the steps the configuration asks for.
    """

    steps_done: dict[int, int]
    target: int

    @property
    def nothing_to_train(self) -> bool:
        return all(done >= self.target for done in self.steps_done.values())

    def describe(self) -> str:
        """One line, e.g. "seeds 0-3 already at 50 steps: nothing to train"."""
        by_done: dict[int, list[int]] = {}
        for seed, done in self.steps_done.items():
            by_done.setdefault(done, []).append(seed)
        parts = []
        for done, seeds in sorted(by_done.items()):
            who = f"seed{'s' if len(seeds) > 1 else ''} {_seed_ranges(seeds)}"
            if done == 0:
                parts.append(f"{who}: training from scratch to {self.target} steps")
            elif done < self.target:
                parts.append(f"{who}: extending from {done} to {self.target} steps")
            elif done == self.target:
                parts.append(f"{who}: already at {done} steps, nothing to train")
            else:
                parts.append(
                    f"{who}: already at {done} steps, past the {self.target} asked "
                    f"for; nothing to train (scores are those of the {done}-step run)"
                )
        return "; ".join(parts)


def resume_plan(config: TrainConfig, out_dir: str | os.PathLike | None) -> ResumePlan:
    """Read each seed's checkpoint step in ``out_dir`` (none: a fresh start)."""
    out = Path(out_dir) if out_dir is not None else None
    steps = {
        seed: 0 if out is None else _checkpoint_step(_seed_dir(out, seed) / CHECKPOINT_FILE)
        for seed in config.seeds
    }
    return ResumePlan(steps, config.steps)


def load_params(path: str | os.PathLike, config: NetworkConfig, template: Batch) -> Any:
    """Parameters saved by :func:`train` (``seed_<k>/params.msgpack``)."""
    target = _init_params(config, template, 0)
    path = Path(path)
    try:
        return flax.serialization.from_bytes(target, path.read_bytes())
    except FileNotFoundError:
        raise CheckpointError(f"no parameters at {path}") from None
    except Exception as error:
        raise CheckpointError(
            f"parameter file {path} is corrupt or does not fit this network "
            f"({type(error).__name__})"
        ) from None


def _init_params(config: NetworkConfig, batch: Batch, seed: int) -> Any:
    """Initial parameters of one seed (``init_stacked`` for many)."""
    return jax.tree_util.tree_map(lambda x: x[0], init_stacked(config, batch, (seed,)))


def init_stacked(config: NetworkConfig, batch: Batch, seeds: Sequence[int]) -> Any:
    """Initial parameters of every seed, stacked on axis 0 (one vmapped trace)."""
    keys = jnp.stack([jax.random.PRNGKey(seed) for seed in seeds])
    return jax.device_get(_initializer(config)(keys, batch))


@functools.lru_cache(maxsize=16)
def _initializer(config: NetworkConfig) -> Callable:
    network = Network(config)

    def init_one(key: jax.Array, batch: Batch) -> Any:
        rngs = {**_rngs(key), "params": key}
        return network.init(rngs, batch, repred=False)["params"]

    return jax.jit(jax.vmap(init_one, in_axes=(0, None)))


# --------------------------------------------------------------------------- #
# The training loop.
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class RunResult:
    """What :func:`train` returns: per-seed metrics and the best parameters."""

    config: TrainConfig
    metrics: list[dict[str, Any]]
    params: Any  # stacked best-validation parameters, seed axis first
    out_dir: Path | None
    plan: ResumePlan | None = None  # what this call found and did


def _summary_row(seed: int, state: dict[str, Any], test: dict[str, Any], index: int):
    row = {
        "seed": seed,
        "steps": int(state["step"]),
        "final_loss": float(state["last_loss"]),
        "best_val_score": float(state["best_val"]),
        "best_val_step": int(state["best_step"]),
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


def train(
    config: TrainConfig,
    out_dir: str | os.PathLike | None = None,
    *,
    progress: bool = True,
    initial_params: Any | None = None,
) -> RunResult:
    """Train ``config.seeds`` together; write checkpoints and metrics to ``out_dir``.

    An ``out_dir`` holding a run of the same configuration is resumed: finished
    seeds are not retrained, unfinished ones continue from their last
    checkpoint.  A different configuration there is an error.

    ``initial_params`` (one parameter tree, e.g. a compiled model's) starts
    every seed from the same point instead of its own random initialisation;
    the seeds then differ only in their data order (the stability study).  Its
    fingerprint is kept in the run directory, so a resume from other starting
    parameters is refused.
    """
    out = Path(out_dir) if out_dir is not None else None
    fingerprint = _fingerprint(initial_params) if initial_params is not None else ""
    if out is not None:
        io.ensure_dir(out)
        _check_run_dir(out, config)
        _check_initial(out, fingerprint)
        io.write_json_atomic(out / CONFIG_FILE, config.to_dict())
        io.write_json_atomic(out / INITIAL_FILE, {"initial_params": fingerprint})
    plan = resume_plan(config, out)
    if progress:
        tqdm.write(f"nar_gap: {out if out is not None else 'training'}: {plan.describe()}")

    algorithm = config.network.algorithm
    val_batch = eval_batch(algorithm, "val", config.val_num_nodes)
    test_batch = eval_batch(algorithm, "test", config.test_num_nodes)
    template = _seed_batches(dataclasses.replace(config, seeds=config.seeds[:1]), 0)
    template = jax.tree_util.tree_map(lambda x: x[0], template)

    optimizer = make_optimizer(config)
    if initial_params is None:
        initial = init_stacked(config.network, template, config.seeds)
    else:
        _check_tree(initial_params, _init_params(config.network, template, 0))
        initial = _stack([jax.device_get(initial_params)] * len(config.seeds))
    states = []
    for index, seed in enumerate(config.seeds):
        params = _unstack(initial, index)
        state = {
            "params": params,
            "opt_state": optimizer.init(params),
            "best_params": params,
            "step": 0,
            "best_val": -1.0,
            "best_step": 0,
            "nonfinite": 0,
            "last_loss": float("nan"),
        }
        if out is not None and (_seed_dir(out, seed) / CHECKPOINT_FILE).exists():
            state = _load_checkpoint(_seed_dir(out, seed) / CHECKPOINT_FILE, state)
        states.append(state)

    # Seeds advance in lockstep groups that share their current step.
    groups: dict[int, list[int]] = {}
    for index, state in enumerate(states):
        groups.setdefault(int(state["step"]), []).append(index)
    for start, members in sorted(groups.items()):
        if start < config.steps:
            _train_group(config, states, members, start, out, val_batch, progress)

    best = _stack([s["best_params"] for s in states])
    test = evaluate(config.network, best, test_batch)
    rows, details = [], []
    for index, (seed, state) in enumerate(zip(config.seeds, states)):
        row = _summary_row(seed, state, test, index)
        rows.append(row)
        details.append({**row, "test_along_time": _along_time(test, index)})
        if out is not None:
            seed_dir = _seed_dir(out, seed)
            io.write_bytes_atomic(
                seed_dir / PARAMS_FILE,
                flax.serialization.to_bytes(state["best_params"]),
            )
            io.write_json_atomic(
                seed_dir / "metrics.json",
                {"config": config.to_dict(), "seed": seed, **details[-1]},
            )
    if out is not None:
        io.write_csv_atomic(out / "metrics.csv", rows)
        io.write_json_atomic(
            out / "metrics.json",
            {"config": config.to_dict(), **provenance(), "seeds": details},
        )
    return RunResult(config=config, metrics=details, params=best, out_dir=out, plan=plan)


def eval_batch(algorithm: str, split: str, num_nodes: int) -> Batch:
    """CLRS-30's val (N = 16) / test (N = 64) split, or the same recipe at N."""
    recipe = clrs.CLRS30[split]
    if num_nodes == recipe["length"]:
        return data_lib.clrs_split(algorithm, split)
    return data_lib.sample_batch(
        algorithm, num_nodes, recipe["num_samples"], recipe["seed"]
    )


def _fingerprint(params: Any) -> str:
    """A hash of a parameter tree's structure and values."""
    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        digest.update(jax.tree_util.keystr(path).encode())
        digest.update(np.ascontiguousarray(np.asarray(leaf, np.float32)).tobytes())
    return digest.hexdigest()


def _check_initial(out: Path, fingerprint: str) -> None:
    path = out / INITIAL_FILE
    if not path.exists():
        return
    previous = io.read_json(path).get("initial_params", "")
    if previous != fingerprint:
        raise CheckpointError(
            f"{out} holds a run that started from other initial parameters; "
            "choose another output directory"
        )


def _check_tree(given: Any, expected: Any) -> None:
    shapes = lambda tree: jax.tree_util.tree_map(np.shape, tree)  # noqa: E731
    if jax.tree_util.tree_structure(given) != jax.tree_util.tree_structure(
        expected
    ) or shapes(given) != shapes(expected):
        raise ValueError(
            "initial_params do not fit this network: build them for the same "
            "NetworkConfig (compiled models: use model.config as the network)"
        )


def _check_run_dir(out: Path, config: TrainConfig) -> None:
    path = out / CONFIG_FILE
    if not path.exists():
        return
    try:
        previous = TrainConfig.from_dict(io.read_json(path))
    except Exception as error:
        raise CheckpointError(f"{path} is not a nar_gap run config ({error})") from None
    same = dataclasses.replace(previous, seeds=config.seeds, steps=config.steps)
    if same != config:
        changed = ", ".join(
            f"{name} {was!r} -> {now!r}"
            for name, was, now in config_differences(same, config)
        )
        raise CheckpointError(
            f"{out} holds a run with a different configuration ({changed}); choose "
            "another output directory (only --seeds and --steps may change on resume)"
        )


def config_differences(
    old: TrainConfig, new: TrainConfig
) -> list[tuple[str, Any, Any]]:
    """``(setting, old value, new value)`` for every setting that differs."""
    found = []
    for field in dataclasses.fields(TrainConfig):
        was, now = getattr(old, field.name), getattr(new, field.name)
        if field.name == "network":
            found += [
                (f.name, getattr(was, f.name), getattr(now, f.name))
                for f in dataclasses.fields(NetworkConfig)
                if getattr(was, f.name) != getattr(now, f.name)
            ]
        elif was != now:
            found.append((field.name, was, now))
    return found


def _train_group(
    config: TrainConfig,
    states: list[dict[str, Any]],
    members: list[int],
    start: int,
    out: Path | None,
    val_batch: Batch,
    progress: bool,
) -> None:
    seeds = [config.seeds[i] for i in members]
    group_config = dataclasses.replace(config, seeds=tuple(seeds))
    sharding = seed_sharding(len(seeds))
    train_step = make_train_step(group_config)

    params = _put(_stack([states[i]["params"] for i in members]), sharding)
    opt_state = _put(_stack([states[i]["opt_state"] for i in members]), sharding)
    best = _stack([states[i]["best_params"] for i in members])
    best_val = np.array([states[i]["best_val"] for i in members], np.float64)
    best_step = np.array([states[i]["best_step"] for i in members], np.int64)
    nonfinite = np.array([states[i]["nonfinite"] for i in members], np.int64)
    nonfinite_at_start = nonfinite.copy()
    skipped = _put(jnp.zeros(len(members), jnp.int32), sharding)  # since `start`
    last_loss = np.full(len(members), np.nan)

    steps = range(start, config.steps)
    batches = _prefetch(lambda s: _seed_batches(group_config, s), steps)
    bar = tqdm(
        total=config.steps,
        initial=start,
        desc=f"{config.network.algorithm} x{len(seeds)} seeds",
        disable=not progress,
        unit="step",
        dynamic_ncols=True,
    )

    def save(step: int) -> None:
        host_params, host_opt, skipped_host = jax.device_get(
            (params, opt_state, skipped)
        )
        nonfinite[:] = nonfinite_at_start + skipped_host
        for k, index in enumerate(members):
            states[index].update(
                params=_unstack(host_params, k),
                opt_state=_unstack(host_opt, k),
                best_params=_unstack(best, k),
                step=step,
                best_val=float(best_val[k]),
                best_step=int(best_step[k]),
                nonfinite=int(nonfinite[k]),
                last_loss=float(last_loss[k]),
            )
            if out is not None:
                _save_checkpoint(
                    _seed_dir(out, config.seeds[index]) / CHECKPOINT_FILE, states[index]
                )

    def validate(step: int) -> None:
        nonlocal best
        scores = evaluate(config.network, params, val_batch)["score"]
        improved = scores > best_val
        current = jax.device_get(params)
        best = jax.tree_util.tree_map(
            lambda b, c: np.where(improved.reshape((-1,) + (1,) * (b.ndim - 1)), c, b),
            best,
            current,
        )
        best_val[:] = np.where(improved, scores, best_val)
        best_step[:] = np.where(improved, step, best_step)

    try:
        for step, batch in zip(steps, batches):
            keys = jnp.stack([_step_key(seed, step) for seed in seeds])
            batch = _put(batch, sharding)
            params, opt_state, loss, finite = train_step(
                params, opt_state, batch, _put(keys, sharding)
            )
            skipped = skipped + (~finite).astype(jnp.int32)
            done = step + 1
            if (
                config.eval_every
                and done % config.eval_every == 0
                or done == config.steps
            ):
                loss_host, finite_host, skipped_host = jax.device_get(
                    (loss, finite, skipped)
                )
                last_loss[:] = loss_host
                nonfinite[:] = nonfinite_at_start + skipped_host
                validate(done)
                bar.set_postfix(
                    loss=f"{np.nanmean(loss_host):.3f}",
                    val=f"{np.mean(best_val):.3f}",
                )
                if not finite_host.all():
                    bad = [s for s, ok in zip(seeds, finite_host) if not ok]
                    tqdm.write(
                        f"nar_gap: non-finite loss for seeds {bad} at step {done}"
                    )
            if (
                config.checkpoint_every
                and done % config.checkpoint_every == 0
                or done == config.steps
            ):
                save(done)
            bar.update(1)
    finally:
        bar.close()


def load_current_params(out_dir: str | os.PathLike) -> Any:
    """Every seed's *latest* parameters (from its checkpoint), stacked.

    :func:`load_run` returns the best-validation parameters; studies of how
    parameters move during training (stability) need the current ones.
    """
    out = Path(out_dir)
    config = load_run_config(out)
    template = data_lib.sample_batch(config.network.algorithm, 4, 1, 0)
    target = _init_params(config.network, template, 0)
    params = []
    for seed in config.seeds:
        path = _seed_dir(out, seed) / CHECKPOINT_FILE
        try:
            state = flax.serialization.msgpack_restore(path.read_bytes())
            params.append(flax.serialization.from_state_dict(target, state["params"]))
        except FileNotFoundError:
            raise CheckpointError(f"no checkpoint at {path}") from None
        except Exception as error:
            raise CheckpointError(
                f"checkpoint {path} is corrupt or from another model "
                f"({type(error).__name__})"
            ) from None
    return _stack(params)


def load_run_config(out_dir: str | os.PathLike) -> TrainConfig:
    """The :class:`TrainConfig` of a run directory, or a clear error."""
    out = Path(out_dir)
    if not (out / CONFIG_FILE).exists():
        raise CheckpointError(
            f"{out} is not a nar_gap run directory (no {CONFIG_FILE})"
        )
    try:
        return TrainConfig.from_dict(io.read_json(out / CONFIG_FILE))
    except Exception as error:
        raise CheckpointError(f"{out / CONFIG_FILE} is unreadable ({error})") from None


def load_run(out_dir: str | os.PathLike) -> RunResult:
    """Read a finished run back: config, per-seed metrics and stacked params."""
    out = Path(out_dir)
    config = load_run_config(out)
    template = data_lib.sample_batch(config.network.algorithm, 4, 1, 0)
    params, metrics = [], []
    for seed in config.seeds:
        seed_dir = _seed_dir(out, seed)
        params.append(load_params(seed_dir / PARAMS_FILE, config.network, template))
        metrics.append(io.read_json(seed_dir / "metrics.json"))
    return RunResult(config=config, metrics=metrics, params=_stack(params), out_dir=out)
