"""``param_shapes`` traces once per config and batch shapes, and says the truth."""

from __future__ import annotations

import dataclasses

import jax

from nar_gap.data import sample_batch
from nar_gap.model import network
from nar_gap.model.config import NetworkConfig


def _traces(monkeypatch) -> list[int]:
    """Counts the traces of ``init_params`` that ``param_shapes`` makes."""
    calls: list[int] = []
    real = network.init_params

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(network, "init_params", counted)
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
    """Seen failing with the key reduced to the config: a batch of other
    shapes was answered from an earlier trace, not traced anew."""
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
    # the same config on graphs of other shapes: traced for them, not assumed
    network.param_shapes(
        NetworkConfig("bfs", hidden_size=4),
        sample_batch("bfs", num_nodes=9, batch_size=2, seed=0),
    )
    assert len(calls) == 5
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
