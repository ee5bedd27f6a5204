"""The authors' fork's definitions against its formulas, computed by hand.

The fork (``LSaldyt/clrs``) defines the simplified pointer decoder (branch
``dfs_reverse``, ``decoders.py``) and the learned edge information (commit
cef64d2, ``processors.py``).  Each test sets the weights by hand on a graph of
N = 3 nodes and hidden width 2, and computes what the fork's formula gives
with plain numpy loops, not with the module.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nar_gap.model.config import NetworkConfig
from nar_gap.model.decoders import ForkPointerDecoder
from nar_gap.model.gatv2 import EdgeFeatures, GATv2

N, D = 3, 2
SIZE_LOCKED = {
    "use_edge_info": True,
    "edge_map": "fork",
    "simplify_decoders": True,
    "simple_pointer_decoder": "fork",
}


def _dense(kernel, bias):
    return {"kernel": jnp.asarray(kernel, jnp.float32), "bias": jnp.asarray(bias)}


def _fork_pointer_by_hand(h, k1, b1, k2, b2, scale):
    """logit[b, i, j] = -C max(p1_j, p2_j), p = h_i K + b (fork's decoders.py)."""
    batch, nodes, _ = h.shape
    out = np.zeros((batch, nodes, k1.shape[1]))
    for b in range(batch):
        for i in range(nodes):
            for j in range(k1.shape[1]):
                p1 = sum(h[b, i, c] * k1[c, j] for c in range(h.shape[2])) + b1[j]
                p2 = sum(h[b, i, c] * k2[c, j] for c in range(h.shape[2])) + b2[j]
                out[b, i, j] = -scale * max(p1, p2)
    return out


@pytest.mark.parametrize("scale", [1000.0, 2.5])
def test_fork_pointer_decoder_is_minus_c_max_of_two_maps_of_h_i(scale):
    h = np.array([[[0.5, -1.0], [2.0, 0.25], [-1.5, 1.0]]], np.float32)
    k1 = np.array([[1.0, -2.0, 0.5], [0.0, 1.0, -1.0]], np.float32)
    b1 = np.array([0.1, -0.2, 0.3], np.float32)
    k2 = np.array([[-1.0, 0.5, 2.0], [1.5, 0.0, 0.25]], np.float32)
    b2 = np.array([0.0, 0.4, -0.1], np.float32)
    params = {"linear_0": _dense(k1, b1), "linear_1": _dense(k2, b2)}
    got = ForkPointerDecoder(N, scale).apply({"params": params}, jnp.asarray(h))
    expected = _fork_pointer_by_hand(h, k1, b1, k2, b2, scale)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6 * scale)


def test_fork_pointer_decoder_turns_a_node_id_into_a_pointer():
    """The fork's own example: biases -j and +j give -C |x - j| for x in h_i."""
    ids = np.array([2.0, 0.0, 1.0], np.float32)  # node i points to ids[i]
    h = np.stack([ids, np.zeros(N, np.float32)], -1)[None]  # x in channel 0
    ones = np.array([[1.0] * N, [0.0] * N], np.float32)
    j = np.arange(N, dtype=np.float32)
    params = {"linear_0": _dense(ones, -j), "linear_1": _dense(-ones, j)}
    got = ForkPointerDecoder(N).apply({"params": params}, jnp.asarray(h))
    expected = -1000.0 * np.abs(ids[:, None] - j[None, :])
    np.testing.assert_allclose(got[0], expected, atol=1e-3)
    assert list(np.argmax(got[0], -1)) == [2, 0, 1]


def _hand_edges():
    """e_ij = x_ij k + b with one scalar x per pair (K = 1), D = 2 channels."""
    scalars = np.array(
        [[[0.0, 1.0, 2.0], [3.0, 0.0, -1.0], [0.5, 1.5, 0.0]]], np.float32
    )[..., None]  # [B, N, N, 1]
    kernel = np.array([[1.0, -0.5]], np.float32)
    bias = np.array([0.25, 0.5], np.float32)
    dense = scalars @ kernel + bias  # [B, N, N, D]
    edges = EdgeFeatures(jnp.asarray(scalars), jnp.asarray(kernel), jnp.asarray(bias))
    return edges, dense


