"""The hand-written gradients of the pair computations equal autodiff's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nar_gap.model.pair_ops import LEAKY_RELU_SLOPE, attention_logits, pointer_logits

B, N, D, K = 3, 5, 8, 2


def _random(shape, seed):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape), jnp.float32)


def _plain_attention(sender, receiver, scalars, kernel, offset, heads):
    pre = (
        sender[:, None]
        + receiver[:, :, None]
        + jnp.einsum("bijk,kd->bijd", scalars, kernel)
    ) + offset
    act = jax.nn.leaky_relu(pre, LEAKY_RELU_SLOPE)
    h, f = heads.shape
    return jnp.einsum("bijhf,hf->bhij", act.reshape(*act.shape[:3], h, f), heads)


def _plain_pointer(receiver, candidate, scalars, kernel, head):
    other = candidate[:, None] + jnp.einsum("bijk,kd->bijd", scalars, kernel)
    return jnp.einsum("bijd,d->bij", jnp.maximum(receiver[:, :, None], other), head)


def _check(fast, plain, args):
    np.testing.assert_allclose(fast(*args), plain(*args), rtol=1e-5, atol=1e-5)
    weights = _random(plain(*args).shape, 99)
    loss = lambda f: lambda *a: jnp.sum(f(*a) * weights)  # noqa: E731
    argnums = tuple(range(len(args)))
    mine = jax.grad(loss(fast), argnums)(*args)
    theirs = jax.grad(loss(plain), argnums)(*args)
    for index, (m, t) in enumerate(zip(mine, theirs, strict=True)):
        np.testing.assert_allclose(m, t, rtol=1e-4, atol=1e-5, err_msg=f"arg {index}")


@pytest.mark.parametrize(
    ("heads", "offset_shape"),
    [(1, (B, 1, 1, D)), (2, (B, 1, 1, D)), (1, (B, N, N, D)), (1, (1, N, N, 1))],
    ids=["one-head", "two-heads", "pair-offset", "pre-att-bias"],
)
def test_attention_logits_and_gradients_equal_autodiff(heads, offset_shape):
    args = (
        _random((B, N, D), 0),
        _random((B, N, D), 1),
        _random((B, N, N, K), 2),
        _random((K, D), 3),
        _random(offset_shape, 4),
        _random((heads, D // heads), 5),
    )
    _check(attention_logits, _plain_attention, args)


def test_pointer_logits_and_gradients_equal_autodiff():
    args = (
        _random((B, N, D), 0),
        _random((B, N, D), 1),
        _random((B, N, N, K), 2),
        _random((K, D), 3),
        _random((D,), 5),
    )
    _check(pointer_logits, _plain_pointer, args)


def test_pointer_ties_split_the_gradient_as_jnp_maximum_does():
    receiver = jnp.zeros((1, 2, 3))
    candidate = jnp.zeros((1, 2, 3))
    scalars = jnp.zeros((1, 2, 2, 1))
    args = (receiver, candidate, scalars, jnp.zeros((1, 3)), jnp.ones((3,)))
    _check(pointer_logits, _plain_pointer, args)
