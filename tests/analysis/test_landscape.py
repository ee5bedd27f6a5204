"""Loss landscapes: filter normalisation, the centre, the grid, sharpness."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nar_gap
from nar_gap.analysis import landscape as ls
from nar_gap.model.config import NetworkConfig
from nar_gap.model.network import init_params
from nar_gap.tasks.sampling import sample_batch


@pytest.fixture(scope="module")
def setting():
    batch = sample_batch("bfs", 8, 4, seed=2)
    config = NetworkConfig("bfs", hidden_size=8)
    return config, init_params(config, batch, seed=3), batch


def test_each_filter_of_a_direction_has_the_norm_of_the_centres_filter(setting):
    _, params, _ = setting
    direction = ls.filter_normalised_direction(jax.random.PRNGKey(5), params)
    centre_norms = ls.filter_norms(params)
    direction_norms = ls.filter_norms(direction)
    checked = 0
    for path, c in jax.tree_util.tree_leaves_with_path(centre_norms):
        d = dict(jax.tree_util.tree_leaves_with_path(direction_norms))[path]
        np.testing.assert_allclose(np.asarray(d), np.asarray(c), rtol=1e-5, atol=1e-7)
        checked += 1
    assert checked > 10
    # biases and other 1-D parameters do not move
    for path, leaf in jax.tree_util.tree_leaves_with_path(direction):
        if leaf.ndim < 2:
            assert not np.any(np.asarray(leaf)), path


def _direction_in_one_program(key, centre):
    """The direction as it was drawn before: one jitted program for the tree."""
    leaves, tree = jax.tree_util.tree_flatten(centre)
    keys = jax.random.split(key, len(leaves))
    drawn = [
        ls._filter_normalise(jax.random.normal(k, leaf.shape, jnp.float32), leaf)
        for k, leaf in zip(keys, leaves, strict=True)
    ]
    return jax.tree_util.tree_unflatten(tree, drawn)


def test_a_direction_drawn_leaf_by_leaf_is_the_tree_wide_program_s(setting):
    """In the build ``run_all.sh`` uses (XLA's optimisations on), the draw
    leaf by leaf gives the bits one program for the whole tree gave, so the
    committed landscapes stand; the tests' build differs in last bits (an
    ulp in some leaves).  Seen failing with the leaves' keys reversed."""
    _, params, _ = setting
    key = jax.random.PRNGKey(7)
    before = jax.config.read("jax_disable_most_optimizations")
    # A program compiled in the tests' build stays in jit's cache across the
    # switch (seen: this test failing after the others in this file).
    ls._leaf_direction.clear_cache()
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        leafwise = ls.filter_normalised_direction(key, params)
        whole = jax.jit(_direction_in_one_program)(key, params)
    finally:
        jax.config.update("jax_disable_most_optimizations", before)
        ls._leaf_direction.clear_cache()
    pairs = zip(
        jax.tree_util.tree_leaves(leafwise),
        jax.tree_util.tree_leaves(whole),
        strict=True,
    )
    for mine, theirs in pairs:
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(theirs))


def test_zero_filters_of_a_compiled_model_stay_zero():
    model = nar_gap.compile("bfs", hidden_size=16)  # unused columns are zero
    direction = ls.filter_normalised_direction(jax.random.PRNGKey(0), model.params)
    kernel = np.asarray(model.params["net"]["processor"]["value"]["kernel"])
    moved = np.asarray(direction["net"]["processor"]["value"]["kernel"])
    zero_columns = ~np.any(kernel, axis=0)
    assert zero_columns.any() and not np.any(moved[:, zero_columns])


def test_the_landscape_at_its_centre_is_the_models_loss(setting):
    config, params, batch = setting
    land, _ = ls.loss_grid(config, params, batch, jax.random.PRNGKey(1), points=3)
    direct = float(ls.model_loss(config, params, batch))
    assert land.losses.shape == (3, 3)
    assert land.losses[1, 1] == pytest.approx(direct, rel=1e-5)
    assert land.centre_loss == pytest.approx(direct, rel=1e-5)


def test_grid_points_equal_losses_at_the_moved_parameters(setting):
    config, params, batch = setting
    land, (d1, d2) = ls.loss_grid(
        config, params, batch, jax.random.PRNGKey(1), radius=0.5, points=3
    )
    moved = jax.tree_util.tree_map(
        lambda c, a, b: c + 0.5 * a - 0.5 * b, params, d1, d2
    )
    assert land.losses[2, 0] == pytest.approx(
        float(ls.model_loss(config, moved, batch)), rel=1e-4
    )


# 32 graphs of 16 nodes have 7 hint steps, so S * B * N = 6 * 32 * 16 = 3072 and
# jaxlib 0.10.2's YNN fusion (jax-ml/jax#39103) gets lanes 10..15 of a chunk of
# 16 wrong: measured up to 10 % off there without the workaround.
FAILING_SIZE = {"num_nodes": 16, "batch_size": 32}


