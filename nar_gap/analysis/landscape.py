"""Loss landscapes along filter-normalised random directions (Li et al., 2018).

The paper's appendix D.11 plots the training loss on a plane through a
solution (compiled, learned, or the initial parameters) and finds compiled
minima much sharper than learned ones.  A plane is spanned by two random
directions, each *filter-normalised*: every filter (the column of a weight
matrix that feeds one output unit, ``kernel[:, j]`` in Flax's ``[in, out]``
layout) is rescaled to the norm of the matching filter of the centre, so a
step of 1 along a direction changes every unit by as much as its own weights
(scale-invariant comparisons between very differently scaled solutions, such
as compiled weights of ~1e7 and learned ones of ~1).  One-dimensional
parameters (biases, layer-norm scale and offset) get a zero direction, Li et
al.'s choice for biases and batch-norm parameters.

:func:`loss_grid` evaluates the whole grid as one jitted computation: the grid
points are a leading axis mapped with ``lax.map`` in vmapped chunks of
:data:`DEFAULT_CHUNK` points, not a Python loop.  :func:`sharpness` is the
number behind "sharper": the mean loss rise on a circle of fixed radius in the
plane.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nar_gap.model.config import NetworkConfig
from nar_gap.model.losses import total_loss
from nar_gap.model.network import training_outputs
from nar_gap.system.numerics import COMPILED_PRECISION
from nar_gap.tasks.batch import Batch

Params = Any

# Grid points vmapped together.  Measured on 2 CPU cores (BFS, 32 graphs of 16
# nodes, an 11 x 11 grid, seconds after compilation, chunk 1 / 4 / 8 / 16 / 32):
# hidden 16: 0.4 / 0.4 / 0.3 / 0.3 / 0.2; hidden 128: 2.8 / 2.5 / 2.8 / 3.5 / 3.4;
# compiled BFS: 0.3 / - / 0.2 / 0.2 / 0.2.  Compilation (3-9 s) grows with the
# chunk, so on the CPU vmapping buys little: notebook 06 at the cpu profile with
# an empty compilation cache ran 72 s at chunk 4 and 67 s at chunk 1.  Chunk 4
# is the steady-state best at hidden 128, the size the trained models have.
DEFAULT_CHUNK = 4


def _filter_normalise(direction: jax.Array, centre: jax.Array) -> jax.Array:
    """Rescale each filter (last-axis unit) of ``direction`` to the centre's norm."""
    if centre.ndim < 2:
        return jnp.zeros_like(centre)
    axes = tuple(range(centre.ndim - 1))  # every axis but the output unit
    centre_norm = jnp.sqrt(jnp.sum(centre**2, axis=axes, keepdims=True))
    direction_norm = jnp.sqrt(jnp.sum(direction**2, axis=axes, keepdims=True))
    return direction * centre_norm / jnp.maximum(direction_norm, 1e-30)


def filter_normalised_direction(key: jax.Array, centre: Params) -> Params:
    """A Gaussian direction in parameter space, filter-normalised to ``centre``.

    Leaf ``i`` draws from the ``i``-th of ``split(key, leaves)``, through one
    small program per leaf shape (:func:`_leaf_direction`), shared by every
    model of a process.  One program for the whole tree inlined a normal
    draw per leaf and compiled slower: four smoke and cpu networks, two
    directions each, took 20.4 s against 5.5 s in the optimised build and
    6.2 s against 2.0 s in the tests' build on a 2-core Intel Xeon, with the
    same bits in the optimised build (all 452 leaves; in the tests' build
    137 leaves differed by one ulp, a cause not pinned down).  Run op
    by op instead, every draw and norm compiled on its own (about 4 s per
    landscape at the smoke sizes).
    """
    leaves, tree = jax.tree_util.tree_flatten(centre)
    keys = jax.random.split(key, len(leaves))
    directions = [
        _leaf_direction(k, leaf) for k, leaf in zip(keys, leaves, strict=True)
    ]
    return jax.tree_util.tree_unflatten(tree, directions)


