"""The fast training data: the same bytes as dm-clrs's path, drawn whole and ahead.

``stacked_train_batches`` replays dm-clrs's samplers and runs BFS,
Bellman-Ford and DFS as arrays (nar_gap.tasks.fast_*); every batch must equal
``train_batch``'s (dm-clrs's samplers, algorithms and probing) in every
array, dtype and shape, and the worker processes must hand the trainer the
same sequence as drawing in order.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from nar_gap.model.config import NetworkConfig
from nar_gap.tasks import fast_graphs, fast_sampling
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.defaults import TRAIN_LENGTHS, TRAIN_P
from nar_gap.tasks.fast_graphs import MAX_NODES, draw_graphs, stream_seeds
from nar_gap.tasks.fast_sampling import (
    FAST_ALGORITHMS,
    bucketed,
    stacked_train_batches,
    train_batches,
)
from nar_gap.tasks.sampling import _make_sampler, train_batch
from nar_gap.tasks.specs import ALGORITHMS, sampler_class
from nar_gap.training import feed
from nar_gap.training.config import TrainConfig
from nar_gap.training.shapes import pad_for_training

# The array path's own check against dm-clrs, kept before the fixture below
# replaces it.
AGREES_WITH_DM_CLRS = fast_sampling.agrees_with_dm_clrs


@pytest.fixture(autouse=True)
def compare_the_array_path_itself(monkeypatch):
    """The array path runs here even where its own check would set it aside.

    Otherwise a broken path would step aside (with a warning) and every test
    below would pass on dm-clrs's own batches; this way a failure names the
    probe and the place that differ.
    """
    monkeypatch.setattr(fast_sampling, "agrees_with_dm_clrs", lambda algorithm: True)


# Seeds at both ends of RandomState's range, and steps that visit every
# training length twice (lengths[step % 5]).
SEEDS = (0, 7, 2**32 - 1)
STEPS = range(2 * len(TRAIN_LENGTHS))
EDGE_PROBABILITIES = (*TRAIN_P, 0.0, 1.0)  # run.py's grid, and the two ends


def byte_differences(actual: Batch, expected: Batch) -> list[str]:
    """Each leaf (in pytree order, keys included) whose dtype, shape or bytes differ."""
    if jax.tree_util.tree_structure(actual) != jax.tree_util.tree_structure(expected):
        return [f"structure {jax.tree_util.tree_structure(actual)}"]
    differences = []
    for (path, got), want in zip(
        jax.tree_util.tree_flatten_with_path(actual)[0],
        jax.tree_util.tree_leaves(expected),
        strict=True,
    ):
        got, want = np.asarray(got), np.asarray(want)
        if (got.dtype, got.shape) != (want.dtype, want.shape):
            differences.append(
                f"{jax.tree_util.keystr(path)}: {got.dtype}{got.shape} "
                f"!= {want.dtype}{want.shape}"
            )
        elif got.tobytes() != want.tobytes():
            where = np.argwhere(got != want)[:3].tolist()
            differences.append(
                f"{jax.tree_util.keystr(path)}: values differ at {where}"
            )
    return differences


def assert_same_bytes(actual: Batch, expected: Batch, context: str = "") -> None:
    differences = byte_differences(actual, expected)
    assert not differences, f"{context}: " + "; ".join(differences)


# ------------------------------------------------------------- graphs replayed


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford", "dfs"])
@pytest.mark.parametrize("num_nodes", [2, 5, 16, MAX_NODES])
def test_replayed_graphs_are_the_dm_clrs_samplers_own(algorithm, num_nodes):
    seeds = stream_seeds(SEEDS, step=3)
    graphs = draw_graphs(
        sampler_class(algorithm).__name__, seeds, num_nodes, 3, EDGE_PROBABILITIES
    )
    assert graphs.exact.all()
    for lane, seed in enumerate(seeds):
        sampler = _make_sampler(algorithm, -1, num_nodes, int(seed), EDGE_PROBABILITIES)
        for sample in range(3):
            drawn = sampler._sample_data(*sampler._args, **sampler._kwargs)
            replayed = graphs.adjacency[lane, sample]
            assert replayed.dtype == drawn[0].dtype
            assert replayed.tobytes() == drawn[0].tobytes(), (lane, sample)
            if graphs.sources is not None:
                assert graphs.sources[lane, sample] == drawn[1]


def test_an_edge_draw_tied_on_its_first_word_is_decided_by_its_second():
    # The replay reads a double's second word only when the first ties with
    # the threshold (a 2**-27 chance per draw): force ties, against the full
    # 53-bit comparison numpy's C makes.
    rng = np.random.default_rng(0)
    num_nodes, cells = 4, 16
    words = rng.integers(0, 2**32, size=(2, 200), dtype=np.uint64)
    starts = np.array([[0, 40, 81], [3, 70, 120]])
    choices = rng.integers(0, len(TRAIN_P), size=starts.shape)
    thresholds = [fast_graphs.bernoulli_thresholds(p) for p in TRAIN_P]
    for (lane, sample), choice in np.ndenumerate(choices):
        above = thresholds[choice][0]
        for cell in range(0, cells, 3):
            tie = ((above >> 26) << 5) | int(rng.integers(32))
            words[lane, starts[lane, sample] + 2 * cell] = tie
    stream = fast_graphs._Stream(words, np.zeros(2, np.int64), np.ones(2, bool))
    drawn = fast_graphs._bernoulli_matrices(stream, starts, choices, TRAIN_P, num_nodes)
    for (lane, sample), choice in np.ndenumerate(choices):
        above, _, flipped = thresholds[choice]
        block = words[lane, starts[lane, sample] : starts[lane, sample] + 2 * cells]
        k = ((block[0::2] >> 5) << 26) | (block[1::2] >> 6)
        expected = (k > above) != flipped
        np.testing.assert_array_equal(drawn[lane, sample].reshape(-1), expected)


# -------------------------------------------------------- batches, byte for byte


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_train_batches_equal_train_batch_byte_for_byte(algorithm):
    # An algorithm without an array builder goes through train_batch itself:
    # one seed shows that it does.
    seeds = SEEDS if algorithm in FAST_ALGORITHMS else SEEDS[:1]
    for step in STEPS:
        fast = train_batches(algorithm, seeds, step)
        for seed, batch in zip(seeds, fast, strict=True):
            expected = train_batch(algorithm, seed, step)
            assert_same_bytes(batch, expected, f"{algorithm} seed {seed} step {step}")


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
@pytest.mark.parametrize("p", EDGE_PROBABILITIES)
def test_every_edge_probability_gives_dm_clrs_batches(algorithm, p):
    for step in range(len(TRAIN_LENGTHS)):
        fast = train_batches(algorithm, SEEDS[:2], step, p=(p,), batch_size=4)
        for seed, batch in zip(SEEDS, fast, strict=False):
            expected = train_batch(algorithm, seed, step, p=(p,), batch_size=4)
            assert_same_bytes(batch, expected, f"{algorithm} p={p} step {step}")


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
def test_other_sizes_and_options_give_dm_clrs_batches(algorithm):
    lengths = (2, 3, 33, MAX_NODES)
    for step, random_pos in enumerate((False, True, False, True)):
        options = {"lengths": lengths, "batch_size": 1, "random_pos": random_pos}
        (batch,) = train_batches(algorithm, (5,), step, **options)
        expected = train_batch(algorithm, 5, step, **options)
        assert_same_bytes(batch, expected, f"{algorithm} N={lengths[step]}")


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
def test_stacked_step_equals_padding_each_seed_for_training(algorithm):
    buckets = {"shape_buckets": ((8, 8), (16, 12), (16, 16)), "node_buckets": (8, 16)}
    for step in range(len(TRAIN_LENGTHS)):
        stacked = stacked_train_batches(
            algorithm, SEEDS, step, shape_for=bucketed(**buckets)
        )
        expected = pad_for_training(
            [train_batch(algorithm, seed, step) for seed in SEEDS],
            buckets["node_buckets"],
            (),
            buckets["shape_buckets"],
        )
        assert_same_bytes(stacked, expected, f"{algorithm} step {step}")


def test_a_lane_the_replay_loses_is_drawn_by_dm_clrs(monkeypatch):
    # One word per bounded draw: choice(p) over 9 values rejects 7 words in 16,
    # so most lanes lose track and the step must come from train_batch.
    monkeypatch.setattr(fast_graphs, "_WINDOW", 1)
    graphs = draw_graphs("BfsSampler", stream_seeds(SEEDS, 0), 4, 32, TRAIN_P)
    assert not graphs.exact.all()
    for seed, batch in zip(SEEDS, train_batches("bfs", SEEDS, 0), strict=True):
        assert_same_bytes(batch, train_batch("bfs", seed, 0), f"seed {seed}")


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
def test_the_array_path_passes_its_own_check(algorithm):
    AGREES_WITH_DM_CLRS.cache_clear()
    assert AGREES_WITH_DM_CLRS(algorithm)


def test_an_array_path_that_fails_its_own_check_is_not_used(monkeypatch):
    real = fast_sampling._BUILDERS["bfs"]

    def forgetful(graphs, frame_for):  # the source is missing from reach_h[0]
        trace = real(graphs, frame_for)
        trace.hints["reach_h"][:, 0] = 0
        return trace

    monkeypatch.setitem(fast_sampling._BUILDERS, "bfs", forgetful)
    monkeypatch.setattr(fast_sampling, "agrees_with_dm_clrs", AGREES_WITH_DM_CLRS)
    AGREES_WITH_DM_CLRS.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="differs from dm-clrs's"):
            (batch,) = train_batches("bfs", SEEDS[:1], 0)
        assert_same_bytes(batch, train_batch("bfs", SEEDS[0], 0), "dm-clrs's path")
    finally:
        AGREES_WITH_DM_CLRS.cache_clear()


# ------------------------------------------------------ the trainer's feed


def training_config(algorithm: str) -> TrainConfig:
    return TrainConfig(
        network=NetworkConfig(algorithm), seeds=(3, 1, 4), curriculum_steps=4
    )


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_seed_batches_are_the_same_bytes_with_the_fast_path_on_or_off(algorithm):
    config = training_config(algorithm)
    for step in range(6):  # the curriculum's sizes, then the full cycle
        assert_same_bytes(
            feed.seed_batches(config, step, fast=True),
            feed.seed_batches(config, step, fast=False),
            f"{algorithm} step {step}",
        )


def test_the_switch_turns_the_fast_path_off(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the fast path ran")

    monkeypatch.setattr(feed, "stacked_mixed_batches", refuse)
    monkeypatch.setenv(feed.FAST_SAMPLING_ENV, "0")
    feed.seed_batches(training_config("bfs"), 0)  # dm-clrs's path
    monkeypatch.delenv(feed.FAST_SAMPLING_ENV)
    with pytest.raises(AssertionError, match="fast path ran"):
        feed.seed_batches(training_config("bfs"), 0)


def test_workers_are_used_for_long_runs_and_when_asked(monkeypatch):
    config = training_config("bfs")  # 3 seeds
    monkeypatch.delenv(feed.SAMPLING_WORKERS_ENV, raising=False)
    assert feed.sampling_workers(config, 100) == 0  # too short to pay for them
    long_run = feed.WORKER_MIN_SEED_STEPS // len(config.seeds) + 1
    assert feed.sampling_workers(config, long_run) == min(
        max(feed.usable_cores() - 1, 0), feed.MAX_WORKERS
    )
    monkeypatch.setenv(feed.SAMPLING_WORKERS_ENV, "3")
    assert feed.sampling_workers(config, 100) == 3
    monkeypatch.setenv(feed.SAMPLING_WORKERS_ENV, "many")
    with pytest.raises(ValueError, match="NAR_GAP_SAMPLING_WORKERS"):
        feed.sampling_workers(config, 100)


def test_worker_processes_yield_the_serial_sequence_and_its_errors(monkeypatch):
    config = training_config("bfs")
    monkeypatch.setenv(feed.SAMPLING_WORKERS_ENV, "2")
    steps = [3, 4, 5, -1]  # alternating between the two workers; then an error
    stream = feed.draw_ahead(config, steps)
    for step in steps[:-1]:
        batch = next(stream)
        assert_same_bytes(batch, feed.seed_batches(config, step), f"step {step}")
    assert batch.inputs["A"].flags.writeable  # like any other numpy array
    with pytest.raises(ValueError, match="expected step >= 0, found -1"):
        next(stream)
    stream.close()
