"""A run directory: its files, checkpoints, what a rerun will do, and loading it back.

Layout of ``<out>/``: ``config.json`` (the :class:`TrainConfig`),
``initial.json`` (the fingerprint of shared starting parameters, if any),
``metrics.csv`` / ``metrics.json`` (one row per seed, with provenance),
``validation.csv`` (every validation) and
``seed_<k>/{checkpoint.msgpack, params.msgpack, metrics.json}`` (the
checkpoint holds the last step's parameters, ``params.msgpack`` the selected
ones), with ``seed_<k>/selection_reset.json`` where :func:`continue_from`
restarted the seed's selection.  Every file
is written atomically, so an interrupted run leaves the last checkpoint, and
a rerun resumes from it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import numpy as np

from nar_gap.model.config import NetworkConfig
from nar_gap.model.network import TEMPLATE_NODES, param_shapes
from nar_gap.model.seeds import stack_trees
from nar_gap.system import files
from nar_gap.system.provenance import provenance
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.sampling import sample_batch
from nar_gap.training import hosts
from nar_gap.training.config import TrainConfig

CHECKPOINT_FILE = "checkpoint.msgpack"


PARAMS_FILE = "params.msgpack"


INITIAL_FILE = "initial.json"


CONFIG_FILE = "config.json"

# Every seed's final metrics, with provenance: the run's (one row per seed, and
# its JSON with the configuration) and each seed's own JSON.
METRICS_TABLE = "metrics.csv"
METRICS_FILE = "metrics.json"

# Written by continue_from(reselect=True) into a copied seed's directory: the
# step after which its selection started again.
SELECTION_RESET_FILE = "selection_reset.json"

# The best validation score of a seed nothing was selected for yet: below every
# score (scores lie in [0, 1]), so the first finite validation is selected.
NO_SCORE = -1.0

# What load_run can read: each seed's selected parameters (params.msgpack) or
# its last step's (the checkpoint's).
PARAMETERS = ("selected", "final")

# Every validation of every seed: one row per (seed, step), with the training
# loss of that step; what justifies a profile's step count.
VALIDATION_FILE = "validation.csv"
VALIDATION_COLUMNS = ("seed", "step", "val_score", "train_loss")
# Held while the history is read, changed and written back: the processes of
# one run (nar_gap.training.hosts) each add their own seeds' rows to it.
VALIDATION_LOCK = ".validation.lock"


def read_validation(out_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The validation history of a run (``[]`` before its first validation)."""
    path = Path(out_dir) / VALIDATION_FILE
    return read_validation_table(path) if path.exists() else []


def read_validation_table(path: str | os.PathLike) -> list[dict[str, Any]]:
    """A validation history's rows, typed: a run's, or a results copy of one."""
    return [
        {
            "seed": int(row["seed"]),
            "step": int(row["step"]),
            "val_score": files.float_cell(row["val_score"]),
            "train_loss": files.float_cell(row["train_loss"]),  # NaN at step 0
        }
        for row in files.read_table(path)
    ]


def record_validation(
    out_dir: Path,
    seeds: Sequence[int],
    step: int,
    scores: np.ndarray,
    losses: np.ndarray,
) -> None:
    """Add one validation of ``seeds`` at ``step`` to the history (atomically).

    Rows of these seeds at ``step`` or later are dropped first: they were
    written before an interruption that the run resumed from an earlier
    checkpoint, and the resumed run computes them again (the same numbers).
    Other seeds' rows are kept, also those another process of the same run
    adds meanwhile (the read and the write are one step under a lock).
    """
    chosen = set(int(s) for s in seeds)
    new = [
        {
            "seed": int(seed),
            "step": int(step),
            "val_score": float(score),
            "train_loss": float(loss),
        }
        for seed, score, loss in zip(seeds, scores, losses, strict=True)
    ]
    with files.exclusive(out_dir, name=VALIDATION_LOCK):
        kept = [
            r
            for r in read_validation(out_dir)
            if r["seed"] not in chosen or r["step"] < step
        ]
        _write_validation(Path(out_dir), kept + new)


