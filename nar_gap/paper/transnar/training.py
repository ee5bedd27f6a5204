"""Training one TransNAR seed on CLRS-Text, resumable bit for bit.

Every step's data is a pure function of ``(seed, step)``: a graph size drawn
from the training sizes, a fresh dm-clrs sample of ``batch_size`` graphs at
that size (text and graph of the same samples), and the randomised positions.
So the three models of one seed -- the Transformer alone, with a trained NAR,
with the compiled NAR -- see the same examples in the same order, and a run
resumed from its checkpoint takes exactly the steps it would have taken.

Optimiser: global-norm clipping, then Adam with a linear warm-up and a cosine
decay (a choice: TransNAR fine-tunes a pre-trained Chinchilla and does not
give its schedule).  The loss is the answer's next-token cross-entropy.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import optax
from tqdm import tqdm

from nar_gap.paper.transnar.decode import answer_loss
from nar_gap.paper.transnar.model import (
    TransformerConfig,
    draw_positions,
    init_params,
)
from nar_gap.paper.transnar.tokenizer import PAD, Sequences, encode_examples
from nar_gap.system import files
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.clrs_text import TEXT_ALGORITHMS, TextBatch, text_batch
from nar_gap.training.run import reading_results, training_refused

NarFn = Callable[[Batch], tuple[np.ndarray, np.ndarray]]
CHECKPOINT_FILE = "checkpoint.msgpack"
PARAMS_FILE = "params.msgpack"
CONFIG_FILE = "config.json"
LOSS_FILE = "training_loss.csv"

_DATA_STREAM = 0x74657874  # "text": keeps the data stream apart from others


@dataclasses.dataclass(frozen=True)
class TextTrainConfig:
    """One TransNAR (or Transformer-alone) training run of one seed.

    Attributes:
      algorithm: ``bfs`` or ``bellman_ford``.
      model: the architecture (``nar_width`` 0: the Transformer alone).
      nar: which NAR the embeddings come from (a label for the run's
        directory and tables: ``none``, ``trained``, ``compiled``).
      seed: initialisation and data seed.
      steps: optimiser steps.
      batch_size: examples per step (one graph size per step).
      train_sizes: graph sizes the steps draw from.
      learning_rate: Adam's peak step size.
      warmup_steps: linear warm-up from 0.
      grad_clip_norm: global-norm clipping.
      checkpoint_every: steps between checkpoints.
      token_bucket: sequences are padded to a multiple of this (few shapes).
      label_range: None: dm-clrs's text, nodes named by index; else nodes
        carry sorted random labels below it (:mod:`nar_gap.tasks.clrs_text`).
      position_windows: draw each sequence's positions from a random window
        (every density) rather than the whole range, as TransNAR does
        (:func:`~nar_gap.paper.transnar.model.random_positions`); scoring
        always draws from the whole range.
    """

    algorithm: str
    model: TransformerConfig
    nar: str
    seed: int
    steps: int
    batch_size: int = 16
    train_sizes: tuple[int, ...] = (4, 5)
    learning_rate: float = 1e-3
    warmup_steps: int = 50
    grad_clip_norm: float = 1.0
    checkpoint_every: int = 100
    token_bucket: int = 32
    label_range: int | None = None
    position_windows: bool = False

    def __post_init__(self) -> None:
        if self.algorithm not in TEXT_ALGORITHMS:
            raise ValueError(
                f"TransNAR trains on {', '.join(TEXT_ALGORITHMS)}, not "
                f"{self.algorithm!r}"
            )
        if self.model.cross_attention != (self.nar != "none"):
            raise ValueError(
                f"nar={self.nar!r} needs nar_width "
                f"{'0' if self.nar == 'none' else '> 0'}, found {self.model.nar_width}"
            )
        if min(self.steps, self.batch_size, self.checkpoint_every) < 1:
            raise ValueError("steps, batch_size and checkpoint_every must be >= 1")
        if self.label_range is not None and self.label_range < max(self.train_sizes):
            raise ValueError(
                f"label_range {self.label_range} is below the largest training "
                f"size {max(self.train_sizes)}: its graphs have more nodes than labels"
            )

    def to_dict(self) -> dict[str, Any]:
        """The configuration as JSON-able values (what ``config.json`` holds)."""
        return files.to_jsonable(dataclasses.asdict(self))


def make_optimizer(config: TextTrainConfig) -> optax.GradientTransformation:
    """Clip, then Adam on a warm-up + cosine schedule."""
    schedule = optax.warmup_cosine_decay_schedule(
        0.0,
        config.learning_rate,
        min(config.warmup_steps, max(config.steps - 1, 1)),
        max(config.steps, 2),
        end_value=0.1 * config.learning_rate,
    )
    return optax.chain(
        optax.clip_by_global_norm(config.grad_clip_norm), optax.adam(schedule)
    )


@dataclasses.dataclass(frozen=True)
class StepData:
    """What one training step reads."""

    texts: TextBatch
    sequences: Sequences
    positions: np.ndarray


def _bucket(length: int, bucket: int) -> int:
    return -(-length // bucket) * bucket


def step_data(config: TextTrainConfig, step: int) -> StepData:
    """Step ``step``'s examples: a pure function of ``(config.seed, step)``."""
    rng = np.random.default_rng([config.seed, step, _DATA_STREAM])
    size = int(rng.choice(config.train_sizes))
    texts = text_batch(
        config.algorithm,
        size,
        config.batch_size,
        int(rng.integers(2**32)),
        label_range=config.label_range,
    )
    sequences = encode_examples(texts.prompts, texts.answers)
    longest = sequences.tokens.shape[1]
    padding = _bucket(longest, config.token_bucket) - longest
    sequences = dataclasses.replace(
        sequences,
        tokens=np.pad(sequences.tokens, ((0, 0), (0, padding)), constant_values=PAD),
    )
    positions = draw_positions(
        config.model,
        rng,
        sequences.lengths,
        sequences.tokens.shape[1],
        config.position_windows,
    )
    return StepData(texts, sequences, positions)


