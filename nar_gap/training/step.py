"""One optimiser step for every seed at once: dm-clrs's optimiser, CLRS's loss, jitted.

Optimiser: dm-clrs's ``clip_by_global_norm -> scale_by_adam -> scale(-lr)``.
A step whose loss or gradient is not finite is skipped for that seed (its
parameters are kept) and reported, so one diverging seed never spoils the
others.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import optax

from nar_gap.model.config import NetworkConfig
from nar_gap.model.losses import total_loss
from nar_gap.model.network import training_outputs
from nar_gap.model.seeds import each_seed, seed_strategy_for
from nar_gap.tasks.batch import Batch
from nar_gap.training.config import TrainConfig
from nar_gap.training.supervision import (
    attention_kl,
    compiled_attention,
    compiled_state,
    state_mse,
)


def clipped_optimizer(
    learning_rate: float, grad_clip_norm: float, optimizer: str = "adam"
) -> optax.GradientTransformation:
    """dm-clrs BaselineModel's optimiser (clip, Adam, scale by -lr), or SGD.

    SGD keeps the clipping and the step size and drops Adam's per-parameter
    scaling (the stability controls: see ``TrainConfig.optimizer``).  The
    chain is flat, as checkpoints store its state; ``optax.adam`` nests the
    same two transformations, the same numbers in another state layout.
    """
    if optimizer == "adam" and grad_clip_norm == 0:
        return optax.adam(learning_rate)
    clip = [optax.clip_by_global_norm(grad_clip_norm)] if grad_clip_norm > 0 else []
    adam = [optax.scale_by_adam()] if optimizer == "adam" else []
    return optax.chain(*clip, *adam, optax.scale(-learning_rate))


@dataclasses.dataclass(frozen=True)
class StepSettings:
    """What a train step's program reads of a :class:`TrainConfig`, and no more.

    The rest of a configuration decides the data (sizes, families, seeds),
    the schedule (each step's supervision factor is an argument) or what is
    kept, not the program: two runs that differ only there share one jitted
    step, so a process traces and lowers it once (notebook 07's supervised
    recipe, its drift and its twin with families mixed in are one step).
    """

    network: NetworkConfig
    learning_rate: float
    optimizer: str
    grad_clip_norm: float
    l1_weight: float
    attention_weight: float
    state_weight: float
    seed_strategy: str

    @classmethod
    def of(cls, config: TrainConfig) -> StepSettings:
        """``config``'s settings, the seed strategy resolved for this machine."""
        read = {f.name: getattr(config, f.name) for f in dataclasses.fields(cls)}
        return cls(**read | {"seed_strategy": seed_strategy_for(config.seed_strategy)})


def make_optimizer(config: TrainConfig | StepSettings) -> optax.GradientTransformation:
    """``config``'s :func:`clipped_optimizer`."""
    return clipped_optimizer(
        config.learning_rate, config.grad_clip_norm, config.optimizer
    )


def step_key(seed: int, step: int) -> jax.Array:
    """The PRNG key of ``seed`` at ``step`` (dropout, teacher forcing)."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), step)


@jax.jit
def _step_keys(seeds: jax.Array, step: jax.Array) -> jax.Array:
    return jax.vmap(lambda seed: jax.random.fold_in(jax.random.PRNGKey(seed), step))(
        seeds
    )


def step_keys(seeds: Sequence[int], step: int) -> jax.Array:
    """:func:`step_key` of every seed, stacked, in one dispatch.

    The training loop asks for them every step: one eager ``PRNGKey`` and
    ``fold_in`` per seed were 256 dispatches a step at 128 seeds (20 ms a
    step on the 2-core CPU, against well under 1 ms so), and the first GPU
    job's device sat idle almost half of its training steps.  The bits are
    :func:`step_key`'s (a test).
    """
    return _step_keys(jnp.asarray(seeds, jnp.uint32), jnp.uint32(step))


def loss_fn(
    config: TrainConfig | StepSettings,
    params: Any,
    batch: Batch,
    key: jax.Array,
    supervision_scale: jax.Array | float = 1.0,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The CLRS training loss of one seed, plus the optional terms.

    The L1 penalty, and attention and hidden-state supervision against the
    compiled model (:mod:`~nar_gap.training.supervision`), their weights
    times ``supervision_scale`` (:meth:`TrainConfig.supervision_scale`: a
    traced value, so an annealed weight compiles once).
    """
    out = training_outputs(config.network, params, batch, key)
    loss, terms = total_loss(config.network, out, batch)
    if config.attention_weight > 0:
        target = compiled_attention(config.network.algorithm, batch)
        kl = attention_kl(out.attention, target, batch.lengths, batch.node_mask)
        terms = {**terms, "attention": kl}
        loss = loss + supervision_scale * config.attention_weight * kl
    if config.state_weight > 0:
        target = compiled_state(config.network.algorithm, batch)
        mse = state_mse(out.probed, target, batch.lengths, batch.node_mask)
        terms = {**terms, "state": mse}
        loss = loss + supervision_scale * config.state_weight * mse
    if config.l1_weight > 0:
        l1 = sum(jnp.sum(jnp.abs(p)) for p in jax.tree_util.tree_leaves(params))
        terms = {**terms, "l1": l1}
        loss = loss + config.l1_weight * l1
    return loss, terms


def make_train_step(config: TrainConfig) -> Callable:
    """``(params, opt_state, batch, keys[, scales]) -> (params, ..., loss, finite)``.

    The result is ``(params, opt_state, loss, finite)``.  Every argument and
    result has a leading seed axis; ``scales`` (``[S]``, default ones) are
    the seeds' supervision factors at this step.  One jitted function per
    :class:`StepSettings` (network, optimiser, loss terms, seed strategy;
    not per seed list, data or schedule), so runs and tests that share them
    share compiled executables.
    """
    return _train_step(StepSettings.of(config))


def all_finite(loss: jax.Array, grads: Any) -> jax.Array:
    """Is ``loss`` finite, and every entry of every gradient?  One reduction.

    One ``all`` over the loss and the gradients' entries laid end to end,
    not one per leaf joined by ``&``: XLA rewrites a reduction over a stack of
    scalars into a chain of scalar ``and``s and copies that chain into every
    kernel that reads the result, here each parameter's and each optimiser
    state's update.  A smoke BFS step's optimised program (XLA:CPU, hidden 8,
    3 seeds) was 29 000 lines, 741 ``is-finite`` and 6 341 ``and``; it is
    13 800 so.  Compile times on a 2-core Intel Xeon, best of four in each of
    two processes: BFS 2.7 and 3.3 s against 1.7 and 1.6 s in the tests'
    build, 6.0 and 5.9 s against 5.1 and 5.9 s optimised; Bellman-Ford 3.3
    and 3.3 s against 2.0 and 2.0 s, 6.8 and 6.9 s against 5.4 and 4.8 s.
    The same steps are skipped, and the optimised build's numbers are the
    same bits (three algorithms trained 12 steps, at hidden 8 and 32, also
    with AVX2 alone).  The tests' build rounded the updates that read the
    chain differently (9 of 46 BFS leaves, by up to 6 ulp, after one step);
    a program of JAX and optax alone shows it only under both of that build's
    switches, and with one reduction it gives the bits of an update without
    any check (docs/tests.md).  Which kernel rounds is not pinned down.
    """
    entries = [jnp.reshape(loss, (1,))]
    entries += [jnp.ravel(g) for g in jax.tree_util.tree_leaves(grads)]
    return jnp.all(jnp.isfinite(jnp.concatenate(entries)))


@functools.lru_cache(maxsize=16)
def _train_step(config: StepSettings) -> Callable:
    optimizer = make_optimizer(config)

    def single(params, opt_state, batch, key, scale):
        (loss, _), grads = jax.value_and_grad(
            lambda p: loss_fn(config, p, batch, key, scale), has_aux=True
        )(params)
        finite = all_finite(loss, grads)
        updates, new_opt_state = optimizer.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        keep = lambda new, old: jnp.where(finite, new, old)  # noqa: E731
        params = jax.tree_util.tree_map(keep, new_params, params)
        opt_state = jax.tree_util.tree_map(keep, new_opt_state, opt_state)
        return params, opt_state, loss, finite

    over_seeds = each_seed(single, config.seed_strategy)

    def train_step(params, opt_state, batch, keys, scales=None):
        if scales is None:
            scales = jnp.ones(keys.shape[:1], jnp.float32)
        return over_seeds(params, opt_state, batch, keys, scales)

    return jax.jit(train_step, donate_argnums=(0, 1))
