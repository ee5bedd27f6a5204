"""CLRS evaluation in JAX: the output score and per-hint accuracy per step.

Same per-type scores as dm-clrs ``evaluation.py`` -- pointer accuracy over
every node (the source and unreachable nodes must point to themselves), F1 for
masks at threshold 0.5, argmax accuracy for mask_one / categorical, mean
squared error for scalars -- but written in ``jnp`` with padded-node masks, so
it jits, vmaps over seeds and never leaves the device.  ``score`` is the mean
over a spec's outputs (for bfs, bellman_ford and dfs: the accuracy of ``pi``).

Hints follow ``clrs.evaluate_hints``: the step-t prediction (hard
post-processed) is scored against ``hint[t + 1]`` on the samples with
``L_b > t + 1``; the summary weights each step by its number of such samples
and divides by ``Σ_b (L_b - 1)``.  Steps with no valid sample score 0, as in
dm-clrs.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from nar_gap.model.config import NetOutput, NetworkConfig
from nar_gap.model.network import Network
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.counted_steps import external_steps
from nar_gap.tasks.vocabulary import MASKED, Location, Stage, Type


def _f1(pred_on: jax.Array, truth: jax.Array, weight: jax.Array) -> jax.Array:
    valid = (truth != MASKED) * weight
    tp = jnp.sum(pred_on * (truth > 0.5) * valid)
    fp = jnp.sum(pred_on * (truth < 0.5) * valid)
    fn = jnp.sum((1 - pred_on) * (truth > 0.5) * valid)
    precision = jnp.where(tp + fp > 0, tp / jnp.maximum(tp + fp, 1e-30), 1.0)
    recall = jnp.where(tp + fn > 0, tp / jnp.maximum(tp + fn, 1e-30), 1.0)
    denom = precision + recall
    return jnp.where(denom > 0, 2 * precision * recall / jnp.maximum(denom, 1e-30), 0.0)


def probe_score(
    typ: str,
    loc: str,
    pred: jax.Array,
    truth: jax.Array,
    node_mask: jax.Array,
    sample_weight: jax.Array,
) -> jax.Array:
    """The dm-clrs score of one prediction (raw logits) on weighted samples.

    Args:
      typ: the CLRS type.
      loc: the CLRS location.
      pred: raw decoder output ``[B, ...]``.
      truth: CLRS-encoded target ``[B, ...]``.
      node_mask: ``[B, N]`` real nodes.
      sample_weight: ``[B]`` 1 for samples that count, 0 otherwise.
    """
    weight = sample_weight.astype(jnp.float32)
    if loc == Location.NODE and typ != Type.MASK_ONE:
        weight = weight[:, None] * node_mask.astype(jnp.float32)  # [B, N]

    def mean(values: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.sum(values * w) / jnp.maximum(jnp.sum(w), 1e-30)

    if typ == Type.POINTER:
        return mean((jnp.argmax(pred, -1) == truth).astype(jnp.float32), weight)
    if typ == Type.SCALAR:
        return mean((pred - truth) ** 2, weight)
    if typ == Type.MASK:
        return _f1((pred > 0).astype(jnp.float32), truth, weight)
    if typ in (Type.MASK_ONE, Type.CATEGORICAL):
        valid = jnp.all(truth != MASKED, axis=-1).astype(jnp.float32) * weight
        hit = (jnp.argmax(pred, -1) == jnp.argmax(truth, -1)).astype(jnp.float32)
        return mean(hit, valid)
    raise NotImplementedError(f"no CLRS score for type {typ!r}")


def output_scores(config: NetworkConfig, out: NetOutput, batch: Batch) -> dict:
    """Per-output scores and ``score`` (their mean), as ``clrs.evaluate``."""
    everyone = jnp.ones(batch.lengths.shape)
    scores = {
        name: probe_score(
            typ, loc, out.outputs[name], batch.outputs[name], batch.node_mask, everyone
        )
        for name, stage, loc, typ in config.spec_entries()
        if stage == Stage.OUTPUT
    }
    scores["score"] = sum(scores.values()) / len(scores)
    return scores


def hint_scores(config: NetworkConfig, out: NetOutput, batch: Batch) -> dict:
    """Per hint: the summary score and ``<name>_along_time`` ``[S]``."""
    results = {}
    if not config.decode_hints:
        return results
    lengths = batch.lengths
    for name, stage, loc, typ in config.spec_entries():
        if stage != Stage.HINT:
            continue
        truth, preds = batch.hints[name], out.hint_preds[name]
        num_steps = preds.shape[0]
        targets = truth[1 : num_steps + 1]
        if targets.shape[0] < num_steps:  # T == 1: one step, nothing to score
            results[name] = jnp.zeros(())
            results[f"{name}_along_time"] = jnp.zeros((num_steps,))
            continue
        valid = external_steps(lengths, num_steps).astype(jnp.float32)  # [S, B]
        along_time = jax.vmap(
            lambda p, t, w, typ=typ, loc=loc: probe_score(
                typ, loc, p, t, batch.node_mask, w
            )
        )(preds, targets, valid)
        along_time = jnp.where(valid.sum(1) > 0, along_time, 0.0)
        total = jnp.sum(along_time * valid.sum(1)) / jnp.sum(lengths - 1)
        results[name] = total
        results[f"{name}_along_time"] = along_time
    return results


def score_batch(
    config: NetworkConfig, params: Any, batch: Batch
) -> dict[str, jax.Array]:
    """Output and hint scores of one parameter set, evaluation mode (unjitted).

    :func:`nar_gap.model.seeds.score_seeds` jits and vmaps it over seeds.
    """
    out = Network(config).apply({"params": params}, batch, repred=True)
    return {**output_scores(config, out, batch), **hint_scores(config, out, batch)}