@jax.jit
def _leaf_direction(key: jax.Array, leaf: jax.Array) -> jax.Array:
    """One leaf's filter-normalised normal draw (zeros for a bias)."""
    direction = jax.random.normal(key, jnp.shape(leaf), jnp.float32)
    return _filter_normalise(direction, jnp.asarray(leaf))


def plane_directions(key: jax.Array, centre: Params) -> tuple[Params, Params]:
    """The two filter-normalised directions :func:`loss_grid` spans from ``key``."""
    k1, k2 = jax.random.split(key)
    return (
        filter_normalised_direction(k1, centre),
        filter_normalised_direction(k2, centre),
    )


@jax.jit
def filter_norms(params: Params) -> Params:
    """Per-filter L2 norms of every weight matrix (1-D parameters: ``None``)."""

    def norms(x):
        x = jnp.asarray(x)
        if x.ndim < 2:
            return None
        return jnp.sqrt(jnp.sum(x**2, axis=tuple(range(x.ndim - 1))))

    return jax.tree_util.tree_map(norms, params)


def plane_point(
    centre: Params, first: Params, second: Params, alpha: jax.Array, beta: jax.Array
) -> Params:
    """``centre + alpha * first + beta * second``."""
    return jax.tree_util.tree_map(
        lambda c, d1, d2: c + alpha * d1 + beta * d2, centre, first, second
    )


def model_loss(config: NetworkConfig, params: Params, batch: Batch) -> jax.Array:
    """The training loss at ``params`` (training mode, no dropout, no penalty).

    Training mode is what gradient descent sees: hint losses on every step,
    the model's own soft predictions fed back (teacher forcing 0, the paper's
    setting).  Randomness only enters with teacher forcing or dropout, so a
    fixed key makes the landscape deterministic.
    """
    # compiled weights need the compiled models' precision on a GPU
    with jax.default_matmul_precision(COMPILED_PRECISION):
        out = training_outputs(config, params, batch, jax.random.PRNGKey(0))
    return total_loss(config, out, batch)[0]


@functools.lru_cache(maxsize=16)
def _grid_evaluator(config: NetworkConfig, chunk: int):
    def at(centre, first, second, batch, coefficients):
        def one(ab):
            return model_loss(
                config, plane_point(centre, first, second, ab[0], ab[1]), batch
            )

        return jax.lax.map(one, coefficients, batch_size=chunk)

    return jax.jit(at)


def losses_at(
    config: NetworkConfig,
    centre: Params,
    first: Params,
    second: Params,
    batch: Batch,
    coefficients: np.ndarray,
    chunk: int = DEFAULT_CHUNK,
) -> np.ndarray:
    """Loss at each ``(alpha, beta)`` row of ``coefficients`` ``[P, 2]`` (one jit).

    ``chunk`` grid points are vmapped together, the chunks run in sequence.
    Several parameter sets on one batch is exactly the shape that jaxlib
    0.10.2's YNN fusion miscompiles on the CPU (jax-ml/jax#39103): the pointer
    hint loss of lane ``l`` comes out wrong once ``(l + 1) * S * B * N``
    exceeds 32 768 float32 elements (``S`` hint steps, ``B`` graphs, ``N``
    nodes).  :mod:`nar_gap.system.backend_check` keeps that jaxlib out of the lock
    and switches the fusion off where it is installed anyway, and
    ``tests/analysis/test_landscape.py`` compares chunk 16 with chunk 1 at a size where
    the bug shows.
    """
    evaluator = _grid_evaluator(config, int(chunk))
    return np.asarray(
        evaluator(centre, first, second, batch, jnp.asarray(coefficients, jnp.float32))
    )


@dataclasses.dataclass(frozen=True)
class Landscape:
    """A loss surface on a plane through ``centre``.

    Attributes:
      alphas, betas: grid coordinates along the first and second direction.
      losses: ``[len(alphas), len(betas)]``.
      centre_loss: the loss at the centre (alpha = beta = 0).
      sharpness: ``{radius: mean loss rise on that circle}`` (see
        :func:`sharpness`); empty unless radii were asked for.
    """

    alphas: np.ndarray
    betas: np.ndarray
    losses: np.ndarray
    centre_loss: float
    sharpness: dict[float, float] = dataclasses.field(default_factory=dict)


