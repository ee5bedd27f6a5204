"""Attention supervision against the compiled model (issue 18's loss term)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nar_gap.analysis.faithfulness import head_averaged, internal_distance
from nar_gap.model.config import NetworkConfig
from nar_gap.model.seeds import forward, init_stacked
from nar_gap.paper.experiments.runs import run_dir
from nar_gap.tasks.batch import stack_seeds
from nar_gap.tasks.sampling import sample_batch
from nar_gap.training import TrainConfig
from nar_gap.training.step import make_optimizer, make_train_step, step_key
from nar_gap.training.supervision import attention_kl, compiled_attention


@pytest.fixture(scope="module")
def bfs_batch():
    return sample_batch("bfs", 8, 4, seed=3)


def test_the_term_is_zero_on_the_compiled_attention_and_positive_otherwise(
    bfs_batch,
):
    target = compiled_attention("bfs", bfs_batch)
    args = (bfs_batch.lengths, bfs_batch.node_mask)
    assert float(attention_kl(target, target, *args)) == 0.0
    # Every head is pulled towards the one compiled head.
    two_heads = jnp.concatenate([target, target], axis=2)
    assert float(attention_kl(two_heads, target, *args)) == 0.0
    uniform = jnp.broadcast_to(
        jnp.asarray(bfs_batch.inputs["adj"], jnp.float32)[None, :, None], target.shape
    )
    uniform = uniform / jnp.sum(uniform, -1, keepdims=True)
    assert float(attention_kl(uniform, target, *args)) > 0.1
    permuted = jnp.roll(target, 1, axis=-1)  # every receiver's row shifted
    assert float(attention_kl(permuted, target, *args)) > 1.0


def test_padded_receivers_and_steps_do_not_count(bfs_batch):
    target = compiled_attention("bfs", bfs_batch)
    noisy = target.at[:, :, :, -1].set(1.0 / target.shape[-1])  # last receiver
    mask = np.array(bfs_batch.node_mask)
    mask[:, -1] = False
    assert float(attention_kl(noisy, target, bfs_batch.lengths, mask)) == 0.0


def _internal(config, params, batch) -> float:
    out = forward(config.network)(params, batch)
    compiled = compiled_attention("bfs", batch)
    return float(
        internal_distance(
            head_averaged(out.attention),
            head_averaged(compiled),
            batch.lengths,
            batch.node_mask,
        )["distance"]
    )


def test_training_with_the_term_moves_attention_towards_compiled(bfs_batch):
    """On a fixed batch, 40 steps with the attention term lower Eq. 24's
    distance to compiled far more than the same steps without it."""
    base = TrainConfig(NetworkConfig("bfs", hidden_size=16), seeds=(0,), batch_size=4)
    batches = stack_seeds([bfs_batch])
    distances = {}
    for weight in (0.0, 1.0):
        config = dataclasses.replace(base, attention_weight=weight)
        params = init_stacked(config.network, bfs_batch, config.seeds)
        optimizer = make_optimizer(config)
        opt_state = jax.vmap(optimizer.init)(params)
        step = make_train_step(config)
        start = _internal(config, jax.tree.map(lambda x: x[0], params), bfs_batch)
        for t in range(40):
            keys = jnp.stack([step_key(0, t)])
            params, opt_state, _, finite = step(params, opt_state, batches, keys)
            assert bool(finite[0])
        distances[weight] = (
            start,
            _internal(config, jax.tree.map(lambda x: x[0], params), bfs_batch),
        )
    (start, plain), (_, supervised) = distances[0.0], distances[1.0]
    print(
        f"internal distance: start {start:.3f}, plain {plain:.3f}, "
        f"supervised {supervised:.3f}"
    )
    assert supervised < 0.8 * start
    assert supervised < plain - 0.1


def test_the_weight_is_checked_and_left_out_of_old_run_hashes(tmp_path):
    network = NetworkConfig("bfs", hidden_size=8)
    with pytest.raises(ValueError, match="attention_weight must be >= 0"):
        TrainConfig(network, attention_weight=-1.0)
    with pytest.raises(ValueError, match="needs a compiled dfs"):
        TrainConfig(NetworkConfig("dfs", hidden_size=8), attention_weight=1.0)
    plain = TrainConfig(network)
    assert run_dir(plain, tmp_path) == run_dir(
        dataclasses.replace(plain, attention_weight=0.0), tmp_path
    )
    assert run_dir(plain, tmp_path) != run_dir(
        dataclasses.replace(plain, attention_weight=1.0), tmp_path
    )


def test_the_state_term_is_zero_when_the_probe_reads_compiled_variables(bfs_batch):
    """The compiled model's own hidden state, probed by the matrix that picks
    its variables' dimensions, costs exactly 0; any other probe costs more."""
    from nar_gap.compiler import compile_algorithm
    from nar_gap.training.supervision import compiled_state, state_mse

    model = compile_algorithm("bfs", hidden_size=None)
    hiddens = np.asarray(model.apply(bfs_batch).hiddens)
    picks = np.zeros((model.layout.hidden_size, len(model.layout.variables)))
    for k, variable in enumerate(model.layout.variables):
        picks[model.layout.hidden_index(variable), k] = 1.0
    target = compiled_state("bfs", bfs_batch)
    args = (bfs_batch.lengths, bfs_batch.node_mask)
    assert float(state_mse(jnp.asarray(hiddens @ picks), target, *args)) == 0.0
    wrong = hiddens @ np.roll(picks, 1, axis=1)  # variables swapped round
    assert float(state_mse(jnp.asarray(wrong), target, *args)) > 0.01
    with pytest.raises(ValueError, match="with_state_probe"):
        state_mse(jnp.asarray(hiddens), target, *args)


