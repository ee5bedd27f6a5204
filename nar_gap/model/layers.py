"""The one dense layer of the CLRS network, initialised as Haiku initialises it."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp


def compute_dtype() -> jnp.dtype:
    """The float the network computes in: float32, or float64 in JAX's x64 mode.

    Trained models always run in float32.  Compiled models may run in x64 mode
    (``CompilerConfig.dtype = "float64"``), and then their inputs must not be
    rounded to float32 on the way in, so every cast in the network goes here.
    """
    return jnp.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))


def haiku_linear_init(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32):
    """Haiku's default Linear init: truncated normal (±2σ), σ = 1/sqrt(fan_in).

    Flax's ``lecun_normal`` rescales the truncated draw to unit variance; Haiku
    does not.  Training from scratch should start where dm-clrs starts.
    """
    stddev = 1.0 / jnp.sqrt(shape[0])
    return stddev * jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)


def truncated_normal(stddev: float):
    """A truncated normal (±2σ) initialiser of standard deviation ``stddev``."""

    def init(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32):
        return stddev * jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)

    return init


class Linear(nn.Module):
    """``nn.Dense`` that can also hand out its kernel (for factorised edges)."""

    features: int
    kernel_init: Any = haiku_linear_init

    def __call__(self, x: jax.Array) -> jax.Array:
        """``x @ kernel + bias``."""
        kernel, bias = self.weights(x.shape[-1])
        return x @ kernel + bias

    @nn.compact
    def weights(self, in_features: int) -> tuple[jax.Array, jax.Array]:
        """The ``[in, out]`` kernel and bias, created on first use."""
        kernel = self.param("kernel", self.kernel_init, (in_features, self.features))
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        return kernel, bias


def require_num_nodes(what: str, built_for: int, num_nodes: int) -> None:
    """One line, not a Flax shape error, when a size-locked layer meets another N.

    The authors' fork has layers whose weights have one entry per node
    (:attr:`~nar_gap.model.config.NetworkConfig.size_locked`): they are
    defined at the graph size they were built for and nowhere else.
    """
    if num_nodes != built_for:
        raise ValueError(
            f"{what} is built for graphs of {built_for} nodes (its weights have "
            f"one entry per node), got {num_nodes} nodes: run it at {built_for}"
        )