def _fork_edge_by_hand(alpha, e, we2, be2, w, c):
    """d[b, h, i, f] = Σ_j w_j α[b, h, i, j] (e_ij We2 + be2)_f + c (cef64d2)."""
    batch, heads, nodes, _ = alpha.shape
    out = np.zeros((batch, nodes, heads, we2.shape[1]))
    for b in range(batch):
        for h in range(heads):
            for i in range(nodes):
                for f in range(we2.shape[1]):
                    total = c
                    for j in range(nodes):
                        eps = sum(e[b, i, j, k] * we2[k, f] for k in range(D))
                        total += w[j] * alpha[b, h, i, j] * (eps + be2[f])
                    out[b, i, h, f] = total
    return out


FORK_EDGE_WEIGHTS = {
    "edge_map": _dense([[1.0, 2.0], [-0.5, 0.75]], [0.1, -0.3]),
    "edge_senders": _dense([[0.5], [-1.0], [2.0]], [0.2]),
}


def test_fork_edge_map_is_a_learned_sum_over_the_sender_axis():
    edges, dense = _hand_edges()
    alpha = np.array(
        [[[[0.2, 0.3, 0.5], [0.0, 1.0, 0.0], [0.6, 0.0, 0.4]]]], np.float32
    )  # [B, H, N, N], rows sum to 1
    layer = GATv2(D, 1, use_edge_info=True, edge_map="fork", fork_num_nodes=N)
    got = layer.apply(
        {"params": FORK_EDGE_WEIGHTS},
        jnp.asarray(alpha),
        edges,
        method=lambda m, a, e: m._fork_edge_values(a, e),
    )
    w = FORK_EDGE_WEIGHTS
    expected = _fork_edge_by_hand(
        alpha,
        dense,
        np.asarray(w["edge_map"]["kernel"]),
        np.asarray(w["edge_map"]["bias"]),
        np.asarray(w["edge_senders"]["kernel"])[:, 0],
        float(w["edge_senders"]["bias"][0]),
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_fork_edge_values_are_added_to_the_step_before_the_activation():
    """A skip bias of 100 keeps the ReLU linear: the step moves by exactly d."""
    edges, dense = _hand_edges()
    rng = np.random.default_rng(0)
    node_fts = jnp.asarray(rng.standard_normal((1, N, D)), jnp.float32)
    graph_fts = jnp.asarray(rng.standard_normal((1, D)), jnp.float32)
    adjacency = jnp.asarray([[[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]])
    inputs = (node_fts, edges, graph_fts, adjacency, jnp.zeros_like(node_fts))
    plain = GATv2(D, 1, use_ln=False)
    params = dict(plain.init(jax.random.PRNGKey(0), *inputs)["params"])
    params["skip"] = {**params["skip"], "bias": jnp.full((D,), 100.0)}
    before = plain.apply({"params": params}, *inputs)
    fork = GATv2(D, 1, use_ln=False, use_edge_info=True, edge_map="fork")
    after = fork.clone(fork_num_nodes=N).apply(
        {"params": {**params, **FORK_EDGE_WEIGHTS}}, *inputs
    )
    w = FORK_EDGE_WEIGHTS
    d = _fork_edge_by_hand(
        np.asarray(before.attention),
        dense,
        np.asarray(w["edge_map"]["kernel"]),
        np.asarray(w["edge_map"]["bias"]),
        np.asarray(w["edge_senders"]["kernel"])[:, 0],
        float(w["edge_senders"]["bias"][0]),
    )[:, :, 0]
    np.testing.assert_allclose(after.hidden - before.hidden, d, rtol=1e-4, atol=1e-4)


def _batch(num_nodes):
    from nar_gap.data import sample_batch

    return sample_batch("bellman_ford", num_nodes=num_nodes, batch_size=2, seed=0)


def test_gradients_reach_every_weight_of_the_fork_forms():
    from nar_gap.model.losses import total_loss
    from nar_gap.model.network import Network, init_params

    config = NetworkConfig(
        "bellman_ford", hidden_size=4, fork_num_nodes=5, **SIZE_LOCKED
    )
    batch = _batch(5)
    params = jax.jit(lambda: init_params(config, batch))()
    loss = lambda p: total_loss(  # noqa: E731
        config, Network(config).apply({"params": p}, batch, repred=False), batch
    )[0]
    grads = jax.jit(jax.grad(loss))(params)["net"]
    for leaf in (
        grads["processor"]["edge_map"]["kernel"],
        grads["processor"]["edge_senders"]["kernel"],
        grads["processor"]["edge_senders"]["bias"],
        grads["decoder_pi"]["linear_0"]["kernel"],
        grads["decoder_pi"]["linear_1"]["kernel"],
    ):
        assert np.all(np.isfinite(leaf)) and np.any(leaf != 0)
    assert grads["decoder_pi"]["linear_0"]["kernel"].shape == (12, 5)  # N outputs


@pytest.mark.parametrize(
    "flags",
    [
        {"use_edge_info": True, "edge_map": "fork"},
        {"simplify_decoders": True, "simple_pointer_decoder": "fork"},
    ],
)
def test_a_size_locked_network_refuses_another_size_in_one_line(flags):
    from nar_gap.model.network import Network, init_params

    config = NetworkConfig("bellman_ford", hidden_size=4, fork_num_nodes=5, **flags)
    params = init_params(config, _batch(5))
    with pytest.raises(ValueError) as refused:
        Network(config).apply({"params": params}, _batch(6))
    message = str(refused.value)
    assert "\n" not in message
    assert "fork_num_nodes=5" in message and "batch of 6" in message


def test_size_locked_layers_refuse_another_size_in_one_line():
    h = jnp.zeros((1, N + 1, 4))
    with pytest.raises(ValueError, match="built for graphs of 3 nodes") as refused:
        ForkPointerDecoder(N).init(jax.random.PRNGKey(0), h)
    assert "\n" not in str(refused.value)
    edges, _ = _hand_edges()
    layer = GATv2(D, 1, use_edge_info=True, edge_map="fork", fork_num_nodes=N + 1)
    with pytest.raises(ValueError, match="built for graphs of 4 nodes .*, got 3"):
        layer.apply(
            {"params": FORK_EDGE_WEIGHTS},
            jnp.ones((1, 1, N, N)) / N,
            edges,
            method=lambda m, a, e: m._fork_edge_values(a, e),
        )


def test_the_forks_edge_map_is_defined_at_one_head_only():
    with pytest.raises(ValueError, match="edge_map='fork' needs num_heads=1"):
        NetworkConfig("bellman_ford", hidden_size=4, num_heads=2, **SIZE_LOCKED)
    NetworkConfig("bellman_ford", hidden_size=4, num_heads=2, edge_map="fork")
    assert NetworkConfig("bfs").size_locked == ()
    assert NetworkConfig("bfs", **SIZE_LOCKED).size_locked == (
        "edge_map='fork'",
        "simple_pointer_decoder='fork'",
    )


def test_the_processor_takes_every_option_from_the_network_config():
    """``Network`` hands its config to the layer (``GATv2.from_config``):
    each processor option is a config field of its name, so none is copied
    by hand or can be left behind (seen failing with a layer option the
    config lacks)."""
    import dataclasses

    own = {"kernel_init", "parent", "name", "edits"}  # edits: one run's interventions
    options = {f.name for f in dataclasses.fields(GATv2)} - own
    assert options <= {f.name for f in dataclasses.fields(NetworkConfig)}
    config = NetworkConfig(
        "bellman_ford", hidden_size=8, num_heads=2, use_ln=False,
        use_edge_info=True, edge_map="eqs_11_13", use_pre_att_bias=True,
        pre_att_bias_nodes=12, fork_num_nodes=9,
    )  # fmt: skip
    layer = GATv2.from_config(config, name="processor")
    assert {o: getattr(layer, o) for o in options} == {
        o: getattr(config, o) for o in options
    }
