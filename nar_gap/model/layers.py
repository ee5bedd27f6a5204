"""The CLRS network's dense layers, initialised as Haiku initialises them.

On ``apply`` their parameters are checked by shape alone (:class:`ShapeChecked`).
The TransNAR Transformer builds on them too, with ``DenseGeneral`` and ``Embed``.
"""

from __future__ import annotations

from typing import Any

import flax.errors
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax.core import meta


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


class ShapeChecked(nn.Module):
    """A layer whose given parameters are checked by shape, not by its initialiser.

    Flax's ``param`` checks a parameter passed to ``apply`` against the shape
    its initialiser makes, and finds that shape by tracing the initialiser
    under ``jax.eval_shape`` (with a PRNG key made inside the trace), for
    every parameter, every time a forward pass is traced: at a new graph
    size, a new batch shape, inside every training step's trace.  Every
    initialiser here makes exactly the shape it is given (``init(key, shape[,
    dtype])``), so that shape is the check: the same
    ``ScopeParamShapeError`` for a parameter of the wrong shape, no trace.
    The programs are the same (the check adds nothing to them; their lowered
    text is unchanged), so are the numbers.  Creating a parameter (``init``)
    is Flax's own ``param``, untouched.  ``benchmarks/trace_time.py``, on a
    2-core AMD EPYC: tracing compiled BFS and DFS at a new graph size x0.70
    and x0.67 of Flax's check, a first trace x0.58 and x0.59, a smoke BFS
    training step's first trace x0.83.
    """

    def param(self, name: str, init_fn: Any, *init_args: Any, **kwargs: Any) -> Any:
        """Flax's ``param``; an existing one is checked by its shape alone."""
        if self.scope is None or not self.has_variable("params", name):
            return super().param(name, init_fn, *init_args, **kwargs)
        value = self.get_variable("params", name)
        if kwargs.get("unbox", True):
            value = meta.unbox(value)
        expected = tuple(init_args[0])
        if np.shape(value) != expected:
            raise flax.errors.ScopeParamShapeError(
                name, self.scope.path_text, np.shape(value), expected
            )
        return value


class Dense(ShapeChecked, nn.Dense):
    """``nn.Dense``, its parameters checked by :class:`ShapeChecked`."""


class LayerNorm(ShapeChecked, nn.LayerNorm):
    """``nn.LayerNorm``, its parameters checked by :class:`ShapeChecked`."""


class DenseGeneral(ShapeChecked, nn.DenseGeneral):
    """``nn.DenseGeneral``, its parameters checked by :class:`ShapeChecked`."""


class Embed(ShapeChecked, nn.Embed):
    """``nn.Embed``, its table checked by :class:`ShapeChecked`."""


class Linear(ShapeChecked):
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
