"""The CLRS training losses (dm-clrs ``losses.py``), aware of padded nodes.

Total loss = Σ over outputs + Σ over hints, unweighted.  Output losses are
means over the batch's real elements; a hint loss is a mean over the valid
(step, sample, node) elements, where step ``t`` of sample ``b`` is valid iff
``L_b > t + 1`` (its prediction targets ``hint[t + 1]``).  Padded nodes
(``node_mask`` False) never count, so a padded batch has the unpadded loss.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nar_gap.model.config import NetOutput, NetworkConfig
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.vocabulary import MASKED, Location, Stage, Type

EPS = 1e-12  # dm-clrs losses.EPS


def _bce_with_logits(logits: jax.Array, truth: jax.Array) -> jax.Array:
    return (
        jnp.maximum(logits, 0) - logits * truth + jnp.log1p(jnp.exp(-jnp.abs(logits)))
    )


def _elementwise(typ: str, pred: jax.Array, truth: jax.Array, num_nodes: int):
    """Per-element loss and the type's own validity mask (dm-clrs ``_hint_loss``)."""
    if typ == Type.SCALAR:
        return (pred - truth) ** 2, jnp.ones_like(pred)
    if typ == Type.MASK:
        return _bce_with_logits(pred, truth), (truth != MASKED).astype(jnp.float32)
    if typ == Type.MASK_ONE:
        loss = -jnp.sum(truth * jax.nn.log_softmax(pred), axis=-1, keepdims=True)
        return loss, jnp.ones_like(loss)
    if typ == Type.CATEGORICAL:
        loss = -jnp.sum(truth * jax.nn.log_softmax(pred), axis=-1)
        return loss, jnp.any(truth == 1, axis=-1).astype(jnp.float32)
    if typ == Type.POINTER:
        one_hot = jax.nn.one_hot(truth, num_nodes)
        loss = -jnp.sum(one_hot * jax.nn.log_softmax(pred), axis=-1)
        return loss, jnp.ones_like(loss)
    raise NotImplementedError(f"no CLRS loss for type {typ!r}")


def output_loss(
    typ: str, loc: str, pred: jax.Array, truth: jax.Array, node_mask: jax.Array
) -> jax.Array:
    """dm-clrs ``output_loss`` for one output (means over real nodes only)."""
    num_nodes = node_mask.shape[1]
    real = (
        node_mask.astype(jnp.float32)
        if loc == Location.NODE
        else jnp.ones(truth.shape[:1])
    )
    if typ in (Type.MASK_ONE, Type.CATEGORICAL):
        masked_truth = truth * (truth != MASKED)
        total = -jnp.sum(masked_truth * jax.nn.log_softmax(pred))
        return total / jnp.sum(truth == 1)
    loss, mask = _elementwise(typ, pred, truth, num_nodes)
    mask = mask * real.reshape(real.shape + (1,) * (loss.ndim - real.ndim))
    return jnp.sum(loss * mask) / jnp.sum(mask)


def hint_loss(
    typ: str,
    loc: str,
    preds: jax.Array,  # [S, B, ...]
    truth: jax.Array,  # [T, B, ...]
    lengths: jax.Array,  # [B]
    node_mask: jax.Array,  # [B, N]
) -> jax.Array:
    """dm-clrs ``hint_loss``: step t's prediction against ``hint[t + 1]``."""
    targets = truth[1:]
    if targets.shape[0] == 0:  # T == 1: nothing to predict
        return jnp.zeros(())
    loss, mask = _elementwise(typ, preds, targets, node_mask.shape[1])
    steps = jnp.arange(targets.shape[0])[:, None]
    not_done = (lengths[None, :] > steps + 1).astype(jnp.float32)  # [S, B]
    weight = not_done.reshape(not_done.shape + (1,) * (loss.ndim - 2))
    if (
        loc == Location.NODE
        and loss.shape[-1] == node_mask.shape[1]
        and typ != Type.MASK_ONE
    ):
        weight = weight * node_mask[None].astype(jnp.float32).reshape(
            (1,) + node_mask.shape + (1,) * (loss.ndim - 3)
        )
    mask = mask * weight
    return jnp.sum(loss * mask) / jnp.maximum(jnp.sum(mask), EPS)


def total_loss(
    config: NetworkConfig, out: NetOutput, batch: Batch
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Σ output losses + Σ hint losses (if decoded); also each term by name."""
    terms = {}
    for name, stage, loc, typ in config.spec_entries():
        if stage == Stage.OUTPUT:
            terms[name] = output_loss(
                typ, loc, out.outputs[name], batch.outputs[name], batch.node_mask
            )
        elif stage == Stage.HINT and config.decode_hints:
            terms[name] = hint_loss(
                typ,
                loc,
                out.hint_preds[name],
                batch.hints[name],
                batch.lengths,
                batch.node_mask,
            )
    return sum(terms.values()), terms
