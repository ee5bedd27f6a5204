"""Greedy decoding with a key-value cache, and the training loss on answers.

A batch of prompts of different lengths is laid out *left*-padded, so every
row's answer starts at the same slot and one cached step serves the whole
batch.  Row ``b`` of ``L = prompt_slots + max_new`` slots reads

    [PAD ... PAD | BOS prompt_b | answer slots (max_new)]

with positions drawn for its real prompt tokens and answer slots together
(:func:`~nar_gap.paper.transnar.model.draw_positions`), the padding masked
out of every attention.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nar_gap.paper.transnar.model import TransformerConfig, TransNAR, draw_positions
from nar_gap.paper.transnar.tokenizer import PAD


@dataclasses.dataclass(frozen=True)
class PromptLayout:
    """Prompts laid out for cached decoding (host arrays).

    Attributes:
      tokens: ``[B, L]`` left-padded prompts, then ``max_new`` empty slots.
      positions: ``[B, L]`` each slot's position (0 on padding).
      prompt_mask: ``[B, L]`` True on the prompt's real tokens.
      prompt_slots: the slots before the answer's (the longest prompt).
    """

    tokens: np.ndarray
    positions: np.ndarray
    prompt_mask: np.ndarray
    prompt_slots: int

    @property
    def max_new(self) -> int:
        """How many answer tokens the layout has room for."""
        return self.tokens.shape[1] - self.prompt_slots


def prompt_layout(
    prompts: np.ndarray,
    lengths: np.ndarray,
    max_new: int,
    config: TransformerConfig,
    rng: np.random.Generator,
    prompt_slots: int | None = None,
) -> PromptLayout:
    """Right-padded prompts ``[B, Lp]`` (with ``lengths``) as a :class:`PromptLayout`.

    ``prompt_slots`` pads the prompt part to a fixed width (fewer compiled
    shapes); None: the longest prompt.  Positions follow ``config.positions``.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    slots = int(lengths.max()) if prompt_slots is None else int(prompt_slots)
    if slots < int(lengths.max()):
        raise ValueError(f"prompt_slots {slots} < the longest prompt {lengths.max()}")
    batch = len(lengths)
    total = slots + max_new
    drawn = draw_positions(config, rng, lengths + max_new, total)
    tokens = np.full((batch, total), PAD, dtype=np.int32)
    positions = np.zeros((batch, total), dtype=np.int32)
    mask = np.zeros((batch, total), dtype=bool)
    for row, length in enumerate(lengths):
        start = slots - int(length)
        tokens[row, start:slots] = prompts[row, :length]
        positions[row, start:slots] = drawn[row, :length]
        positions[row, slots:] = drawn[row, length : length + max_new]
        mask[row, start:slots] = True
    return PromptLayout(tokens, positions, mask, slots)


@functools.lru_cache(maxsize=16)
def _decoder(config: TransformerConfig, prompt_slots: int, max_new: int):
    model = TransNAR(config)

    def decode(params, tokens, positions, prompt_mask, nar, nar_mask):
        variables = {"params": params}
        logits, cache, cross = model.apply(
            variables, tokens, positions, prompt_mask, nar, nar_mask,
            method=TransNAR.prefill,
        )  # fmt: skip
        first = jnp.argmax(logits[:, prompt_slots - 1], axis=-1).astype(jnp.int32)
        first_cross = tuple(
            None if w is None else w[:, :, prompt_slots - 1] for w in cross
        )

        def one(carry, t):
            token, cache, key_mask = carry
            index = prompt_slots + t
            key_mask = key_mask.at[:, index].set(True)
            logits, cache, cross = model.apply(
                variables, token, positions[:, index], cache, index, key_mask,
                nar, nar_mask, method=TransNAR.step,
            )  # fmt: skip
            following = jnp.argmax(logits, axis=-1).astype(jnp.int32)
            reads = tuple(None if w is None else w[:, :, 0] for w in cross)
            return (following, cache, key_mask), (following, reads)

        _, (rest, reads) = jax.lax.scan(
            one, (first, cache, prompt_mask), jnp.arange(max_new - 1)
        )
        tokens_out = jnp.concatenate([first[:, None], rest.T], axis=1)
        weights = tuple(
            None
            if w0 is None
            else jnp.concatenate([w0[None], w], axis=0).transpose(1, 2, 0, 3)
            for w0, w in zip(first_cross, reads, strict=True)
        )
        return tokens_out, weights

    return jax.jit(decode)


def greedy_decode(
    config: TransformerConfig,
    params: Any,
    layout: PromptLayout,
    nar: np.ndarray | None = None,
    nar_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, tuple[np.ndarray | None, ...]]:
    """The greedy answer tokens ``[B, max_new]`` and each layer's cross-attention.

    The cross-attention weights ``[B, H, max_new, N]`` of answer token ``t``
    are those of the query that *produced* it (the slot before it).  None per
    layer for the Transformer alone.
    """
    decode = _decoder(config, layout.prompt_slots, layout.max_new)
    tokens, weights = decode(
        params, layout.tokens, layout.positions, layout.prompt_mask, nar, nar_mask
    )
    return np.asarray(tokens), tuple(
        None if w is None else np.asarray(w) for w in weights
    )


def answer_loss(
    config: TransformerConfig,
    params: Any,
    tokens: jax.Array,
    positions: jax.Array,
    answer_start: jax.Array,
    lengths: jax.Array,
    nar: jax.Array | None = None,
    nar_mask: jax.Array | None = None,
) -> jax.Array:
    """Mean next-token cross-entropy over the answer's tokens (EOS included).

    The prompt is given, not predicted (TransNAR trains on the answer).
    ``tokens [B, L]`` right-padded, ``answer_start`` and ``lengths [B]``.
    """
    slots = jnp.arange(tokens.shape[1])
    token_mask = slots[None] < lengths[:, None]
    logits = TransNAR(config).apply(
        {"params": params}, tokens, positions, token_mask, nar, nar_mask
    )
    targets = tokens[:, 1:]
    target_slot = slots[None, 1:]
    counted = (target_slot >= answer_start[:, None]) & (target_slot < lengths[:, None])
    losses = optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], targets)
    return jnp.sum(losses * counted) / jnp.maximum(jnp.sum(counted), 1)
