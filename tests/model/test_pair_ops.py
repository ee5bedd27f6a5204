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


def _gatv2_inputs(batch=2, nodes=5, width=8, scalars=3, seed=0):
    from nar_gap.model.gatv2 import EdgeFeatures

    keys = jax.random.split(jax.random.PRNGKey(seed), 6)
    adjacency = (jax.random.uniform(keys[0], (batch, nodes, nodes)) < 0.5).astype(
        jnp.float32
    )
    adjacency = jnp.maximum(adjacency, jnp.eye(nodes)[None])
    edges = EdgeFeatures(
        jax.random.normal(keys[1], (batch, nodes, nodes, scalars)),
        jax.random.normal(keys[2], (scalars, width)),
        jax.random.normal(keys[3], (width,)),
    )
    node_fts = jax.random.normal(keys[4], (batch, nodes, width))
    graph_fts = jax.random.normal(keys[5], (batch, width))
    return node_fts, edges, graph_fts, adjacency, jnp.zeros_like(node_fts)


def test_eqs_11_13_edge_map_is_the_papers_equations_11_to_13():
    """Σ_j α^h_ij (W_ε e_ij + b_ε)^h, computed on the dense edge tensor,
    equals the factorised module; with W_ε = b_ε = 0 the step is the plain one."""
    from nar_gap.model.gatv2 import GATv2

    inputs = _gatv2_inputs()
    width, heads = 8, 2
    learned = GATv2(width, heads, use_edge_info=True, edge_map="eqs_11_13")
    variables = learned.init(jax.random.PRNGKey(1), *inputs)
    params = variables["params"]
    assert params["edge_map"]["kernel"].shape == (width, width)
    params = {
        **params,
        "edge_map": {
            "kernel": params["edge_map"]["kernel"],
            "bias": jax.random.normal(jax.random.PRNGKey(2), (width,)),
        },
    }
    attention = learned.apply({"params": params}, *inputs).attention  # [B,H,N,N]
    got = learned.apply(
        {"params": params},
        attention,
        inputs[1],
        method=lambda m, a, e: m._edge_map_values(a, e),
    )
    batch, nodes = inputs[0].shape[:2]
    epsilon = (
        inputs[1].dense() @ params["edge_map"]["kernel"] + params["edge_map"]["bias"]
    )
    epsilon = epsilon.reshape(batch, nodes, nodes, heads, width // heads)
    expected = jnp.einsum("bhij,bijhf->bihf", attention, epsilon)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)

    zero = jax.tree_util.tree_map(jnp.zeros_like, params["edge_map"])
    plain = GATv2(width, heads)
    without = {k: v for k, v in params.items() if k != "edge_map"}
    np.testing.assert_allclose(
        learned.apply({"params": {**params, "edge_map": zero}}, *inputs).hidden,
        plain.apply({"params": without}, *inputs).hidden,
        rtol=1e-6,
        atol=1e-6,
    )


def test_bilinear_simplified_pointer_decoders_have_no_edge_term():
    from nar_gap.data import sample_batch
    from nar_gap.model.config import NetworkConfig
    from nar_gap.model.decoders import BilinearPointerDecoder
    from nar_gap.model.network import param_shapes

    batch = sample_batch("bfs", num_nodes=6, batch_size=3, seed=0)
    simple = param_shapes(
        NetworkConfig("bfs", hidden_size=4, simplify_decoders=True), batch
    )
    full = param_shapes(NetworkConfig("bfs", hidden_size=4), batch)
    assert sorted(simple["net"]["decoder_pi"]) == ["linear_0", "linear_1"]  # no W3, w4
    assert sorted(full["net"]["decoder_pi"]) == [f"linear_{k}" for k in range(4)]

    h = jax.random.normal(jax.random.PRNGKey(3), (2, 5, 12))
    decoder = BilinearPointerDecoder(4)
    params = decoder.init(jax.random.PRNGKey(0), h)["params"]
    got = decoder.apply({"params": params}, h)
    w1, w2 = params["linear_0"], params["linear_1"]
    p1 = h @ w1["kernel"] + w1["bias"]
    p2 = h @ w2["kernel"] + w2["bias"]
    np.testing.assert_allclose(got, np.einsum("bid,bjd->bij", p1, p2), rtol=1e-5)
