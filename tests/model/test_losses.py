"""The CLRS losses where a masked element's loss overflows."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from nar_gap.model.losses import hint_loss, masked_sum, output_loss
from nar_gap.tasks.vocabulary import Location, Type


def test_a_masked_overflow_does_not_count():
    """A scalar hint predicted at 1e20 squares to inf in float32.  At a step
    past the sample's length it is masked, and the loss is the other
    elements' (dm-clrs's ``sum(loss * mask)`` gives inf * 0 = NaN)."""
    rng = np.random.default_rng(0)
    truth = jnp.asarray(rng.normal(size=(3, 2, 4)), jnp.float32)  # T = 3
    preds = jnp.asarray(rng.normal(size=(2, 2, 4)), jnp.float32)  # S = 2
    lengths = jnp.asarray([3, 2])  # sample 1 predicts step 0 only
    nodes = jnp.ones((2, 4), bool)
    clean = hint_loss(Type.SCALAR, Location.NODE, preds, truth, lengths, nodes)
    overflowed = preds.at[1, 1, 2].set(1e20)  # sample 1's step 1: masked
    got = hint_loss(Type.SCALAR, Location.NODE, overflowed, truth, lengths, nodes)
    assert float(got) == float(clean)
    # a kept element that overflows makes the loss inf, not NaN
    kept = preds.at[0, 1, 2].set(1e20)
    assert float(
        hint_loss(Type.SCALAR, Location.NODE, kept, truth, lengths, nodes)
    ) == float("inf")


def test_a_padded_node_that_overflows_does_not_count():
    truth = jnp.asarray([[0.5, 1.0, 0.0]], jnp.float32)
    nodes = jnp.asarray([[True, True, False]])
    pred = jnp.asarray([[0.0, 2.0, 1e20]], jnp.float32)
    got = output_loss(Type.SCALAR, Location.NODE, pred, truth, nodes)
    assert float(got) == (0.25 + 1.0) / 2


def test_finite_losses_keep_their_bits():
    """Where every loss is finite, selecting sums exactly what multiplying did."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        loss = jnp.asarray(rng.exponential(size=(5, 7, 11)), jnp.float32)
        mask = jnp.asarray(rng.random((5, 7, 11)) < 0.6, jnp.float32)
        assert masked_sum(loss, mask).tobytes() == jnp.sum(loss * mask).tobytes()
