"""Training through a list of steps: one run, its parameters seen at each step."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from nar_gap.model.config import NetworkConfig
from nar_gap.training import TrainConfig, load_current_params, train, train_through

# Four seeds at test_train.py's sizes.  Its acceptance run pads every trace to
# 16 steps; here two trace shapes are cheaper (this file 13.8 s against 18.5 s
# with one shape of 16, alone on 2 cores): it trains 4 steps, not 120.
CONFIG = TrainConfig(
    network=NetworkConfig("bfs", hidden_size=16),
    seeds=(4, 5, 6, 7),
    steps=99,  # ignored: train_through ends at its last step
    eval_every=0,
    checkpoint_every=0,
    test_num_nodes=16,
    node_buckets=(16,),
    time_buckets=(8, 16),
    shape_buckets=(),
)


def _same(a, b) -> bool:
    return all(
        np.array_equal(x, y)
        for x, y in zip(
            jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True
        )
    )


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The parameters of runs trained to 2 and to 4 steps in one go."""
    out = tmp_path_factory.mktemp("straight")
    params = {}
    for steps in (2, 4):
        train(
            dataclasses.replace(CONFIG, steps=steps), out / str(steps), progress=False
        )
        params[steps] = load_current_params(out / str(steps))
    return params


def test_each_step_sees_the_parameters_a_run_to_that_step_ends_with(straight, tmp_path):
    seen = {}
    train_through(
        CONFIG,
        tmp_path,
        [2, 4],
        lambda step, p: seen.setdefault(step, p),
        progress=False,
    )
    assert list(seen) == [2, 4]
    assert all(_same(seen[step], straight[step]) for step in (2, 4))


def test_skipped_steps_are_not_trained_to_and_a_run_past_a_step_is_refused(
    straight, tmp_path
):
    train(dataclasses.replace(CONFIG, steps=4), tmp_path, progress=False)
    seen = {}
    train_through(
        CONFIG,
        tmp_path,
        [2, 4],
        lambda step, p: seen.setdefault(step, p),
        progress=False,
        skip=lambda step: step == 2,
    )
    assert list(seen) == [4] and _same(seen[4], straight[4])
    with pytest.raises(ValueError, match=r"already trained to \[4\] steps; step 2"):
        train_through(CONFIG, tmp_path, [2, 4], lambda step, p: None, progress=False)


def test_steps_must_increase(tmp_path):
    with pytest.raises(ValueError, match="steps must increase"):
        train_through(CONFIG, tmp_path, [4, 2], lambda step, p: None)
    assert not any(tmp_path.iterdir())  # refused before training