def _write_validation(out_dir: Path, rows: Sequence[dict[str, Any]]) -> None:
    """The whole history, in (step, seed) order, written atomically."""
    ordered = sorted(rows, key=lambda r: (r["step"], r["seed"]))
    files.write_csv_atomic(out_dir / VALIDATION_FILE, ordered, VALIDATION_COLUMNS)


class CheckpointError(ValueError):
    """A checkpoint or run directory cannot be used (corrupt, or another config)."""


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns: per-seed metrics and the best parameters."""

    config: TrainConfig
    metrics: list[dict[str, Any]]
    params: Any  # stacked parameters (``parameters``), seed axis first
    out_dir: Path | None
    plan: ResumePlan | None = None  # what this call found and did
    # The padded (nodes, steps) shapes this call trained on, and how many steps
    # each: one compile of the train step per shape.
    shapes: dict[tuple[int, int], int] = dataclasses.field(default_factory=dict)
    # Which parameters ``params`` holds: "selected" (by config.selection, what
    # the metrics' test scores are of) or "final" (the last step's).
    parameters: str = "selected"


def seed_dir(out_dir: Path, seed: int) -> Path:
    """The directory of one seed's files."""
    return out_dir / f"seed_{seed}"


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Write one seed's state atomically (msgpack)."""
    files.write_bytes_atomic(path, flax.serialization.to_bytes(state))


def load_checkpoint(path: Path, target: dict[str, Any]) -> dict[str, Any]:
    """One seed's state restored into ``target``'s structure, or a clear error."""
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
        """Whether every seed already reached the target."""
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
        seed: 0
        if out is None
        else _checkpoint_step(seed_dir(out, seed) / CHECKPOINT_FILE)
        for seed in config.seeds
    }
    return ResumePlan(steps, config.steps)


def load_params(path: str | os.PathLike, config: NetworkConfig, template: Batch) -> Any:
    """Parameters saved by :func:`train` (``seed_<k>/params.msgpack``)."""
    target = param_shapes(config, template)
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


def fingerprint(params: Any) -> str:
    """A hash of a parameter tree's structure and values."""
    digest = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        digest.update(jax.tree_util.keystr(path).encode())
        digest.update(np.ascontiguousarray(np.asarray(leaf, np.float32)).tobytes())
    return digest.hexdigest()


def check_initial(out: Path, digest: str) -> None:
    """Refuse a directory that started from other initial parameters."""
    path = out / INITIAL_FILE
    if not path.exists():
        return
    previous = files.read_json(path).get("initial_params", "")
    if previous != digest:
        raise CheckpointError(
            f"{out} holds a run that started from other initial parameters; "
            "choose another output directory"
        )


def check_tree(given: Any, expected: Any) -> None:
    """Refuse initial parameters that do not fit the network's tree."""
    shapes = lambda tree: jax.tree_util.tree_map(np.shape, tree)  # noqa: E731
    if jax.tree_util.tree_structure(given) != jax.tree_util.tree_structure(
        expected
    ) or shapes(given) != shapes(expected):
        raise ValueError(
            "initial_params do not fit this network: build them for the same "
            "NetworkConfig (compiled models: use model.config as the network)"
        )


def check_run_dir(out: Path, config: TrainConfig) -> None:
    """Refuse a directory holding another configuration, naming what differs."""
    path = out / CONFIG_FILE
    if not path.exists():
        return
    try:
        previous = TrainConfig.from_dict(files.read_json(path))
    except Exception as error:
        raise CheckpointError(f"{path} is not a nar_gap run config ({error})") from None
    same = dataclasses.replace(
        previous,
        seeds=config.seeds,
        steps=config.steps,
        seed_strategy=config.seed_strategy,
    )
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


