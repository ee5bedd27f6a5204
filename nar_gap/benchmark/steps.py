"""Which steps of a padded CLRS trace count, per sample.

A batch pads every trace to the longest; step ``t`` of sample ``b`` predicts
hint ``t + 1``.  The faithfulness measures (``nar_gap.analysis``) and the
supervision terms (``nar_gap.training``) count the same steps, so the rule
lives here, below both.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def external_steps(lengths: jax.Array, num_steps: int) -> jax.Array:
    """``[S, B]``: step t predicts a real hint of sample b (``t + 1 < L_b``)."""
    steps = jnp.arange(num_steps)[:, None]
    return steps + 1 < jnp.asarray(lengths)[None, :]


def internal_steps(lengths: jax.Array, num_steps: int) -> jax.Array:
    """``[S, B]``: step t of sample b counts for attention, ``t < max(1, L_b - 1)``."""
    steps = jnp.arange(num_steps)[:, None]
    return steps < jnp.maximum(1, jnp.asarray(lengths) - 1)[None, :]