def _update(config: TextTrainConfig):
    """The jitted optimiser step of ``config``: one program for all its seeds.

    The seed decides the initial parameters and the data, not the step, so
    the cache is keyed without it (keyed with it, the step compiled once per
    seed: 18 compiles of notebook 08's smoke run, not 6), as
    :func:`nar_gap.training.step.make_train_step` keys its own.
    """
    return _update_of(dataclasses.replace(config, seed=0))


@functools.lru_cache(maxsize=8)
def _update_of(config: TextTrainConfig):
    optimizer = make_optimizer(config)

    def update(params, opt_state, tokens, positions, answer_start, lengths, nar, mask):
        def loss_of(p):
            return answer_loss(
                config.model, p, tokens, positions, answer_start, lengths, nar, mask
            )

        loss, grads = jax.value_and_grad(loss_of)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        finite = jnp.isfinite(loss) & jnp.all(
            jnp.array(
                [jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(params)]
            )
        )
        return params, opt_state, loss, finite

    return jax.jit(update)


def _fresh_state(config: TextTrainConfig) -> dict[str, Any]:
    params = init_params(config.model, config.seed)
    return {
        "params": params,
        "opt_state": make_optimizer(config).init(params),
        "step": 0,
        "losses": np.zeros(config.steps, dtype=np.float32),
    }


def _resume(config: TextTrainConfig, out: Path) -> dict[str, Any]:
    state = _fresh_state(config)
    checkpoint = out / CHECKPOINT_FILE
    if not checkpoint.exists():
        return state
    try:
        return flax.serialization.from_bytes(state, checkpoint.read_bytes())
    except Exception as error:  # msgpack and structure errors alike
        raise ValueError(
            f"checkpoint {checkpoint} is corrupt or from another model "
            f"({type(error).__name__}); delete it to train again"
        ) from None


def _check_config(config: TextTrainConfig, out: Path) -> None:
    path = out / CONFIG_FILE
    if path.exists():
        saved = json.loads(path.read_text())
        if saved != json.loads(json.dumps(config.to_dict())):
            raise ValueError(
                f"{out} holds a run of another configuration; use another directory"
            )
    else:
        files.write_json_atomic(path, config.to_dict())


def _save(out: Path, state: dict[str, Any]) -> None:
    files.write_bytes_atomic(out / CHECKPOINT_FILE, flax.serialization.to_bytes(state))


def train_text_model(
    config: TextTrainConfig,
    out_dir: str | os.PathLike,
    nar: NarFn | None = None,
    progress: bool = True,
    stop_at: int | None = None,
) -> Any:
    """Train (or resume, or read back) one seed; returns its final parameters.

    ``nar`` gives the frozen NAR's node embeddings and node mask for a batch
    of graphs (None for the Transformer alone).  ``stop_at`` stops after that
    many steps with a checkpoint (to test resuming).  A non-finite loss stops
    with a one-line error and keeps the last checkpoint.
    """
    final = Path(out_dir) / PARAMS_FILE
    if reading_results() and not final.exists():
        raise training_refused(
            f"TransNAR {config.algorithm} {config.nar} seed "
            f"{config.seed} (no finished run: {out_dir})"
        )
    out = files.ensure_dir(out_dir)
    _check_config(config, out)
    if final.exists():
        template = init_params(config.model, config.seed)
        return flax.serialization.from_bytes(template, final.read_bytes())
    state = _resume(config, out)
    update = _update(config)
    last = config.steps if stop_at is None else min(stop_at, config.steps)
    bar = tqdm(
        range(int(state["step"]), last),
        desc=f"{config.algorithm} {config.nar} seed {config.seed}",
        disable=not progress,
        leave=False,
    )
    params, opt_state, losses = state["params"], state["opt_state"], state["losses"]
    losses = np.array(losses)
    for step in bar:
        data = step_data(config, step)
        embeddings, mask = (None, None) if nar is None else nar(data.texts.graphs)
        params, opt_state, loss, finite = update(
            params,
            opt_state,
            data.sequences.tokens,
            data.positions,
            data.sequences.answer_start,
            data.sequences.lengths,
            embeddings,
            mask,
        )
        loss = float(loss)
        if not bool(finite):
            raise FloatingPointError(
                f"TransNAR {config.algorithm} {config.nar} seed {config.seed}: "
                f"non-finite loss or parameters at step {step + 1}; the last "
                "checkpoint is kept"
            )
        losses[step] = loss
        done = step + 1
        if done % config.checkpoint_every == 0 or done == last:
            _save(
                out,
                {"params": params, "opt_state": opt_state, "step": done,
                 "losses": losses},
            )  # fmt: skip
        bar.set_postfix(loss=f"{loss:.3f}")
    if last == config.steps:
        files.write_csv_atomic(
            out / LOSS_FILE,
            [{"step": s + 1, "loss": float(v)} for s, v in enumerate(losses)],
        )
        files.write_bytes_atomic(final, flax.serialization.to_bytes(params))
    return params


def training_losses(out_dir: str | os.PathLike) -> list[dict[str, str]]:
    """A finished run's loss at every step."""
    return files.read_table(Path(out_dir) / LOSS_FILE)


def text_run_dir(config: TextTrainConfig, runs: str | Path) -> Path:
    """Where ``config`` trains: ``<runs>/transnar/<one name per configuration>``."""
    text = json.dumps(config.to_dict(), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    name = f"{config.algorithm}_{config.nar}_seed{config.seed}_{digest}"
    return Path(runs) / "transnar" / name
