"""Seeds run one after another (lax.map) or batched (vmap): the same answers."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from nar_gap.model.seeds import each_seed, over_seeds


def _one(params, data, scale):
    return params["w"] @ data * scale, jnp.sum(params["w"])


@pytest.mark.parametrize("strategy", ["vmap", "map"])
def test_each_seed_maps_every_argument_over_the_seed_axis(strategy):
    rng = np.random.default_rng(0)
    params = {"w": jnp.asarray(rng.integers(-4, 4, (3, 2, 2)), jnp.float32)}
    data = jnp.asarray(rng.integers(-4, 4, (3, 2)), jnp.float32)
    scale = jnp.asarray([1.0, 2.0, 3.0])
    got = each_seed(_one, strategy)(params, data, scale)
    for k in range(3):
        want = _one({"w": params["w"][k]}, data[k], scale[k])
        np.testing.assert_array_equal(got[0][k], want[0])
        np.testing.assert_array_equal(got[1][k], want[1])


@pytest.mark.parametrize("strategy", ["vmap", "map"])
def test_over_seeds_shares_every_argument_but_the_parameters(strategy):
    params = {"w": jnp.arange(12.0).reshape(3, 2, 2)}
    data = jnp.asarray([1.0, -1.0])
    got = over_seeds(lambda p, d: p["w"] @ d, strategy)(params, data)
    np.testing.assert_array_equal(got, params["w"] @ data)
