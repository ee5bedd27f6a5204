"""Supervising the mechanism: loss terms against the compiled model (issue 18).

The CLRS loss supervises what a network *outputs* at every step (the hints).
The paper finds that networks trained on it reach high accuracy with
attention far from the compiled model's.  These terms supervise *how* a
network computes instead, so an experiment can ask whether a trained GATv2
can be made to execute the compiled mechanism, and at what accuracy.

* :func:`attention_kl`: at every step, each receiver's attention row
  against the compiled model's row on the same graph,
  ``KL(compiled || trained)``, averaged over the rows Eq. 24 counts (real
  receivers, steps ``t < max(1, L - 1)``) and over heads (each head is
  pulled towards the one compiled head).  Zero exactly when the rows are
  equal.
* :func:`state_mse`: every step's compiled variables (the compiled hidden
  state names every dimension: ``d``, ``reached_not_source``, ...) against
  a learned linear probe of the trained hidden state
  (``NetworkConfig.state_probe_size``; :func:`with_state_probe`), mean
  squared error over the same rows.  Zero exactly when the probe reads the
  compiled variables off.
* :func:`compiled_attention`, :func:`compiled_state`: the compiled model's
  attention and variables on a batch,
  computed inside the jitted train step once per batch and shared by every
  seed.  A compiled model's hint encoders are zero, so its attention is the
  same teacher-forced or not.

The compiled model is the size-free default of :func:`nar_gap.compile`
(minimal hidden size: the attention does not depend on it), run at the
highest matmul precision.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from nar_gap.compiler import compile_algorithm
from nar_gap.model.config import NetworkConfig
from nar_gap.model.seeds import forward
from nar_gap.programs.registry import SIZE_FREE_PROGRAMS
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.counted_steps import internal_steps

SUPERVISED_ALGORITHMS = SIZE_FREE_PROGRAMS
# Added inside the log so that a zero entry of the trained row (a padded or
# masked sender) costs a finite amount and equal rows cost exactly 0.
_LOG_FLOOR = 1e-12


def attention_kl(
    trained: jax.Array, compiled: jax.Array, lengths: jax.Array, node_mask: jax.Array
) -> jax.Array:
    """Mean ``KL(compiled || trained)`` over the counted receiver rows.

    Args:
      trained: ``[S, B, H, N, N]`` attention (rows: receivers).
      compiled: ``[S, B, 1, N, N]`` (or ``H`` heads) target attention.
      lengths: ``[B]`` trace lengths.
      node_mask: ``[B, N]`` real nodes.
    """
    target = jnp.broadcast_to(compiled, trained.shape)
    rows = jnp.sum(
        target * (jnp.log(target + _LOG_FLOOR) - jnp.log(trained + _LOG_FLOOR)),
        axis=-1,
    )  # [S, B, H, N]
    steps = internal_steps(lengths, trained.shape[0]).astype(trained.dtype)
    weight = steps[:, :, None, None] * node_mask.astype(trained.dtype)[None, :, None, :]
    weight = jnp.broadcast_to(weight, rows.shape)
    return jnp.sum(rows * weight) / jnp.maximum(jnp.sum(weight), 1.0)


def state_mse(
    probed: jax.Array, compiled: jax.Array, lengths: jax.Array, node_mask: jax.Array
) -> jax.Array:
    """Mean squared error of the probe against the compiled variables.

    Args:
      probed: ``[S, B, N, V]`` the trained network's state probe.
      compiled: ``[S, B, N, V]`` the compiled model's variables.
      lengths: ``[B]`` trace lengths.
      node_mask: ``[B, N]`` real nodes.
    """
    if probed.shape != compiled.shape:
        raise ValueError(
            f"the state probe reads {probed.shape[-1]} values, the compiled model "
            f"has {compiled.shape[-1]} variables: build the network with "
            "with_state_probe"
        )
    rows = jnp.mean((probed - compiled) ** 2, axis=-1)  # [S, B, N]
    steps = internal_steps(lengths, probed.shape[0]).astype(probed.dtype)
    weight = steps[:, :, None] * node_mask.astype(probed.dtype)[None]
    return jnp.sum(rows * weight) / jnp.maximum(jnp.sum(weight), 1.0)


@functools.lru_cache(maxsize=4)
def _compiled(algorithm: str):
    """The compiled model's parameters and forward function, cached.

    Built under ``ensure_compile_time_eval``: the first call usually comes
    from inside the jitted train step, and arrays made there would be that
    trace's tracers, kept by the cache past it (``UnexpectedTracerError`` at
    the next step, seen when attention supervision ran before anything
    else had asked for the compiled model).
    """
    if algorithm not in SUPERVISED_ALGORITHMS:
        raise ValueError(
            f"supervision needs a compiled {algorithm!r}; compiled "
            f"programs exist for {', '.join(SUPERVISED_ALGORITHMS)}"
        )
    with jax.ensure_compile_time_eval():
        model = compile_algorithm(algorithm, hidden_size=None)
        variables = model.layout.variables
        dims = jnp.asarray([model.layout.hidden_index(v) for v in variables])
    return model.params, forward(model.config, True, model.precision), dims, variables


def compiled_variables(algorithm: str) -> tuple[str, ...]:
    """The names of the compiled model's variables, in probe order."""
    return _compiled(algorithm)[3]


def with_state_probe(network: NetworkConfig) -> NetworkConfig:
    """``network`` with a state probe as wide as the compiled variables."""
    width = len(compiled_variables(network.algorithm))
    return dataclasses.replace(network, state_probe_size=width)


def compiled_attention(algorithm: str, batch: Batch) -> jax.Array:
    """``[S, B, 1, N, N]``: the compiled model's attention on ``batch``."""
    params, apply, _, _ = _compiled(algorithm)
    return jax.lax.stop_gradient(apply(params, batch).attention)


def compiled_state(algorithm: str, batch: Batch) -> jax.Array:
    """``[S, B, N, V]``: the compiled model's variables at every step."""
    params, apply, dims, _ = _compiled(algorithm)
    return jax.lax.stop_gradient(apply(params, batch).hiddens[..., dims])