def _checkpoint_params(path: Path, target: Any, at_step: int | None = None) -> Any:
    """The current parameters in one checkpoint (at ``at_step``, if given)."""
    try:
        state = flax.serialization.msgpack_restore(path.read_bytes())
        params = flax.serialization.from_state_dict(target, state["params"])
        step = int(state["step"])
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {path}") from None
    except Exception as error:
        raise CheckpointError(
            f"checkpoint {path} is corrupt or from another model "
            f"({type(error).__name__})"
        ) from None
    if at_step is not None and step != at_step:
        raise CheckpointError(
            f"checkpoint {path} is at step {step}, not the run's last step "
            f"{at_step}: train the run to the end first"
        )
    return params


def template_batch(network: NetworkConfig) -> Batch:
    """A one-graph batch whose shapes fit ``network``'s parameter tree.

    A network with the fork's size-locked forms has parameters with one entry
    per node and refuses any other size, so its template has
    ``fork_num_nodes`` nodes.
    """
    nodes = network.fork_num_nodes if network.size_locked else TEMPLATE_NODES
    return sample_batch(network.algorithm, nodes, 1, 0)


def load_current_params(out_dir: str | os.PathLike) -> Any:
    """Every seed's *latest* parameters (from its checkpoint), stacked.

    :func:`load_run` returns the selected parameters; studies of how
    parameters move during training (stability) need the current ones, at
    whatever step each checkpoint holds.
    """
    out = Path(out_dir)
    config = load_run_config(out)
    template = template_batch(config.network)
    target = param_shapes(config.network, template)
    return stack_trees(
        [
            _checkpoint_params(seed_dir(out, seed) / CHECKPOINT_FILE, target)
            for seed in config.seeds
        ]
    )


def load_run_config(out_dir: str | os.PathLike) -> TrainConfig:
    """The :class:`TrainConfig` of a run directory, or a clear error."""
    out = Path(out_dir)
    if not (out / CONFIG_FILE).exists():
        raise CheckpointError(
            f"{out} is not a nar_gap run directory (no {CONFIG_FILE})"
        )
    try:
        return TrainConfig.from_dict(files.read_json(out / CONFIG_FILE))
    except Exception as error:
        raise CheckpointError(f"{out / CONFIG_FILE} is unreadable ({error})") from None


def load_run(out_dir: str | os.PathLike, parameters: str = "selected") -> TrainResult:
    """Read a finished run back: config, per-seed metrics and stacked params.

    ``parameters``: ``"selected"`` (each seed's parameters under
    ``config.selection``, the ones its test score is of) or ``"final"`` (the
    parameters of its last step, from its checkpoint, which must be at
    ``config.steps``).  The metrics are the same either way: those of the
    selected parameters.
    """
    if parameters not in PARAMETERS:
        raise ValueError(f"parameters must be one of {PARAMETERS}, got {parameters!r}")
    out = Path(out_dir)
    config = load_run_config(out)
    template = template_batch(config.network)
    target = param_shapes(config.network, template)
    params, metrics = [], []
    for seed in config.seeds:
        directory = seed_dir(out, seed)
        if parameters == "final":
            checkpoint = directory / CHECKPOINT_FILE
            params.append(_checkpoint_params(checkpoint, target, config.steps))
        else:
            params.append(
                load_params(directory / PARAMS_FILE, config.network, template)
            )
        metrics.append(files.read_json(directory / METRICS_FILE))
    return TrainResult(
        config=config,
        metrics=metrics,
        params=stack_trees(params),
        out_dir=out,
        parameters=parameters,
    )


def selection_reset_step(out_dir: str | os.PathLike, seed: int) -> int:
    """The step after which a seed's selection started again (0: never reset)."""
    path = seed_dir(Path(out_dir), seed) / SELECTION_RESET_FILE
    return int(files.read_json(path)["step"]) if path.exists() else 0


@dataclasses.dataclass(frozen=True)
class Start:
    """A trained run another configuration continues (:func:`continue_from`).

    ``reselect``: the two select by different rules, so the copied seeds'
    selection starts again at the copied step.
    """

    run: Path
    reselect: bool