@pytest.fixture(scope="module")
def failing_size_setting():
    batch = sample_batch(
        "bfs", FAILING_SIZE["num_nodes"], FAILING_SIZE["batch_size"], 2
    )
    config = NetworkConfig("bfs", hidden_size=16)
    return config, init_params(config, batch, seed=3), batch


def test_a_grid_in_chunks_of_16_equals_the_grid_point_by_point(failing_size_setting):
    config, params, batch = failing_size_setting
    key = jax.random.PRNGKey(1)
    chunked, _ = ls.loss_grid(config, params, batch, key, points=5, chunk=16)
    alone, _ = ls.loss_grid(config, params, batch, key, points=5, chunk=1)
    np.testing.assert_allclose(chunked.losses, alone.losses, rtol=1e-5)


def test_every_grid_point_equals_its_loss_computed_alone(failing_size_setting):
    """The default chunking against each point's loss in a jit of its own."""
    config, params, batch = failing_size_setting
    land, (d1, d2) = ls.loss_grid(
        config, params, batch, jax.random.PRNGKey(1), points=5
    )
    alone = jax.jit(lambda p: ls.model_loss(config, p, batch))
    expected = np.array(
        [
            [float(alone(ls.plane_point(params, d1, d2, a, b))) for b in land.betas]
            for a in land.alphas
        ]
    )
    np.testing.assert_allclose(land.losses, expected, rtol=1e-5)


def test_the_compiled_minimum_is_sharper_than_a_random_point():
    batch = sample_batch("bfs", 8, 4, seed=2)
    model = nar_gap.compile("bfs", hidden_size=None)
    key = jax.random.PRNGKey(0)
    dirs = (
        ls.filter_normalised_direction(key, model.params),
        ls.filter_normalised_direction(jax.random.PRNGKey(1), model.params),
    )
    compiled = ls.sharpness(model.config, model.params, dirs, batch)[0.1]
    initial = init_params(model.config, batch, seed=0)
    init_dirs = tuple(
        ls.filter_normalised_direction(k, initial) for k in (key, key + 1)
    )
    at_init = ls.sharpness(model.config, initial, init_dirs, batch)[0.1]
    assert compiled > 10 * abs(at_init)
    assert float(ls.model_loss(model.config, model.params, batch)) < 1e-6


def test_landscapes_are_deterministic(setting):
    config, params, batch = setting
    first, _ = ls.loss_grid(config, params, batch, jax.random.PRNGKey(4), points=3)
    again, _ = ls.loss_grid(config, params, batch, jax.random.PRNGKey(4), points=3)
    assert np.array_equal(first.losses, again.losses)
    assert jnp.isfinite(first.centre_loss)


def test_sharpness_computed_with_the_grid_equals_sharpness_alone(setting):
    config, params, batch = setting
    land, directions = ls.loss_grid(
        config, params, batch, jax.random.PRNGKey(6), points=3, radii=(0.1, 0.5)
    )
    alone = ls.sharpness(config, params, directions, batch, radii=(0.1, 0.5))
    assert land.sharpness.keys() == alone.keys()
    for radius, rise in alone.items():
        assert land.sharpness[radius] == pytest.approx(rise, rel=1e-5, abs=1e-7)


@pytest.fixture
def bowl(monkeypatch):
    """``model_loss`` replaced by ``c * ||w - w0||^2``, the curvature ``c``
    read from the batch; the grid's cached jit is dropped before and after."""

    def loss(config, params, batch):
        return batch * jnp.sum((params["w"] - jnp.ones((2, 2))) ** 2)

    ls._grid_evaluator.cache_clear()
    monkeypatch.setattr(ls, "model_loss", loss)
    yield NetworkConfig("bfs", hidden_size=3)
    ls._grid_evaluator.cache_clear()


@pytest.mark.parametrize("curvature", [0.01, 1.0, 100.0])
def test_sharpness_of_a_quadratic_bowl_is_its_curvature_times_r_squared(
    bowl, curvature
):
    """Every filter of a direction has the centre's norm (columns of norm
    sqrt(2)), so on a circle of radius r the loss rises on average by
    c r^2 (|d1|^2 + |d2|^2) / 2 = 4 c r^2: a steeper bowl is sharper, a
    shallower one flatter, by exactly its curvature."""
    centre = {"w": jnp.ones((2, 2))}
    land, _ = ls.loss_grid(
        bowl,
        centre,
        jnp.float32(curvature),
        jax.random.PRNGKey(0),
        points=3,
        radii=(0.1, 0.5),
    )
    assert land.centre_loss == pytest.approx(0.0, abs=1e-12)
    for radius, rise in land.sharpness.items():
        assert rise == pytest.approx(4 * curvature * radius**2, rel=1e-4)


def test_sharpness_tells_the_sharper_of_two_bowls_either_way(bowl):
    centre = {"w": jnp.ones((2, 2))}
    key = jax.random.PRNGKey(0)
    directions = ls.plane_directions(key, centre)

    def sharp(curvature):
        return ls.sharpness(bowl, centre, directions, jnp.float32(curvature))[0.1]

    assert sharp(10.0) > sharp(1.0) > sharp(0.1) > 0
