"""``param_shapes`` traces once per config and template, and says the truth."""

from __future__ import annotations

import dataclasses

import jax
from draws import counted, initialiser_draws

from nar_gap.data import sample_batch
from nar_gap.model import network
from nar_gap.model.config import NetworkConfig


def _traces(monkeypatch) -> list[int]:
    """Counts the traces of ``init_params`` that ``param_shapes`` makes."""
    calls = counted(monkeypatch, "init_params", network)
    network._traced_param_shapes.cache_clear()
    return calls


def _shapes(tree) -> list:
    return [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(tree)]


def test_a_second_call_with_the_same_config_and_shapes_is_not_traced(monkeypatch):
    """Seen failing with the cache cleared on every call: two traces, not one."""
    calls = _traces(monkeypatch)
    config = NetworkConfig("bfs", hidden_size=4)
    first = network.param_shapes(
        config, sample_batch("bfs", num_nodes=6, batch_size=3, seed=0)
    )
    # other graphs of the same shapes: what a run's template read again is
    again = network.param_shapes(
        config, sample_batch("bfs", num_nodes=6, batch_size=3, seed=9)
    )
    assert len(calls) == 1
    assert _shapes(again) == _shapes(first)


def test_another_config_or_other_shapes_are_traced_and_answered_for_themselves(
    monkeypatch,
):
    """Seen failing with the template's nodes cut for the size-locked forms
    too: the fork's network then refuses its template."""
    calls = _traces(monkeypatch)
    batch = sample_batch("bfs", num_nodes=6, batch_size=3, seed=0)
    narrow = network.param_shapes(NetworkConfig("bfs", hidden_size=4), batch)
    wide = network.param_shapes(NetworkConfig("bfs", hidden_size=8), batch)
    assert _shapes(wide) != _shapes(narrow)
    # The fork's pointer decoder has one weight per node: its shapes follow
    # the config's size, and a batch of other shapes is traced anew.
    fork = NetworkConfig(
        "bfs", hidden_size=4, simplify_decoders=True, simple_pointer_decoder="fork"
    )
    six = network.param_shapes(dataclasses.replace(fork, fork_num_nodes=6), batch)
    seven = network.param_shapes(
        dataclasses.replace(fork, fork_num_nodes=7),
        sample_batch("bfs", num_nodes=7, batch_size=3, seed=0),
    )
    assert _shapes(six) != _shapes(seven)
    assert len(calls) == 4
    # the same config on graphs of other shapes shares their template's trace
    # (network.init_template), and its answer is the truth for them too
    nine = sample_batch("bfs", num_nodes=9, batch_size=2, seed=0)
    again = network.param_shapes(NetworkConfig("bfs", hidden_size=4), nine)
    assert len(calls) == 4
    raw = jax.eval_shape(
        lambda: network.Network(NetworkConfig("bfs", hidden_size=4)).init(
            network.init_rngs(jax.random.PRNGKey(0)), nine, repred=False
        )["params"]
    )
    assert _shapes(again) == _shapes(raw) == _shapes(narrow)
    # each answer is what tracing init itself gives
    for config, tree in (
        (NetworkConfig("bfs", hidden_size=8), wide),
        (dataclasses.replace(fork, fork_num_nodes=6), six),
    ):
        traced = jax.eval_shape(lambda c=config: network.init_params(c, batch, 0))
        assert _shapes(tree) == _shapes(traced)


def test_editing_a_returned_tree_changes_no_later_answer():
    """Seen failing with the cached tree itself returned: an empty ``net``."""
    config = NetworkConfig("bfs", hidden_size=4)
    batch = sample_batch("bfs", num_nodes=6, batch_size=3, seed=0)
    first = network.param_shapes(config, batch)
    first["net"].clear()
    assert network.param_shapes(config, batch)["net"]


# Every kind of parameter the network has: encoders and decoders (Linear), the
# processor's nn.Dense layers, its layer norm, factorised edge layers, attention
# heads, the pre-attention bias (GATv2's own param) and a state probe (Dense).
EVERY_KIND = NetworkConfig(
    "bfs",
    hidden_size=4,
    use_edge_info=True,
    use_pre_att_bias=True,
    pre_att_bias_nodes=6,
    state_probe_size=3,
)


def _abstract_params(config: NetworkConfig, batch) -> dict:
    return jax.eval_shape(
        lambda: network.Network(config).init(jax.random.PRNGKey(0), batch)["params"]
    )


def _trace_apply(config: NetworkConfig, params, batch) -> None:
    """A forward pass traced anew (not a cached jit), as a new graph size is."""
    jax.jit(
        lambda p, b: network.Network(config).apply({"params": p}, b, repred=True)
    ).trace(params, batch)


def test_a_forward_pass_traces_no_initialiser(monkeypatch):
    """Flax checks each parameter ``apply`` is given by tracing its
    initialiser (``jax.eval_shape``), every parameter on every trace of a
    forward pass: a third of the trace of a compiled DFS at a new graph size.
    The network's layers check the shape alone.  Seen failing with Flax's
    own ``param``: 42 draws traced by one forward pass."""
    draws = initialiser_draws(monkeypatch, ("truncated_normal",))
    batch = sample_batch("bfs", num_nodes=6, batch_size=2, seed=0)
    params = _abstract_params(EVERY_KIND, batch)
    assert draws  # init draws its kernels: the counter counts
    draws.clear()
    _trace_apply(EVERY_KIND, params, batch)
    assert draws == []


def test_parameters_of_the_wrong_shape_are_refused_by_flax_s_error():
    """The check the layers keep: a kernel one row short is Flax's
    ``ScopeParamShapeError`` naming it, for each kind of layer.  Seen failing
    with the existing parameter returned unchecked."""
    import flax.errors
    import pytest

    batch = sample_batch("bfs", num_nodes=6, batch_size=2, seed=0)
    params = _abstract_params(EVERY_KIND, batch)
    flat = flax.traverse_util.flatten_dict(params)
    kinds = {
        "Linear": next(k for k in flat if k[-2].startswith("encoder_")),
        "Dense": next(k for k in flat if k[-2] == "value"),
        "FactorisedDense": next(k for k in flat if k[-2] == "edge"),
        "VectorHead": next(k for k in flat if k[-2] == "head_0"),
        "LayerNorm": next(k for k in flat if k[-2] == "layer_norm"),
        "GATv2": next(k for k in flat if k[-1] == "pre_att_bias"),
    }
    for kind, path in kinds.items():
        leaf = flat[path]
        short = jax.ShapeDtypeStruct((leaf.shape[0] + 1, *leaf.shape[1:]), leaf.dtype)
        broken = flax.traverse_util.unflatten_dict({**flat, path: short})
        with pytest.raises(flax.errors.ScopeParamShapeError, match=path[-1]):
            _trace_apply(EVERY_KIND, broken, batch)
        assert kind  # named in the loop for a failure's traceback
