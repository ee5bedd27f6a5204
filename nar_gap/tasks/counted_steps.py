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


def internal_step_count(length: int) -> int:
    """How many steps of a trace of ``length`` hints :func:`internal_steps` counts.

    The steps that predict a real hint, or the single step of a one-hint
    trace: what a figure of one graph's attention shows.
    """
    return max(1, int(length) - 1)


def last_equal_step(
    hint: jax.Array,
    output: jax.Array,
    lengths: jax.Array,
    real: jax.Array | None = None,
) -> jax.Array:
    """``[B]``: the last hint index ``t < L_b`` whose ground truth equals the output.

    ``hint`` is ``[T, B, ...]`` and ``output`` ``[B, ...]`` of the same
    location and type (a hint that mirrors an output, as dm-clrs's ``pi_h``
    mirrors ``pi``).  Equality is exact (dm-clrs pushes ``np.copy(pi)`` into
    both) on every element; ``real`` (``[B, N]``, node-located probes) leaves
    padded nodes out of the comparison, and the padding past ``L_b`` never
    counts.  -1 where no hint step equals the output.  Read off the
    ground-truth trace per sample rather than assumed: a sampler or an
    algorithm whose last hint is not the output then keeps all its steps.
    """
    hint, output = jnp.asarray(hint), jnp.asarray(output)
    same = hint == output[None]  # [T, B, ...]
    if real is not None:
        real = jnp.asarray(real, bool)
        real = real.reshape(real.shape + (1,) * (same.ndim - 1 - real.ndim))
        same = same | ~real[None]
    equal = jnp.all(same.reshape(same.shape[:2] + (-1,)), axis=-1)  # [T, B]
    steps = jnp.arange(hint.shape[0])[:, None]
    equal = equal & (steps < jnp.asarray(lengths)[None, :])
    return jnp.max(jnp.where(equal, steps, -1), axis=0)


def pre_output_steps(
    lengths: jax.Array, last_equal: jax.Array, num_steps: int
) -> jax.Array:
    """``[S, B]``: the :func:`external_steps` that predict a hint *before* the output.

    Step t predicts ``hint[t + 1]``; it counts when ``t + 1 < c_b``, where
    ``c_b`` is sample b's :func:`last_equal_step` (or ``L_b`` when no hint
    equals the output, so the window is then every external step).  The
    excluded steps are the one that predicts the last hint equal to the output
    and every step after it.  In dm-clrs's BFS, Bellman-Ford and DFS that last
    hint is always the final one, ``hint[L_b - 1]``, a copy of the output
    ``pi`` decoded from the same (last) processor state as the output itself:
    scoring it scores the output again, which is why Eq. 25 over the whole
    trace tracks accuracy by construction.  So exactly one step per sample,
    ``t = L_b - 2``, is dropped, and a trace of two hints keeps none.
    """
    cut = jnp.where(last_equal >= 0, last_equal, jnp.asarray(lengths))
    steps = jnp.arange(num_steps)[:, None]
    return external_steps(lengths, num_steps) & (steps + 1 < cut[None, :])