def _circles(radii: tuple[float, ...], angles: int) -> np.ndarray:
    """``[len(radii) * angles, 2]`` points on circles around the origin."""
    phi = np.linspace(0.0, 2 * np.pi, angles, endpoint=False)
    ring = np.stack([np.cos(phi), np.sin(phi)], axis=1)
    return np.concatenate([r * ring for r in radii]) if radii else np.zeros((0, 2))


def _rises(
    ring_losses: np.ndarray, centre_loss: float, radii: tuple[float, ...], angles: int
) -> dict[float, float]:
    rings = ring_losses.reshape(len(radii), angles)
    return {r: float(np.mean(rings[k]) - centre_loss) for k, r in enumerate(radii)}


def loss_grid(
    config: NetworkConfig,
    centre: Params,
    batch: Batch,
    key: jax.Array,
    radius: float = 1.0,
    points: int = 21,
    chunk: int = DEFAULT_CHUNK,
    radii: tuple[float, ...] = (),
    angles: int = 15,
) -> tuple[Landscape, tuple[Params, Params]]:
    """The loss on a ``points x points`` grid over ``[-radius, radius]^2``.

    The centre, the grid and (with ``radii``) the sharpness circles are one
    jitted call, so a centre costs one compilation.  Returns the landscape
    and the two directions (reuse them to compare several centres on the same
    kind of plane).
    """
    first, second = plane_directions(key, centre)
    axis = np.linspace(-radius, radius, points)
    alphas, betas = np.meshgrid(axis, axis, indexing="ij")
    grid = np.stack([alphas.ravel(), betas.ravel()], axis=1)
    coefficients = np.concatenate([np.zeros((1, 2)), grid, _circles(radii, angles)])
    losses = losses_at(config, centre, first, second, batch, coefficients, chunk)
    centre_loss = float(losses[0])
    on_grid = losses[1 : 1 + grid.shape[0]].reshape(points, points)
    rises = _rises(losses[1 + grid.shape[0] :], centre_loss, radii, angles)
    return Landscape(axis, axis, on_grid, centre_loss, rises), (first, second)


def sharpness(
    config: NetworkConfig,
    centre: Params,
    directions: tuple[Params, Params],
    batch: Batch,
    radii: tuple[float, ...] = (0.1,),
    angles: int = 15,
    chunk: int = DEFAULT_CHUNK,
) -> dict[float, float]:
    """Mean loss rise on circles of each radius around the centre, in the plane.

    With filter-normalised directions, radius 0.1 moves every filter by about
    10 % of its own norm, so the number compares solutions of any scale: a
    flat minimum barely rises, a sharp one rises a lot.  All circles are one
    jitted call (:func:`loss_grid` with ``radii`` computes them with its grid).
    """
    coefficients = np.concatenate([np.zeros((1, 2)), _circles(radii, angles)])
    losses = losses_at(config, centre, *directions, batch, coefficients, chunk)
    return _rises(losses[1:], float(losses[0]), radii, angles)


def sharpness_on_planes(
    model: Any, batch: Batch, keys: Sequence[jax.Array], radii: tuple[float, ...]
) -> list[dict[float, float]]:
    """:func:`sharpness` on one filter-normalised plane per key through ``model``.

    One plane is one draw of two random directions: independent planes make
    a network's rise a sample that a test across networks can read.
    """
    return [
        sharpness(
            model.config,
            model.params,
            plane_directions(key, model.params),
            batch,
            radii=radii,
        )
        for key in keys
    ]


def model_sharpness(model: Any, batch: Batch, seed: int, radius: float) -> float:
    """Loss rise at ``radius`` around ``model``, in its own filter-normalised plane.

    ``model``: a :class:`~nar_gap.model.model.Model` (config and params);
    the plane's directions are drawn from ``seed``.
    """
    directions = plane_directions(jax.random.PRNGKey(seed), model.params)
    rises = sharpness(model.config, model.params, directions, batch, radii=(radius,))
    return float(rises[radius])
