"""The minimality search: smaller networks that stay exact, and only those."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from nar_gap.compiler import compile_algorithm, minimal
from nar_gap.model.model import parameter_counts
from nar_gap.tasks.sampling import sample_batch


def _check(algorithm: str, n: int = 8, seed: int = 3):
    return [sample_batch(algorithm, n, 4, seed=seed, p=(p,)) for p in (0.1, 0.5)]


@pytest.fixture(scope="module")
def bfs_paper():
    return compile_algorithm("bfs", hidden_size=None, pre_att_bias_nodes=8)


def test_the_search_returns_a_smaller_network_that_stays_exact(bfs_paper):
    check = _check("bfs")
    found = minimal.search(bfs_paper, check)
    assert minimal.is_exact(found.model, found.model.params, check)
    before = parameter_counts(bfs_paper.params)["nonzero"]
    after = parameter_counts(found.model.params)["nonzero"]
    assert found.zeroed > 0 and after == before - found.zeroed
    assert found.model.config.hidden_size <= bfs_paper.config.hidden_size


def test_the_search_refuses_what_the_recheck_refuses(bfs_paper):
    """With the exactness re-check disabled the search removes everything,
    and the network it returns is not exact: the re-check is what refuses."""
    check = _check("bfs")
    always = lambda model, params, batches: True  # noqa: E731
    found = minimal.search(bfs_paper, check, exact=always)
    assert found.model.config.hidden_size == 1
    assert parameter_counts(found.model.params)["nonzero"] == 0
    assert not minimal.is_exact(found.model, found.model.params, check)


def test_a_network_that_is_not_exact_is_refused(bfs_paper):
    check = _check("bfs")
    params = jax.tree_util.tree_map(np.zeros_like, bfs_paper.params)
    broken = dataclasses.replace(bfs_paper, params=params)
    with pytest.raises(ValueError, match="not exact on the check graphs"):
        minimal.search(broken, check)


def test_zeroing_a_dimension_computes_what_dropping_it_does():
    """Without layer norm, a dimension whose weights are all zero is absent:
    the search's cheap trial is the smaller network's forward pass."""
    model = compile_algorithm("bellman_ford", hidden_size=None)
    batch = _check("bellman_ford")[0]
    d = model.config.hidden_size
    axes = minimal._axes(model, batch)
    for k in (0, d - 1):
        zeroed = minimal.zero_dimensions(model.params, axes, d, [k])
        dropped = minimal.drop_dimensions(model, [k], batch)
        assert dropped.config.hidden_size == d - 1
        a = model._forward(zeroed, batch)
        b = dropped.apply(batch)
        for name in a.outputs:
            np.testing.assert_allclose(
                np.asarray(a.outputs[name]),
                np.asarray(b.outputs[name]),
                rtol=1e-5,
                atol=1e-3,
            )


def test_unit_weight_graphs_need_the_tie_channel_that_sampled_graphs_never_use():
    """Why the search's pool holds unit-weight graphs of every family.

    Bellman-Ford's ``lowest_id`` channel breaks exact ties only.  Sampled
    weights are continuous, so without it the network still matches dm-clrs
    on sampled graphs; on the unit-weight graphs (exact ties) it does not,
    while the compiled network does.
    """

    model = compile_algorithm("bellman_ford", hidden_size=None)
    ties, left_out = minimal.tie_batches(model, 8, [500, 501])
    assert left_out == 0 and minimal.is_exact(model, model.params, ties)
    k = model.layout.pre_attention.index("lowest_id")
    without = minimal.drop_dimensions(model, [k], ties[0])
    sampled = _check("bellman_ford", n=16)
    assert minimal.is_exact(without, without.params, sampled)
    assert not minimal.is_exact(without, without.params, ties)
