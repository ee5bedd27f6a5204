"""Initial parameters are made from a batch's template: the same bits as from
the batch itself, one compilation for every batch of a configuration, and
the same refusals."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from nar_gap.data import sample_batch
from nar_gap.model import network
from nar_gap.model.config import NetworkConfig
from nar_gap.tasks.batch import shape_template

# Between them every option that adds, removes or reshapes a parameter: heads,
# edge maps, the pre-attention bias, the simplified and the fork's decoders,
# the state probe, message passing, layer norm, hint modes, encoder inits.
# DFS has a categorical hint (its trailing axis is kept), Bellman-Ford edge
# weights, and the last configuration is locked to its 6 nodes.
CONFIGS = [
    NetworkConfig(
        "dfs",
        hidden_size=4,
        num_heads=2,
        use_edge_info=True,
        edge_map="eqs_11_13",
        use_pre_att_bias=True,
        simplify_decoders=True,
        state_probe_size=2,
        msg_passing_steps=2,
        encoder_init="default",
    ),
    NetworkConfig(
        "bellman_ford", hidden_size=4, use_ln=False, hint_mode="decoded_only"
    ),
    NetworkConfig(
        "bfs",
        hidden_size=4,
        use_edge_info=True,
        edge_map="fork",
        simplify_decoders=True,
        simple_pointer_decoder="fork",
        fork_num_nodes=6,
    ),
]


def _from_the_batch_itself(config: NetworkConfig, batch, seed: int):
    """What ``init`` makes traced on ``batch``, not on its template."""
    init = jax.jit(
        lambda key, b: network.Network(config).init(
            network.init_rngs(key), b, repred=False
        )["params"]
    )
    return init(jax.random.PRNGKey(seed), batch)


def _same_bits(a, b) -> bool:
    if jax.tree_util.tree_structure(a) != jax.tree_util.tree_structure(b):
        return False
    return all(
        x.dtype == y.dtype and np.array_equal(x, y)
        for x, y in zip(
            jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True
        )
    )


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.algorithm)
def test_the_template_makes_the_parameters_the_batch_makes(config):
    """Seen failing with the template's trailing feature axes cut to one
    (DFS's categorical hint), and with the node count cut for the size-locked
    forms too (the fork's network then refuses its own template)."""
    nodes = 6 if config.size_locked else 7
    batch = sample_batch(config.algorithm, num_nodes=nodes, batch_size=3, seed=1)
    template = network.init_template(config, batch)
    assert (template.batch_size, template.num_steps) == (1, 1)
    assert template.num_nodes == (6 if config.size_locked else network.TEMPLATE_NODES)
    made = network.init_params(config, batch, seed=5)
    assert _same_bits(made, _from_the_batch_itself(config, batch, 5))


def test_every_batch_of_a_configuration_shares_one_compilation(monkeypatch):
    """Seen failing with ``init`` jitted on the batch: three traces, one per
    shape, each compiled."""
    config = NetworkConfig("bfs", hidden_size=3)  # a configuration of its own
    network.initializer.cache_clear()
    traced = []
    real = network.Network.init
    monkeypatch.setattr(
        network.Network, "init", lambda *a, **k: traced.append(1) or real(*a, **k)
    )
    for nodes, graphs in ((5, 2), (9, 4), (12, 1)):
        network.init_params(config, sample_batch("bfs", nodes, graphs, seed=0), 0)
    assert len(traced) == 1


def test_init_refuses_what_the_network_refuses():
    """The template keeps the node count where it decides: seen failing with
    it cut to four nodes for a bias too small (``init`` then succeeded)."""
    batch = sample_batch("bfs", num_nodes=7, batch_size=2, seed=0)
    locked = CONFIGS[2]
    with pytest.raises(ValueError, match="fork_num_nodes=6 nodes only"):
        network.init_params(locked, batch)
    small_bias = NetworkConfig(
        "bfs", hidden_size=3, use_pre_att_bias=True, pre_att_bias_nodes=5
    )
    with pytest.raises(ValueError, match="pre-attention bias is 5x5"):
        network.init_params(small_bias, batch)


def test_a_template_keeps_structure_and_dtypes_and_reads_abstract_leaves():
    batch = sample_batch("dfs", num_nodes=6, batch_size=2, seed=0)
    abstract = jax.tree_util.tree_map(
        lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype), batch
    )
    for source in (batch, abstract):
        made = shape_template(source, 3)
        assert jax.tree_util.tree_structure(made) == jax.tree_util.tree_structure(batch)
        for cut, whole in zip(
            jax.tree_util.tree_leaves(made),
            jax.tree_util.tree_leaves(batch),
            strict=True,
        ):
            assert cut.dtype == whole.dtype
    assert shape_template(batch, 3).hints["color"].shape == (1, 1, 3, 3)
    assert shape_template(batch, 3).inputs["A"].shape == (1, 3, 3)