def shorter_run(
    config: TrainConfig, trained: Sequence[tuple[TrainConfig, Path]]
) -> Start | None:
    """The longest run already trained that ``config`` continues, if any.

    ``weight 10, 300 steps`` is ``weight 10, 150 steps`` trained on: training
    resumes exactly from a checkpoint, so the longer run continues the
    shorter one (:func:`continue_from`) instead of computing its first steps
    again.  A run may also hold more seeds (notebook 02's baseline, of which
    a study trains the first), and select by another rule: its selection is
    then reset at the copied step, so a ``final`` study of the baseline's
    own steps is the baseline's last parameters, trained once, not twice.
    Of two as long, one that selects by ``config``'s rule (an exact straight
    run) comes first.  ``trained``: the configurations trained so far, with
    their runs.
    """
    found = []
    for previous, out in trained:
        fewer_seeds = set(config.seeds) <= set(previous.seeds)
        if previous.steps > config.steps or not fewer_seeds:
            continue
        same = dataclasses.replace(
            previous,
            steps=config.steps,
            seeds=config.seeds,
            seed_strategy=config.seed_strategy,
            selection=config.selection,
        )
        if same != config or previous == config:
            continue
        found.append(
            (previous.steps, Start(Path(out), previous.selection != config.selection))
        )
    if not found:
        return None
    return max(found, key=lambda f: (f[0], not f[1].reselect))[1]


def continue_from(
    shorter: str | os.PathLike,
    config: TrainConfig,
    out: Path,
    *,
    reselect: bool = False,
) -> list[int]:
    """Start ``out`` from the checkpoints of a shorter run of the same configuration.

    Training resumes exactly from a checkpoint (a seed's data at step t
    depends on its seed and t alone), so each copied seed trains on from the
    shorter run's last step as if that run had been asked for
    ``config.steps``: the longer run is the shorter one continued, and its
    first steps are not computed again.  Only ``steps`` and ``seeds`` may
    differ between the two configurations, and the shorter run must have
    started from random initial parameters, as ``out`` will.  Seeds of
    ``config`` that ``out`` already holds, or that ``shorter`` lacks, are
    left alone.  The shorter run's validation rows of the copied seeds come
    along, so ``out``'s history starts where the shorter one's does.

    ``reselect``: with False (default) selection goes on over the whole
    trajectory, so the result is exactly that of one run of ``config.steps``
    (a straight run, resumed).  But under ``first_best`` a seed whose shorter
    run already validated at the ceiling (BFS at 1.0) keeps that early step
    for good: "trained longer" would not change the parameters measured.
    With True, each copied seed's selection starts again after the copied
    step: its selected parameters become the copied current ones with no
    score (:data:`NO_SCORE`), so the first finite
    validation after that step is selected and the rule runs on from there.
    The copied step is not validated again: its score is in the copied
    history, and as a candidate under ``first_best`` it would win every tie
    and keep the long run where it started.  The step is recorded in the
    seed's ``selection_reset.json`` and its metrics'
    ``selection_reset_step``.  Since nothing of the shorter run's selection
    is kept, ``config`` may select by another rule (its ``selection``): a
    ``final`` run of the same steps started from a ``first_best`` one has
    that run's last parameters, with no step trained again.

    Returns the seeds copied.
    """
    source = Path(shorter)
    if not (source / CONFIG_FILE).exists():
        raise CheckpointError(f"{source} holds no run to continue")
    previous = TrainConfig.from_dict(files.read_json(source / CONFIG_FILE))
    expected = _same_schedule_so_far(previous, config)
    if reselect:  # the copied selection is reset: its rule decides nothing here
        expected = dataclasses.replace(expected, selection=previous.selection)
    check_run_dir(source, expected)
    check_initial(source, "")
    if previous.steps > config.steps:
        raise CheckpointError(
            f"{source} trained {previous.steps} steps, more than the "
            f"{config.steps} asked for: nothing to continue"
        )
    with files.exclusive(out):
        return _copy_seeds(source, previous, config, out, reselect)


