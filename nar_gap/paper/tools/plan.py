"""A plan before the run: what each notebook trains, compiles, needs and costs.

The paper profile is days of accelerator time, and a run that does not fit
the device's memory fails hours in, at its largest program.  The plan answers
beforehand, per notebook:

* **seed-steps**: the training the notebook itself does, built with the very
  functions its experiment code calls (never re-typed sizes).  Runs are
  content-addressed (:func:`nar_gap.paper.experiments.runs.run_dir`), so a run two
  notebooks share is counted once, in the first notebook that trains it;
  notebooks 03, 06 and 07 read notebook 02's baselines back.
* **compiled programs**: the distinct training programs (network, optimiser
  setting, seeds, padded ``(nodes, steps)`` shape) and scoring programs
  (validation and test splits, in seed chunks).  Which padded shapes a run
  meets is worked out from sampled trace lengths (:func:`shape_mix`).
* **memory**: XLA's own analysis of each program, lowered with
  ``jax.ShapeDtypeStruct`` arguments (nothing large is allocated) and
  compiled for the present backend: arguments + outputs - aliased + temp +
  code (:func:`peak_bytes`).
* **time**: a short measured run on the present device, scaled to the real
  seeds and steps (:func:`estimate_step_seconds`); or, for an accelerator
  this machine does not have (``--target h100``), arithmetic: each
  program's FLOPs (:mod:`nar_gap.model.flops`) at a stated fraction of the
  device's float32 peak, the evaluation along training, and a stated time
  per compiled program (:class:`Target`);
* **what it decides**: the paper-vs-ours rows the cpu run left undecided,
  each with the seeds and steps its ``decidable_at`` asked for, against the
  sizes this profile trains them at (:func:`row_needs`).

What is not training (notebook 01's compiled-model checks, the faithfulness
measures, the landscape grids, evaluation along training) is named in each
notebook's ``not_counted`` note rather than given invented numbers.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from nar_gap.model.config import NetworkConfig
from nar_gap.model.flops import train_step_flops
from nar_gap.model.network import param_shapes
from nar_gap.model.scores import score_batch
from nar_gap.model.seeds import over_seeds, seed_strategy_for
from nar_gap.paper.experiments import ablations, catalogue, closing_gap, stability
from nar_gap.paper.experiments import profiles as profile_sizes
from nar_gap.paper.experiments.profiles import Profile
from nar_gap.paper.experiments.runs import baseline_config, run_dir
from nar_gap.paper.report import claims, paper
from nar_gap.system.files import read_table
from nar_gap.tasks.batch import Batch, pad_batch
from nar_gap.tasks.buckets import bucket_shape
from nar_gap.tasks.sampling import eval_batch, train_batch
from nar_gap.training import TrainConfig
from nar_gap.training.step import make_optimizer, make_train_step

NOTEBOOKS = catalogue.stems()
# The notebooks' parameters when no checkout is at hand (an installed package):
# the values of their parameters cells.
NOT_COUNTED = {
    "01": "compiled-model checks (exactness, minimality search, locality): "
    "no training; not timed",
    "02": "validation and test scoring along training: programs counted, not timed "
    "(priced with --target)",
    "03": "faithfulness measures of the baseline seeds: not counted",
    "04": "validation and test scoring: programs counted, not timed (priced with "
    "--target)",
    "05": "the measures at each evaluation step: not counted",
    "06": "the loss grids ({grid} points per centre): not counted",
    "07": "the measures of each variant (test, sizes, sharpness): not counted; "
    "the recipe study's runs, their drift and generalisation "
    "(recipes.run_profile_recipes) are not counted either",
    "08": "TransNAR's text models (three per seed, trained on CLRS-Text) and "
    "their scoring: not counted; it reads notebook 02's baselines",
    "09": "each round's fresh block of 6c's supervised recipe and its twin "
    "(confirmation.run_confirmation): its recipe is the one the recipe study "
    "picks, known once notebook 07 has run; not counted",
}
SCORE_CHUNK = 8  # score_seeds' default chunk: seeds scored per program call
# Sampled training batches per (algorithm, size) whose trace lengths give the
# padded shapes' odds (each batch holds batch_size graphs).
SHAPE_SAMPLE_BATCHES = 16
# A padded shape expected on fewer training steps than this is not counted
# as compiled (nor timed).
MIN_EXPECTED_STEPS = 0.5
TIMED_STEPS = 2  # measured steps after one warm-up step


# --------------------------------------------------------------------------- #
# The inventory: what each notebook trains.
# --------------------------------------------------------------------------- #


@dataclasses.dataclass(frozen=True)
class Training:
    """One run a notebook trains (or reads back, when ``trained_in`` is earlier).

    ``start_step``: steps another run already trained for it (``long`` goes
    on from the plain run's checkpoints, so those steps are not paid twice).
    """

    notebook: str
    label: str
    config: TrainConfig
    run: str
    start_step: int = 0
    trained_in: str = ""

    @property
    def new_steps(self) -> int:
        """Steps per seed this notebook pays for (0 when an earlier one trains it)."""
        if self.trained_in != self.notebook:
            return 0
        return max(0, self.config.steps - self.start_step)

    @property
    def seed_steps(self) -> int:
        """Seeds times the steps this notebook pays for."""
        return len(self.config.seeds) * self.new_steps


def _algorithms(number: str, root: Path | None) -> list[str]:
    return list(catalogue.notebook_parameters(number, root).get("ALGORITHMS", []))


def _name(config: TrainConfig) -> str:
    return run_dir(config, "").name


def _baselines(profile: Profile, algorithms: Sequence[str], nb: str) -> list[Training]:
    """Notebook 02's runs (and 03's and 06's reads): baselines, edge-info arms."""
    found = [
        Training(nb, f"baseline {a}", c, _name(c))
        for a in algorithms
        for c in [baseline_config(profile, a)]
    ]
    if nb in ("02", "03"):
        found += [
            Training(nb, f"baseline {a}, edge information", c, _name(c))
            for a in algorithms
            if a in profile.edge_info_baselines
            for c in [baseline_config(profile, a, edge_info=True)]
        ]
    return found


def _ablation_runs(profile: Profile, names: Sequence[str] | None) -> list[Training]:
    tables = ablations.experiments(profile)
    chosen = list(tables) if not names else list(names)
    return [
        Training("04", f"{name}: {v.label}", v.config, _name(v.config))
        for name in chosen
        for v in tables[name].variants
    ]


def _stability_runs(profile: Profile, algorithms: Sequence[str]) -> list[Training]:
    from nar_gap.compiler import compile as compile_model

    found = []
    for algorithm in algorithms:
        compiled = compile_model(algorithm, hidden_size=None)
        config = profile.train_config(
            compiled.config, seeds=profile.seed_list(profile.stability_orders)
        )
        for label, start, setting in stability.stability_settings(config, profile):
            run = f"stability_{start}_{_name(setting)}"
            found.append(Training("05", f"{algorithm}: {label}", setting, run))
    return found


def _closing_gap_runs(profile: Profile, algorithms: Sequence[str]) -> list[Training]:
    found = []
    for algorithm in algorithms:
        configs = closing_gap.variant_configs(profile, algorithm)
        for name, config in configs.items():
            run, start = _name(config), 0
            if name == "long":
                run = closing_gap.long_run_dir(config, Path("")).name
                start = configs["plain"].steps
            found.append(Training("07", f"{algorithm}: {name}", config, run, start))
    return found


def inventory(profile: Profile, root: Path | None = None) -> dict[str, list[Training]]:
    """Every notebook's runs, each marked with the notebook that trains it first.

    ``root``: the checkout whose notebooks' parameters are read (default:
    this one).
    """
    params = {n: catalogue.notebook_parameters(n, root) for n in NOTEBOOKS}
    per_notebook: dict[str, list[Training]] = {
        "01": [],
        "02": _baselines(profile, _algorithms("02", root), "02"),
        "03": _baselines(profile, _algorithms("03", root), "03"),
        "04": _ablation_runs(profile, params["04"].get("ABLATIONS")),
        "05": _stability_runs(profile, _algorithms("05", root)),
        "06": _baselines(profile, _algorithms("06", root), "06"),
        "07": _closing_gap_runs(profile, _algorithms("07", root)),
        "08": _baselines(profile, _algorithms("08", root), "08"),
        "09": [],
    }
    first: dict[str, str] = {}
    for number, runs in per_notebook.items():
        for t in runs:
            first.setdefault(t.run, number)
    return {
        number: [dataclasses.replace(t, trained_in=first[t.run]) for t in runs]
        for number, runs in per_notebook.items()
    }


# --------------------------------------------------------------------------- #
# Programs: which padded shapes a run meets, and the programs it compiles.
# --------------------------------------------------------------------------- #


@functools.lru_cache(maxsize=256)
def _sampled_batches(
    algorithm: str, num_nodes: int, batch_size: int, p: tuple[float, ...]
) -> tuple[Batch, ...]:
    """Training batches of one size from the real stream (seeds 0.., step 0)."""
    return tuple(
        train_batch(
            algorithm, seed, 0, lengths=(num_nodes,), batch_size=batch_size, p=p
        )
        for seed in range(SHAPE_SAMPLE_BATCHES)
    )


def _trace_lengths(config: TrainConfig, num_nodes: int) -> np.ndarray:
    batches = _sampled_batches(
        config.network.algorithm,
        num_nodes,
        config.batch_size,
        tuple(config.edge_probabilities),
    )
    return np.concatenate([np.asarray(b.lengths) for b in batches])


def _steps_per_size(config: TrainConfig, start: int) -> dict[int, int]:
    """How many of steps ``start..steps-1`` draw each training size."""
    counts: dict[int, int] = {}
    for step in range(start, config.steps):
        size = config.size_at(step)
        counts[size] = counts.get(size, 0) + 1
    return counts


def shape_mix(config: TrainConfig, start: int = 0) -> dict[tuple[int, int], float]:
    """Expected training steps at each padded ``(nodes, steps)`` shape.

    A step pads every seed's batch to the bucket of their longest trace
    (:func:`nar_gap.training.shapes.pad_for_training`), so its length is the
    maximum of ``batch_size x seeds`` graphs' trace lengths.  With ``G`` the
    empirical distribution of one graph's trace length at that size
    (:data:`SHAPE_SAMPLE_BATCHES` batches of the real stream), that maximum
    is ``t`` or less with probability ``G(t)^(batch_size x seeds)``.  Traces
    longer than every sampled one are not seen: with many seeds the longest
    padded shape can be underestimated by one bucket.
    """
    graphs = config.batch_size * len(config.seeds)
    mix: dict[tuple[int, int], float] = {}
    for size, count in _steps_per_size(config, start).items():
        lengths = _trace_lengths(config, size)
        values = np.unique(lengths)
        below = np.array([np.mean(lengths <= v) for v in values]) ** graphs
        odds = np.diff(np.concatenate([[0.0], below]))
        for value, chance in zip(values, odds, strict=True):
            shape = bucket_shape(
                size,
                int(value),
                config.usable_shape_buckets(),
                config.node_buckets,
                config.time_buckets,
            )
            mix[shape] = mix.get(shape, 0.0) + count * float(chance)
    return {s: n for s, n in sorted(mix.items()) if n >= MIN_EXPECTED_STEPS}


def _step_program_config(config: TrainConfig) -> TrainConfig:
    """What the jitted step depends on, with values that do not size buffers fixed.

    Learning rate, clip norm and loss weights are constants in the program;
    the memory and the time of a step do not depend on their values (only
    on whether a term is there), so programs that differ only in them are
    analysed and timed once.
    """
    return dataclasses.replace(
        config,
        seeds=(0,),
        steps=0,
        learning_rate=1e-3,
        grad_clip_norm=1.0 if config.grad_clip_norm > 0 else 0.0,
        l1_weight=1e-4 if config.l1_weight > 0 else 0.0,
        attention_weight=1.0 if config.attention_weight > 0 else 0.0,
        state_weight=1.0 if config.state_weight > 0 else 0.0,
        supervision_until=0,
        supervision_schedule="linear",
        curriculum_steps=0,
        eval_every=0,
        checkpoint_every=0,
        selection="first_best",
        train_lengths=(2,),
        val_num_nodes=2,
        test_num_nodes=2,
        node_buckets=(),
        time_buckets=(),
        shape_buckets=(),
        seed_strategy=seed_strategy_for(config.seed_strategy),
    )


@dataclasses.dataclass(frozen=True)
class Program:
    """One compiled program: a training step or a scoring call.

    ``kind`` is ``"train"`` or ``"score"``; ``config`` the step's
    (:func:`_step_program_config`) or, for scoring, a config carrying the
    network; ``seeds`` the leading axis; ``nodes``, ``steps``, ``graphs``
    the padded batch; ``split`` the scored split.
    """

    kind: str
    config: TrainConfig
    seeds: int
    nodes: int
    steps: int
    graphs: int
    split: str = ""

    def with_seeds(self, seeds: int) -> Program:
        """The same program over another number of seeds (memory is affine in it)."""
        return dataclasses.replace(self, seeds=seeds)

    def describe(self) -> str:
        """One line for tables and warnings."""
        net = self.config.network
        what = "train" if self.kind == "train" else f"score {self.split}"
        return (
            f"{what} {net.algorithm} h{net.hidden_size} x{self.seeds} seeds "
            f"N={self.nodes} T={self.steps} B={self.graphs}"
        )


def training_programs(t: Training) -> dict[Program, float]:
    """The training programs of ``t``, with the steps expected at each."""
    step_config = _step_program_config(t.config)
    seeds = len(t.config.seeds)
    start = t.start_step if t.trained_in == t.notebook else 0
    return {
        Program("train", step_config, seeds, n, s, t.config.batch_size): steps
        for (n, s), steps in shape_mix(t.config, start).items()
    }


def _score_config(network: NetworkConfig) -> TrainConfig:
    """A config that only carries ``network`` (sizes any bias can run)."""
    return TrainConfig(
        network=network,
        seeds=(0,),
        steps=0,
        train_lengths=(2,),
        val_num_nodes=2,
        test_num_nodes=2,
        node_buckets=(),
        shape_buckets=(),
    )


@functools.lru_cache(maxsize=64)
def _split_batch(algorithm: str, split: str, num_nodes: int, graphs: int) -> Batch:
    """The evaluation batch training scores on (cached: every run asks again)."""
    return eval_batch(algorithm, split, num_nodes, graphs)


def scoring_programs(t: Training) -> list[Program]:
    """The scoring programs of ``t``'s validation and final test.

    :func:`nar_gap.model.seeds.score_seeds` scores :data:`SCORE_CHUNK` seeds
    at a time, so a seed count that is not a multiple compiles a second,
    smaller chunk.
    """
    seeds = len(t.config.seeds)
    chunks = {min(SCORE_CHUNK, seeds)}
    if seeds > SCORE_CHUNK and seeds % SCORE_CHUNK:
        chunks.add(seeds % SCORE_CHUNK)
    config = _score_config(t.config.network)
    found = []
    for split, nodes in (
        ("val", t.config.val_num_nodes),
        ("test", t.config.test_num_nodes),
    ):
        batch = _split_batch(
            t.config.network.algorithm, split, nodes, t.config.eval_graphs
        )
        for chunk in sorted(chunks):
            found.append(
                Program(
                    "score",
                    config,
                    chunk,
                    batch.num_nodes,
                    batch.num_steps,
                    batch.batch_size,
                    split,
                )
            )
    return found


# --------------------------------------------------------------------------- #
# Lowering: arguments as shapes, XLA's memory analysis.
# --------------------------------------------------------------------------- #


def _template(program: Program) -> Batch:
    """One seed's padded batch of ``program``'s shape (real data, real dtypes)."""
    net = program.config.network
    if program.kind == "score":
        nodes = program.nodes
        graphs = program.graphs
        return _split_batch(net.algorithm, program.split, nodes, graphs)
    # The shortest sampled batch of the largest size that pads to this shape.
    for size in sorted(range(2, program.nodes + 1), reverse=True):
        batches = [
            b
            for b in _sampled_batches(
                net.algorithm,
                size,
                program.graphs,
                tuple(program.config.edge_probabilities),
            )
            if b.num_steps <= program.steps
        ]
        if batches:
            shortest = min(batches, key=lambda b: b.num_steps)
            return pad_batch(shortest, num_nodes=program.nodes, num_steps=program.steps)
    raise ValueError(f"no sampled batch fits {program.describe()}")


def _stacked(tree: Any, seeds: int) -> Any:
    return jax.tree_util.tree_map(
        lambda x: (
            jax.ShapeDtypeStruct((seeds, *np.shape(x)), np.asarray(x).dtype)
            if not isinstance(x, jax.ShapeDtypeStruct)
            else jax.ShapeDtypeStruct((seeds, *x.shape), x.dtype)
        ),
        tree,
    )


def _scorer(network: NetworkConfig) -> Callable:
    return jax.jit(over_seeds(functools.partial(score_batch, network)))


def program_arguments(program: Program) -> tuple[Callable, tuple[Any, ...]]:
    """The jitted function of ``program`` and its arguments as shapes."""
    batch = _template(program)
    params = param_shapes(program.config.network, batch)
    if program.kind == "score":
        return _scorer(program.config.network), (_stacked(params, program.seeds), batch)
    opt_state = jax.eval_shape(make_optimizer(program.config).init, params)
    seeds = program.seeds
    key = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    return make_train_step(program.config), (
        _stacked(params, seeds),
        _stacked(opt_state, seeds),
        _stacked(batch, seeds),
        _stacked(key, seeds),
        jax.ShapeDtypeStruct((seeds,), jnp.float32),
    )


def peak_bytes(stats: Any) -> int:
    """XLA's peak for one call: arguments + outputs - aliased + temp + code.

    Donated arguments (the training step's parameters and optimiser state)
    alias outputs and are counted once.
    """
    return int(
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        - stats.alias_size_in_bytes
        + stats.temp_size_in_bytes
        + stats.generated_code_size_in_bytes
    )


@functools.lru_cache(maxsize=512)
def compiled(program: Program) -> Any:
    """``program`` lowered with shape arguments and compiled for this backend."""
    fn, args = program_arguments(program)
    return fn.lower(*args).compile()


def analysed_bytes(program: Program) -> int:
    """XLA's memory analysis of ``program`` (:func:`peak_bytes`)."""
    return peak_bytes(compiled(program).memory_analysis())


# --------------------------------------------------------------------------- #
# The device: its memory, a measured peak, measured step times.
# --------------------------------------------------------------------------- #


def device_memory(device: Any | None = None) -> int:
    """Bytes the device may use: the accelerator's limit, else physical memory."""
    device = device or jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"])
    return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _concrete(tree: Any, seed: int = 0) -> Any:
    """Arrays for shape arguments: small normals for floats, zeros otherwise.

    Zeros would do for memory, but a CPU slows down on denormals and a
    network of zeros may take shortcuts no trained one does.
    """
    rng = np.random.default_rng(seed)

    def make(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct):
            if jnp.issubdtype(x.dtype, jnp.floating):
                return jnp.asarray(rng.normal(0, 0.1, x.shape).astype(x.dtype))
            return jnp.zeros(x.shape, x.dtype)
        return x

    return jax.tree_util.tree_map(make, tree)


def _real_arguments(program: Program) -> tuple[Callable, tuple[Any, ...]]:
    """``program``'s function and real arguments (the batch: real data, repeated)."""
    fn, shapes = program_arguments(program)
    batch = _template(program)
    if program.kind == "score":
        return fn, (_concrete(shapes[0]), batch)
    stacked = jax.tree_util.tree_map(
        lambda x: jnp.asarray(np.stack([np.asarray(x)] * program.seeds)), batch
    )
    params = _concrete(shapes[0])
    opt_state = jax.vmap(make_optimizer(program.config).init)(params)
    keys = jnp.stack([jax.random.PRNGKey(s) for s in range(program.seeds)])
    return fn, (params, opt_state, stacked, keys, jnp.ones(program.seeds))


def _call(program: Program, args: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    """One call; the training step's outputs become the next call's state."""
    out = compiled(program)(*args)
    jax.block_until_ready(out)
    if program.kind == "train":
        args = (out[0], out[1], *args[2:])
    return out, args


def step_seconds(program: Program, repeats: int = TIMED_STEPS) -> float:
    """Seconds per call of ``program`` on this device, after one warm-up call."""
    _, args = _real_arguments(program)
    _, args = _call(program, args)
    start = time.perf_counter()
    for _ in range(repeats):
        _, args = _call(program, args)
    return (time.perf_counter() - start) / repeats


def measured_peak_bytes(program: Program) -> int:
    """The device memory one call of ``program`` really takes, in a fresh process.

    On an accelerator: the allocator's ``peak_bytes_in_use`` after the call
    (arguments, outputs and temporaries; compilation takes none).  On a CPU
    the process's resident set: the arguments' bytes plus how far the peak
    resident set rose during the call, after ``malloc_trim(0)`` returned what
    compilation freed (so the call cannot silently reuse it) and the peak
    was reset (``/proc/self/clear_refs``).  Meaningful only in a process
    that has run nothing else large.
    """
    device = jax.devices()[0]
    fn, args = _real_arguments(program)
    compiled(program)
    jax.block_until_ready(args)
    if device.platform != "cpu":
        _call(program, args)
        return int(device.memory_stats()["peak_bytes_in_use"])
    import ctypes

    ctypes.CDLL("libc.so.6").malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")
    before = _status_bytes("VmRSS")
    _call(program, args)
    rise = _status_bytes("VmHWM") - before
    resident = sum(x.nbytes for x in jax.tree_util.tree_leaves(args))
    return int(resident + rise)


def _status_bytes(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise OSError(f"/proc/self/status has no {field}")


# --------------------------------------------------------------------------- #
# An accelerator this machine does not have: time by arithmetic.
# --------------------------------------------------------------------------- #


@dataclasses.dataclass(frozen=True)
class Target:
    """An accelerator a plan prices a profile on without running there.

    Each program's time is its FLOPs (:mod:`nar_gap.model.flops`) over
    ``peak_flops * utilisation``; each compiled program adds
    ``compile_seconds``.  Both are measured on an H200 (the H100's compute
    with faster memory).  The utilisation is what the gpu profile's own job
    got over its four training runs, validation and checkpoints included
    (``benchmarks/results/gpu_h200_job_2026-11-26``): 8.2 % of the float32
    peak, each run within a fifth of it (a test reads the job's logs).  An
    isolated 128-seed step in ``benchmarks/gpu_checks.py`` ran at 17.6 %,
    about twice as fast, and the job's GPU was idle for about 45 % of its
    training: the difference is the job's (host work between steps), not
    yet located, and the plan prices what a job gets.  The first step of BFS
    and Bellman-Ford took 19.8 s and 7.6 s there (the compile); priced so,
    notebook 02's 708 s on that job comes within a fifth (a test).  An
    H100's slower memory can only lower the utilisation.

    Attributes:
      name: what ``--target`` says.
      device: the device in words.
      peak_flops: dense float32 FLOP/s.
      memory_bytes: the device's memory, for the fit column.
      utilisation: the fraction of ``peak_flops`` assumed.
      compile_seconds: assumed seconds per distinct compiled program.
    """

    name: str
    device: str
    peak_flops: float
    memory_bytes: int
    utilisation: float
    compile_seconds: float

    def seconds(self, flops: float) -> float:
        """Seconds of ``flops`` at the assumed utilisation."""
        return flops / (self.peak_flops * self.utilisation)


TARGETS: dict[str, Target] = {
    "h100": Target(
        name="h100",
        device="NVIDIA H100 SXM 80GB",
        peak_flops=67e12,  # dense float32, without tensor cores
        memory_bytes=80 * 2**30,
        utilisation=0.082,  # the gpu job's, on an H200 (the class docstring)
        compile_seconds=20.0,  # the slower first step measured there
    ),
}
#: The minutes of one 10-minute job a profile's plan may use: the rest is
#: the job's start, the measurements not priced here and the archive.
JOB_BUDGET_SECONDS = 8 * 60


def target(name: str) -> Target:
    """The :class:`Target` called ``name`` (an unknown one lists the known)."""
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(
            f"unknown target {name!r}; known targets: {', '.join(TARGETS)}"
        ) from None


def program_flops(program: Program) -> float:
    """FLOPs of one call of ``program`` over its seeds (scoring: the forward)."""
    flops = train_step_flops(
        program.config.network, program.graphs, program.nodes, program.steps
    )["total"]
    forward_share = 1 / 3 if program.kind == "score" else 1.0
    return flops * forward_share * program.seeds


def evaluation_calls(t: Training) -> dict[str, int]:
    """How often training scores each split.

    Validation every ``eval_every`` steps from step 0 and at the last step
    (as :mod:`nar_gap.training.loop` does), the test once.
    """
    steps, every = t.new_steps, t.config.eval_every
    if every <= 0:
        return {"val": 2, "test": 1}
    return {"val": steps // every + 1 + int(steps % every != 0), "test": 1}


def evaluation_flops(t: Training) -> float:
    """FLOPs of ``t``'s evaluation along training, over all its seeds."""
    if t.new_steps == 0:
        return 0.0
    calls = evaluation_calls(t)
    seeds = len(t.config.seeds)
    return sum(
        calls[p.split] * program_flops(p) * seeds / p.seeds
        for p in scoring_programs(t)
        if p.seeds == min(SCORE_CHUNK, seeds)  # one chunk size, scaled to all
    )


def notebook_programs(
    runs: Sequence[Training],
) -> tuple[dict[Program, float], list[Program]]:
    """A notebook's training programs, with their expected steps, and scoring programs.

    Of the runs the notebook trains itself (``trained_in``), as
    :func:`make_plan` compiles them and :func:`target_time` prices them.
    """
    mine = [t for t in runs if t.trained_in == t.notebook]
    steps: dict[Program, float] = {}
    for t in mine:
        for program, count in training_programs(t).items():
            steps[program] = steps.get(program, 0.0) + count
    scoring = {p for t in mine for p in scoring_programs(t)}
    return steps, sorted(scoring, key=Program.describe)


@dataclasses.dataclass(frozen=True)
class TargetTime:
    """One notebook's time on a :class:`Target`, in its three parts."""

    train: float
    evaluate: float
    compile: float

    @property
    def total(self) -> float:
        """All three."""
        return self.train + self.evaluate + self.compile


def target_time(
    runs: Sequence[Training],
    train: dict[Program, float],
    score: Sequence[Program],
    device: Target,
) -> TargetTime:
    """A notebook's training, evaluation and compiles priced on ``device``.

    Compiles: each run's training shapes (a run's learning rate and loss
    weights are constants of its step, so two runs never share one) and
    the distinct scoring programs (shared by every run of one network).
    """
    mine = [t for t in runs if t.trained_in == t.notebook]
    compiles = sum(len(training_programs(t)) for t in mine) + len(score)
    return TargetTime(
        train=device.seconds(sum(n * program_flops(p) for p, n in train.items())),
        evaluate=device.seconds(sum(evaluation_flops(t) for t in mine)),
        compile=device.compile_seconds * compiles,
    )


# --------------------------------------------------------------------------- #
# What a profile decides: the cpu run's decidable_at against its sizes.
# --------------------------------------------------------------------------- #

_SEEDS_BY_STEPS = re.compile(r"(\d+) seeds x (\d+) steps")


@dataclasses.dataclass(frozen=True)
class RowNeed:
    """One undecided paper-vs-ours row and whether a profile's sizes reach it.

    ``decides``: True or False when ``asked`` is seeds x steps; None when it
    is a condition judged on the run itself (a plateau, a bias that moves).
    """

    notebook: str
    claim: str
    asked: str
    planned: str
    decides: bool | None


def row_needs(profile: Profile, results: Path | None = None) -> list[RowNeed]:
    """The cpu run's undecided rows, each against ``profile``'s sizes.

    Only the rows of the notebooks ``profile`` runs (``Profile.notebooks``).

    ``results``: the folder of the cpu run's ``paper_vs_ours_*.csv`` (default:
    the committed ``results/``); a missing one gives no rows.
    """
    folder = results or profile_sizes.output_dirs(profile_sizes.DEFAULT_PROFILE).results
    runs = set(profile.notebooks)  # a profile that runs some notebooks: theirs
    judged = {
        (c.notebook, c.claim): c
        for c in claims.CLAIMS
        if not runs or c.notebook in runs
    }
    found = []
    for path in sorted(folder.glob("paper_vs_ours_*.csv")):
        for row in read_table(path):
            claim = judged.get((path.stem.rsplit("_", 1)[-1], row["claim"]))
            asked = row.get("decidable_at", "")
            if not asked or claim is None or claim.trained is None:
                continue
            sizes = paper.trained_sizes(profile, claim.trained)
            planned = f"{sizes.seeds} seeds x {sizes.steps} steps"
            match = _SEEDS_BY_STEPS.match(asked)
            decides = None
            if match:
                seeds, steps = (int(g) for g in match.groups())
                decides = sizes.seeds >= seeds and sizes.steps >= steps
            found.append(RowNeed(claim.notebook, claim.claim, asked, planned, decides))
    return found


# --------------------------------------------------------------------------- #
# The plan.
# --------------------------------------------------------------------------- #


@dataclasses.dataclass(frozen=True)
class ProgramReport:
    """One distinct program's memory (at its seeds and per seed) and step time."""

    program: Program
    peak_bytes: int
    per_seed_bytes: float
    fixed_bytes: float
    seconds: float  # per call at the program's seeds (nan: not timed)

    def seeds_that_fit(self, limit: int) -> int:
        """How many seeds fit in ``limit`` bytes (memory affine in seeds)."""
        if self.per_seed_bytes <= 0:
            return self.program.seeds if self.peak_bytes <= limit else 0
        return max(0, int((limit - self.fixed_bytes) // self.per_seed_bytes))


def _work(program: Program) -> int:
    """A step's work relative to its shape: the pair tensors, ``N^2`` per step."""
    return program.nodes**2 * program.steps


def representatives(programs: Iterable[Program]) -> dict[Program, Program]:
    """Each program -> the largest shape of the same step and seeds.

    Buffers grow with the padded nodes and steps, so the largest shape holds
    a step program's peak; it alone is analysed and timed, and the other
    shapes' time is scaled by :func:`_work`.
    """
    groups: dict[tuple, list[Program]] = {}
    for p in programs:
        groups.setdefault((p.kind, p.config, p.seeds, p.graphs, p.split), []).append(p)
    return {p: max(g, key=_work) for g in groups.values() for p in g}


def _needs_one_seed(program: Program, timed: bool) -> bool:
    """Whether the one-seed twin is compiled: timing under map, or no fit."""
    return program.seeds > 1 and (
        (timed and program.kind == "train" and program.config.seed_strategy == "map")
        or analysed_bytes(program) > device_memory()
    )


def program_report(program: Program, limit: int, timed: bool) -> ProgramReport:
    """XLA's memory of ``program`` (affine in seeds) and its measured step time.

    Under ``lax.map`` (a CPU's seed strategy) the seeds run one after
    another inside the step, so one seed's time, measured, is multiplied by
    the seeds.  Under ``vmap`` (an accelerator's) the real program is timed
    itself, or at the seeds that fit, scaled by the device-fulls needed.
    Timed after one warm-up call: compilation, data sampling (overlapped
    with the step in the real loop) and evaluation are not in it.  Memory is
    affine in the seeds (the state grows per seed, the rest does not): the
    line through the one-seed twin's analysis says how many seeds fit.
    """
    peak = analysed_bytes(program)
    slope, fixed = 0.0, float(peak)
    if _needs_one_seed(program, timed):
        one = analysed_bytes(program.with_seeds(1))
        slope = (peak - one) / (program.seeds - 1)
        fixed = one - slope
    report = ProgramReport(program, peak, slope, fixed, float("nan"))
    if not timed or program.kind != "train":
        return report
    if program.config.seed_strategy == "map":
        seconds = step_seconds(program.with_seeds(1)) * program.seeds
    else:
        fit = min(program.seeds, max(1, report.seeds_that_fit(limit)))
        seconds = step_seconds(program.with_seeds(fit)) * program.seeds / fit
    return dataclasses.replace(report, seconds=seconds)


def _compile_all(programs: Sequence[Program], progress: bool) -> None:
    """Compile ``programs`` two at a time: XLA compiles without the GIL."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in tqdm(
            pool.map(compiled, programs),
            total=len(programs),
            desc="plan: compiling programs",
            disable=not progress,
            unit="program",
        ):
            pass


@dataclasses.dataclass(frozen=True)
class NotebookPlan:
    """One notebook's row of the plan."""

    notebook: str
    name: str
    runs: int
    runs_trained: int
    seed_steps: int
    train_programs: int
    score_programs: int
    peak_bytes: int
    peak_program: str
    fits: bool
    seeds_that_fit: int | None
    seconds: float
    not_counted: str
    priced: TargetTime | None = None


@dataclasses.dataclass(frozen=True)
class Plan:
    """The plan of one profile on this device."""

    profile: str
    device: str
    memory_bytes: int
    notebooks: list[NotebookPlan]
    programs: list[ProgramReport]
    warnings: list[str]
    elapsed: float
    target: Target | None = None
    needs: list[RowNeed] = dataclasses.field(default_factory=list)

    @property
    def seconds(self) -> float:
        """The priced or measured time of every notebook together."""
        return sum(n.seconds for n in self.notebooks if np.isfinite(n.seconds))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (``nar-gap plan --json``)."""
        return {
            "profile": self.profile,
            "device": self.device,
            "target": dataclasses.asdict(self.target) if self.target else None,
            "seconds": self.seconds,
            "needs": [dataclasses.asdict(n) for n in self.needs],
            "memory_bytes": self.memory_bytes,
            "notebooks": [dataclasses.asdict(n) for n in self.notebooks],
            "programs": [
                {
                    "program": r.program.describe(),
                    "peak_bytes": r.peak_bytes,
                    "per_seed_bytes": r.per_seed_bytes,
                    "seconds_per_call": r.seconds,
                }
                for r in self.programs
            ],
            "warnings": self.warnings,
            "elapsed_seconds": self.elapsed,
        }


def _largest_scoring(programs: Iterable[Program]) -> Program | None:
    """The scoring program of the largest evaluation batch (then most seeds)."""
    return max(
        programs,
        key=lambda p: (p.nodes**2 * p.steps * p.graphs, p.seeds),
        default=None,
    )


def make_plan(
    profile: Profile,
    notebooks: Sequence[str] | None = None,
    *,
    root: Path | None = None,
    timed: bool = True,
    progress: bool = True,
    device: Target | None = None,
) -> Plan:
    """Seed-steps, programs, XLA's memory and a time per notebook.

    ``device``: price the time on that accelerator (:class:`Target`) instead
    of measuring it here; the memory column is then against its memory.
    """
    started = time.perf_counter()
    timed = timed and device is None
    chosen = list(notebooks or profile.notebooks or NOTEBOOKS)
    unknown = [n for n in chosen if n not in NOTEBOOKS]
    if unknown:
        raise ValueError(
            f"unknown notebook {unknown[0]!r}; known: {', '.join(NOTEBOOKS)}"
        )
    runs = inventory(profile, root)
    limit = device.memory_bytes if device else device_memory()
    train_of: dict[str, dict[Program, float]] = {}
    score_of: dict[str, list[Program]] = {}
    for number in chosen:
        train_of[number], score_of[number] = notebook_programs(runs[number])
    largest = [_largest_scoring(score_of[n]) for n in chosen]
    every = {p for n in chosen for p in train_of[n]}
    every |= {p for p in largest if p is not None}
    rep = representatives(every)
    analysed = sorted(set(rep.values()), key=Program.describe)
    _compile_all(analysed, progress)
    _compile_all(
        [p.with_seeds(1) for p in analysed if _needs_one_seed(p, timed)], progress
    )
    reports: dict[Program, ProgramReport] = {}
    for program in tqdm(
        analysed, desc="plan: timing programs", disable=not progress, unit="program"
    ):
        reports[program] = program_report(program, limit, timed)
    rows, warnings = [], []
    for number in chosen:
        row, warned = _notebook_row(
            number,
            profile,
            runs[number],
            train_of[number],
            score_of[number],
            {p: reports[r] for p, r in rep.items()},
            limit,
        )
        if device is not None:
            priced = target_time(
                runs[number], train_of[number], score_of[number], device
            )
            row = dataclasses.replace(row, seconds=priced.total, priced=priced)
        rows.append(row)
        warnings += warned
    here = jax.devices()[0]
    return Plan(
        profile=profile.name,
        device=device.device if device else f"{here.platform}: {here.device_kind}",
        memory_bytes=limit,
        notebooks=rows,
        programs=[reports[p] for p in sorted(reports, key=Program.describe)],
        warnings=warnings,
        elapsed=time.perf_counter() - started,
        target=device,
        needs=row_needs(profile),
    )


def _notebook_row(
    number: str,
    profile: Profile,
    runs: list[Training],
    train: dict[Program, float],
    score: list[Program],
    reports: dict[Program, ProgramReport],
    limit: int,
) -> tuple[NotebookPlan, list[str]]:
    largest = _largest_scoring(score)
    chosen = [*train, *([largest] if largest else [])]
    analysed = list({id(r): r for r in (reports[p] for p in chosen)}.values())
    worst = max(analysed, key=lambda r: r.peak_bytes, default=None)
    warnings = []
    for report in analysed:
        if report.peak_bytes > limit:
            warnings.append(
                f"{number}: {report.program.describe()} needs "
                f"{format_bytes(report.peak_bytes)}, more than the device's "
                f"{format_bytes(limit)}; {report.seeds_that_fit(limit)} seeds per "
                "device fit"
            )
    fits = all(r.peak_bytes <= limit for r in analysed)
    seconds = sum(
        count * reports[p].seconds * _work(p) / _work(reports[p].program)
        for p, count in train.items()
    )
    note = NOT_COUNTED[number].format(grid=profile.landscape_points**2)
    return (
        NotebookPlan(
            notebook=number,
            name=NOTEBOOKS[number],
            runs=len(runs),
            runs_trained=sum(t.trained_in == number for t in runs),
            seed_steps=sum(t.seed_steps for t in runs),
            train_programs=len(train),
            score_programs=len(score),
            peak_bytes=worst.peak_bytes if worst else 0,
            peak_program=worst.program.describe() if worst else "",
            fits=fits,
            seeds_that_fit=None
            if fits or worst is None
            else min(r.seeds_that_fit(limit) for r in analysed),
            seconds=seconds,
            not_counted=note,
        ),
        warnings,
    )


def format_bytes(count: float) -> str:
    """``count`` bytes in the largest binary unit that keeps it >= 1."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def format_seconds(seconds: float) -> str:
    """A duration for the table: s, min or h; ``-`` when not measured."""
    if not np.isfinite(seconds):
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _time_lines(plan: Plan) -> list[str]:
    """What the time column is, and, priced, its parts and the job's budget."""
    if plan.target is None:
        return [
            "runs: trained here / used; programs: training + scoring; peak: XLA's "
            "memory analysis of the largest; time: measured steps scaled, "
            "compilation and evaluation excluded"
        ]
    device = plan.target
    parts = [n.priced for n in plan.notebooks if n.priced is not None]
    fits = plan.seconds <= JOB_BUDGET_SECONDS
    return [
        "runs: trained here / used; programs: training + scoring; peak: XLA's "
        "memory analysis of the largest",
        f"time: priced for {device.name}, not measured: FLOPs at "
        f"{device.utilisation:.1%} of its {device.peak_flops / 1e12:g} TFLOP/s "
        f"float32 peak, evaluation along training included, "
        f"{device.compile_seconds:g} s per compiled program (both measured on "
        "an H200, the utilisation in the gpu profile's job: see "
        "nar_gap.paper.tools.plan.Target)",
        f"of which training {sum(p.train for p in parts):.0f} s, evaluation "
        f"{sum(p.evaluate for p in parts):.0f} s, compiles "
        f"{sum(p.compile for p in parts):.0f} s: {plan.seconds:.0f} s in all",
        f"within one job's {JOB_BUDGET_SECONDS} s: {'yes' if fits else 'no'}",
    ]


def _needs_lines(plan: Plan) -> list[str]:
    """The cpu run's undecided rows, and whether this profile's sizes reach them."""
    if not plan.needs:
        return []
    word = {True: "decides", False: "short", None: "judged on the run"}
    lines = [f"rows the cpu run left undecided, against the {plan.profile} sizes:"]
    for need in plan.needs:
        lines.append(
            f"  {need.notebook} {need.claim[:60]}: asked {need.asked}; "
            f"{plan.profile} trains {need.planned}: {word[need.decides]}"
        )
    return lines


def render(plan: Plan) -> str:
    """The plan as a table, its time, what it decides and what it leaves out."""
    lines = [
        f"plan for the {plan.profile} profile on {plan.device} "
        f"({format_bytes(plan.memory_bytes)})",
        f"{'notebook':<20} {'runs':>9} {'seed-steps':>13} {'programs':>14} "
        f"{'peak memory':>12} {'fits':>5} {'time':>8}",
    ]
    for n in plan.notebooks:
        runs = f"{n.runs_trained}/{n.runs}"
        programs = f"{n.train_programs} + {n.score_programs}"
        fits = "yes" if n.fits else f"no ({n.seeds_that_fit} seeds)"
        lines.append(
            f"{n.name:<20} {runs:>9} {n.seed_steps:>13,} {programs:>14} "
            f"{format_bytes(n.peak_bytes):>12} {fits:>5} "
            f"{format_seconds(n.seconds):>8}"
        )
    seed_steps = sum(n.seed_steps for n in plan.notebooks)
    lines.append(
        f"{'total':<20} {'':>9} {seed_steps:>13,} {'':>14} {'':>12} {'':>5} "
        f"{format_seconds(plan.seconds):>8}"
    )
    lines += _time_lines(plan)
    lines += [f"warning: {w}" for w in plan.warnings]
    lines += _needs_lines(plan)
    lines += [
        f"not counted, {n.notebook}: {n.not_counted}"
        for n in plan.notebooks
        if plan.target is None or "priced with --target" not in n.not_counted
    ]
    lines.append(f"planned in {plan.elapsed:.0f} s")
    return "\n".join(lines)