def test_a_network_with_a_state_probe_trains_the_state_term(bfs_batch):
    from nar_gap.training.supervision import with_state_probe

    network = with_state_probe(NetworkConfig("bfs", hidden_size=16))
    assert network.state_probe_size == 3  # reached_not_source, pi_open, pi_closed
    with pytest.raises(ValueError, match="needs a state probe"):
        TrainConfig(NetworkConfig("bfs", hidden_size=16), state_weight=1.0)
    config = TrainConfig(network, seeds=(0,), batch_size=4, state_weight=1.0)
    params = init_stacked(network, bfs_batch, config.seeds)
    assert "state_probe" in params
    optimizer = make_optimizer(config)
    opt_state = jax.vmap(optimizer.init)(params)
    step = make_train_step(config)
    losses = []
    for t in range(10):
        params, opt_state, loss, finite = step(
            params, opt_state, stack_seeds([bfs_batch]), jnp.stack([step_key(0, t)])
        )
        assert bool(finite[0])
        losses.append(float(loss[0]))
    assert losses[-1] < losses[0]


def test_an_annealed_weight_reaches_zero_and_a_zero_scale_is_plain_training(
    bfs_batch,
):
    """``supervision_until`` decays the weights linearly to 0; a step at
    scale 0 is the plain step exactly, at scale 1 the constant-weight one."""
    network = NetworkConfig("bfs", hidden_size=16)
    config = TrainConfig(
        network, seeds=(0,), batch_size=4, attention_weight=1.0, supervision_until=10
    )
    scales = [config.supervision_scale(s) for s in (0, 5, 10, 50)]
    assert scales == [1.0, 0.5, 0.0, 0.0]
    assert TrainConfig(network).supervision_scale(10_000) == 1.0
    with pytest.raises(ValueError, match="supervision_until must be >= 0"):
        TrainConfig(network, supervision_until=-1)
    step = dataclasses.replace(config, supervision_schedule="step")
    assert [step.supervision_scale(s) for s in (0, 9, 10, 50)] == [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="supervision_schedule must be one of"):
        TrainConfig(network, supervision_schedule="cosine")

    params = init_stacked(network, bfs_batch, config.seeds)
    batch, keys = stack_seeds([bfs_batch]), jnp.stack([step_key(0, 0)])

    def one_step(cfg, scales=None):
        opt_state = jax.vmap(make_optimizer(cfg).init)(params)
        copy = jax.tree.map(jnp.copy, params)
        return make_train_step(cfg)(copy, opt_state, batch, keys, scales)[2]

    plain = one_step(dataclasses.replace(config, attention_weight=0.0))
    unscaled = one_step(config)
    assert float(one_step(config, jnp.zeros(1))[0]) == float(plain[0])
    assert float(one_step(config, jnp.ones(1))[0]) == float(unscaled[0])
    assert float(unscaled[0]) > float(plain[0])


def test_a_length_curriculum_adds_one_size_per_stage():
    network = NetworkConfig("bfs", hidden_size=8)
    config = TrainConfig(network, train_lengths=(4, 7, 11), curriculum_steps=30)
    assert [config.lengths_at(s) for s in (0, 9, 10, 25, 30, 99)] == [
        (4,),
        (4,),
        (4, 7),
        (4, 7, 11),
        (4, 7, 11),
        (4, 7, 11),
    ]
    assert TrainConfig(network).lengths_at(0) == TrainConfig(network).train_lengths
    plain = TrainConfig(network)
    assert run_dir(plain, "runs") == run_dir(
        dataclasses.replace(plain, curriculum_steps=0, supervision_until=0), "runs"
    )