def _same_schedule_so_far(previous: TrainConfig, config: TrainConfig) -> TrainConfig:
    """``config`` with ``previous``'s supervision schedule, where they agree so far.

    A supervision schedule that changes only after the shorter run's last
    step (a drift run: the recipe's weight held to its end, then zero) gives
    the same first ``previous.steps`` steps, so those may be continued; any
    difference inside them leaves ``config`` as it is, and
    :func:`check_run_dir` names it.
    """
    agree = all(
        previous.supervision_scale(t) == config.supervision_scale(t)
        for t in range(previous.steps)
    )
    if not agree:
        return config
    return dataclasses.replace(
        config,
        supervision_until=previous.supervision_until,
        supervision_schedule=previous.supervision_schedule,
    )


def reset_selection(checkpoint: bytes) -> tuple[bytes, int]:
    """A checkpoint whose selection starts again at its step, and that step.

    The selected parameters become the current ones, with no score: what is
    kept if no later validation is finite.
    """
    state = flax.serialization.msgpack_restore(checkpoint)
    step = int(state["step"])
    state = {
        **state,
        "best_params": state["params"],
        "best_val": NO_SCORE,
        "best_step": step,
    }
    return flax.serialization.msgpack_serialize(state), step


def _copy_seeds(
    source: Path,
    previous: TrainConfig,
    config: TrainConfig,
    out: Path,
    reselect: bool,
) -> list[int]:
    copied = []
    for seed in config.seeds:
        start = seed_dir(source, seed) / CHECKPOINT_FILE
        target = seed_dir(out, seed) / CHECKPOINT_FILE
        if seed in previous.seeds and start.exists() and not target.exists():
            checkpoint = start.read_bytes()
            if reselect:
                checkpoint, step = reset_selection(checkpoint)
                files.write_json_atomic(
                    seed_dir(out, seed) / SELECTION_RESET_FILE,
                    {"step": step, "from": str(source)},
                )
            files.write_bytes_atomic(target, checkpoint)
            copied.append(seed)
    history = [r for r in read_validation(source) if r["seed"] in copied]
    if history:
        kept = [r for r in read_validation(out) if r["seed"] not in copied]
        _write_validation(out, kept + history)
    return copied


# --- What a run leaves: claimed, its seeds' results, its tables, merged. ---


def prepare_run_dir(config: TrainConfig, out: Path, initial_digest: str) -> None:
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


def write_seed_results(
    config: TrainConfig,
    out: Path,
    seeds: Sequence[int],
    states: list[dict[str, Any]],
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


def write_run_tables(
    config: TrainConfig, out: Path, rows: list[dict], details: list[dict]
) -> None:
    """``metrics.csv`` and ``metrics.json``: every seed of the run, in its order."""
    files.write_csv_atomic(out / METRICS_TABLE, rows)
    files.write_json_atomic(
        out / METRICS_FILE,
        {"config": config.to_dict(), **provenance(), "seeds": details},
    )


def _saved_details(out: Path, seed: int) -> dict:
    """One seed's metrics as training computed them, read back from its file.

    JSON gives back each float exactly, and NaN as None, which
    :func:`~nar_gap.system.files.to_jsonable` writes as NaN was: tables
    merged from these files are the bytes one process would have written.
    """
    saved = files.read_json(seed_dir(out, seed) / METRICS_FILE)
    return {key: value for key, value in saved.items() if key != "config"}


def merged_run(
    config: TrainConfig,
    out: Path,
    plan: ResumePlan,
    shapes: dict,
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
        write_run_tables(config, out, rows, details)
    hosts.barrier("merged")
    run = load_run(out)
    metrics = [{k: v for k, v in m.items() if k != "config"} for m in run.metrics]
    return dataclasses.replace(
        run,
        config=config,
        metrics=metrics,
        plan=plan,
        shapes=shapes,
    )


def finished_run(
    config: TrainConfig, out: Path | None, plan: ResumePlan
) -> TrainResult | None:
    """The saved results of a run that already finished ``config``, else None.

    Every notebook that reuses notebook 02's baselines calls ``train`` on
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
