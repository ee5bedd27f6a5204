"""Batches (nar_gap.data): dm-clrs parity, determinism, padding rules, user graphs."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from nar_gap import data
from nar_gap.tasks import sampling
from nar_gap.tasks._clrs import clrs
from nar_gap.tasks.specs import ALGORITHMS, UnknownAlgorithmError, get_spec

GROUPS = ("inputs", "hints", "outputs")


def assert_batches_equal(actual: data.Batch, expected: data.Batch) -> None:
    """Same algorithm, keys in the same order, arrays equal in value and dtype."""
    assert actual.algorithm == expected.algorithm
    for group in GROUPS:
        got, want = getattr(actual, group), getattr(expected, group)
        assert list(got) == list(want), group
        for name in want:
            assert got[name].dtype == want[name].dtype, (group, name)
            np.testing.assert_array_equal(
                got[name], want[name], err_msg=f"{group} {name}"
            )
    np.testing.assert_array_equal(actual.lengths, expected.lengths)
    np.testing.assert_array_equal(actual.node_mask, expected.node_mask)


def one_sample(batch: data.Batch, index: int) -> data.Batch:
    """Sample ``index`` as a batch of one, hints cut to its own length."""
    length = int(batch.lengths[index])
    return data.Batch(
        algorithm=batch.algorithm,
        inputs={k: v[index : index + 1] for k, v in batch.inputs.items()},
        hints={k: v[:length, index : index + 1] for k, v in batch.hints.items()},
        outputs={k: v[index : index + 1] for k, v in batch.outputs.items()},
        lengths=batch.lengths[index : index + 1],
        node_mask=batch.node_mask[index : index + 1],
    )


def is_sorted_strictly(values: np.ndarray) -> bool:
    return bool(np.all(np.diff(values, axis=-1) > 0))


@pytest.fixture(scope="module")
def batches() -> dict[str, data.Batch]:
    return {name: data.sample_batch(name, 6, 5, seed=7) for name in ALGORITHMS}


# -------------------------------------------------------------- dm-clrs parity


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford", "dfs"])
def test_sample_batch_equals_dm_clrs_build_sampler_full_dataset(algorithm):
    sampler, _ = clrs.build_sampler(algorithm, num_samples=5, seed=7, length=6)
    expected = data.from_clrs_feedback(sampler.next(), algorithm)
    assert_batches_equal(data.sample_batch(algorithm, 6, 5, seed=7), expected)


def test_sample_batch_returns_samples_in_generation_order_not_resampled():
    # Generation is sequential, so a smaller batch is a prefix of a larger one.
    small = data.sample_batch("bellman_ford", 8, 3, seed=11)
    large = data.sample_batch("bellman_ford", 8, 9, seed=11)
    for index in range(3):
        assert_batches_equal(one_sample(large, index), one_sample(small, index))


@pytest.mark.parametrize(
    ("variant", "base"), [("bfs_seq", "bfs"), ("dfs_light", "dfs")]
)
def test_variants_see_the_same_graphs_and_give_the_same_output_as_their_base(
    batches, variant, base
):
    for group in ("inputs", "outputs"):
        for name, value in getattr(batches[base], group).items():
            np.testing.assert_array_equal(getattr(batches[variant], group)[name], value)


def test_variant_lengths_follow_their_formulas(batches):
    dfs_light = batches["dfs_light"]
    roots = (dfs_light.outputs["pi"] == np.arange(6)).sum(axis=1)
    np.testing.assert_array_equal(dfs_light.lengths, 2 * 6 + roots)
    bfs, bfs_seq = batches["bfs"], batches["bfs_seq"]
    out_edges = (bfs.inputs["A"] > 0).sum(axis=2)  # [B, N]
    reached = (
        bfs.hints["reach_h"]
        * (np.arange(bfs.num_steps) < bfs.lengths[:, None]).T[..., None]
    )
    expected = 1 + np.einsum("tbn,bn->b", reached, out_edges)
    np.testing.assert_array_equal(bfs_seq.lengths, expected)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_round_trip_through_clrs_feedback_gives_dm_clrs_arrays(algorithm):
    # The sampler sample_batch uses (equal to build_sampler's, tested above); the
    # variants have no dm-clrs sampler of their own.
    sampler = sampling._make_sampler(algorithm, 4, 7, 3, None)
    feedback = sampler.next()
    back = data.to_clrs_feedback(data.from_clrs_feedback(feedback, algorithm))
    pairs = [
        (back.features.inputs, feedback.features.inputs),
        (back.features.hints, feedback.features.hints),
        (back.outputs, feedback.outputs),
    ]
    for got, want in pairs:
        assert [p.name for p in got] == [p.name for p in want]
        for new, old in zip(got, want, strict=True):
            assert (new.location, new.type_) == (old.location, old.type_)
            assert new.data.dtype == old.data.dtype, new.name
            # A Batch holds float32, so scalars come back float32-rounded.
            rounded = old.data.astype(np.float32).astype(old.data.dtype)
            np.testing.assert_array_equal(new.data, rounded, err_msg=new.name)
    np.testing.assert_array_equal(back.features.lengths, feedback.features.lengths)
    assert back.features.lengths.dtype == feedback.features.lengths.dtype


def test_round_trip_is_exact_where_float32_is_exact():
    # bfs at N = 16: pos = i/16 and 0/1 data are all exact in float32.
    sampler, _ = clrs.build_sampler("bfs", num_samples=4, seed=0, length=16)
    feedback = sampler.next()
    back = data.to_clrs_feedback(data.from_clrs_feedback(feedback, "bfs"))
    for new, old in zip(
        jax.tree_util.tree_leaves(back),
        jax.tree_util.tree_leaves(feedback),
        strict=True,
    ):
        np.testing.assert_array_equal(new, old)


def test_to_clrs_feedback_rejects_padded_batches(batches):
    with pytest.raises(ValueError, match="padded batches cannot go to dm-clrs"):
        data.to_clrs_feedback(data.pad_batch(batches["bfs"], num_nodes=8))


def test_from_clrs_feedback_rejects_feedback_of_another_spec():
    sampler, _ = clrs.build_sampler("bfs", num_samples=2, seed=0, length=5)
    with pytest.raises(
        ValueError, match=r"expected input probes \['pos', 'A', 'adj'\]"
    ):
        data.from_clrs_feedback(sampler.next(), "dfs")
    with pytest.raises(UnknownAlgorithmError):
        data.from_clrs_feedback(sampler.next(), "bfs2")


# ------------------------------------------------------------- shapes and dtypes


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_batch_shapes_dtypes_and_key_order_follow_the_spec(batches, algorithm):
    batch = batches[algorithm]
    spec = get_spec(algorithm)
    size, nodes, steps = 5, 6, batch.num_steps
    assert (batch.batch_size, batch.num_nodes) == (size, nodes)
    assert steps == int(batch.lengths.max())
    names = [name for group in GROUPS for name in getattr(batch, group)]
    stage_rank = {"input": 0, "hint": 1, "output": 2}
    assert names == sorted(spec, key=lambda name: stage_rank[spec[name][0]])
    for group in GROUPS:
        for name, value in getattr(batch, group).items():
            _, location, type_ = spec[name]
            expected = ((steps,) if group == "hints" else ()) + (size,)
            expected += (nodes,) * {"node": 1, "edge": 2, "graph": 0}[location]
            expected += (3,) if type_ == "categorical" else ()
            assert value.shape == expected, (group, name)
            want = np.int32 if type_ == "pointer" else np.float32
            assert value.dtype == want, (group, name)
    assert batch.lengths.dtype == np.int32 and batch.lengths.shape == (size,)
    assert batch.node_mask.dtype == np.bool_ and batch.node_mask.all()


def test_batch_is_a_pytree_that_keeps_spec_order_through_jit(batches):
    batch = batches["bfs"]
    leaves = jax.tree_util.tree_leaves_with_path(batch)
    names = [jax.tree_util.keystr(path) for path, _ in leaves]
    assert names[:2] == [".inputs['pos']", ".inputs['s']"]
    assert names[-2:] == [".lengths", ".node_mask"]
    doubled = jax.jit(lambda b: jax.tree_util.tree_map(lambda x: x * 2, b))(batch)
    assert isinstance(doubled, data.Batch) and doubled.algorithm == "bfs"
    assert list(doubled.inputs) == ["pos", "s", "A", "adj"]
    np.testing.assert_array_equal(doubled.inputs["A"], 2 * batch.inputs["A"])


# ---------------------------------------------------------------- determinism


@pytest.mark.parametrize("random_pos", [False, True])
def test_sample_batch_is_determined_by_its_seed(random_pos):
    first = data.sample_batch("dfs", 5, 4, seed=5, random_pos=random_pos)
    assert_batches_equal(
        data.sample_batch("dfs", 5, 4, seed=5, random_pos=random_pos), first
    )
    other = data.sample_batch("dfs", 5, 4, seed=6, random_pos=random_pos)
    assert not np.array_equal(other.inputs["A"], first.inputs["A"])


def test_random_pos_keeps_node_order_changes_values_and_nothing_else():
    plain = data.sample_batch("bfs", 10, 6, seed=2)
    shuffled = data.sample_batch("bfs", 10, 6, seed=2, random_pos=True)
    pos = shuffled.inputs["pos"]
    assert is_sorted_strictly(pos) and pos.min() >= 0 and pos.max() < 1
    assert not np.allclose(pos, plain.inputs["pos"])
    np.testing.assert_array_equal(
        plain.inputs["pos"][0], (np.arange(10) / 10).astype(np.float32)
    )
    # process_random_pos semantics: N sorted uniforms per sample, from a seeded
    # RandomState that is not the sampler's own stream.
    stream = np.random.RandomState([2, sampling._RANDOM_POS_STREAM])
    expected = np.sort(stream.uniform(size=(6, 10)), axis=1).astype(np.float32)
    np.testing.assert_array_equal(pos, expected)
    for group in GROUPS:
        for name, value in getattr(plain, group).items():
            if name != "pos":
                np.testing.assert_array_equal(getattr(shuffled, group)[name], value)


def test_train_stream_cycles_the_lengths_one_batch_each():
    stream = data.TrainStream("bfs", seed=0, batch_size=4)
    sizes = [next(stream).num_nodes for _ in range(7)]
    assert sizes == [4, 7, 11, 13, 16, 4, 7]


def test_train_stream_defaults_are_the_papers():
    stream = data.TrainStream("bfs", seed=0)
    assert stream.lengths == (4, 7, 11, 13, 16) and stream.batch_size == 32
    assert stream.p == (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    batch = next(stream)
    assert batch.batch_size == 32
    pos = batch.inputs["pos"]
    assert is_sorted_strictly(pos) and not np.allclose(pos[0], np.arange(4) / 4)


def test_train_stream_is_determined_by_its_seed():
    def take(seed: int) -> list[data.Batch]:
        stream = data.TrainStream("dfs_light", seed=seed, batch_size=3, lengths=(4, 5))
        return [next(stream) for _ in range(4)]

    for got, want in zip(take(1), take(1), strict=True):
        assert_batches_equal(got, want)
    for got, want in zip(take(2), take(1), strict=True):
        assert not np.array_equal(got.inputs["pos"], want.inputs["pos"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lengths": ()}, "at least one training length"),
        ({"lengths": (4, 1)}, r"num_nodes .* >= 2, found 1"),
        ({"batch_size": 0}, "batch_size >= 1"),
        ({"p": (0.5, 1.5)}, "edge probabilities in"),
        ({"seed": -1}, r"seed in \[0, 2\*\*32\)"),
    ],
)
def test_train_stream_rejects_bad_arguments(kwargs, message):
    arguments = {"seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        data.TrainStream("bfs", **arguments)


def test_clrs_split_test_is_the_clrs30_test_set():
    batch = data.clrs_split("bfs", "test")
    assert (batch.batch_size, batch.num_nodes) == (32, 64)
    assert_batches_equal(batch, data.sample_batch("bfs", 64, 32, seed=3))
    with pytest.raises(ValueError, match="expected split 'train', 'val' or 'test'"):
        data.clrs_split("bfs", "validation")


# --------------------------------------------------------------------- padding


@pytest.fixture(scope="module")
def padded(batches) -> dict[str, data.Batch]:
    return {
        name: data.pad_batch(batch, num_nodes=9, num_steps=batch.num_steps + 4)
        for name, batch in batches.items()
    }


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_padding_then_slicing_back_gives_the_original(batches, padded, algorithm):
    batch, big = batches[algorithm], padded[algorithm]
    assert (big.num_nodes, big.num_steps) == (9, batch.num_steps + 4)
    spec = get_spec(algorithm)
    for group in GROUPS:
        for name, value in getattr(big, group).items():
            index = [slice(None)] * value.ndim
            first = 2 if group == "hints" else 1
            for axis in range(
                first, first + {"node": 1, "edge": 2, "graph": 0}[spec[name][1]]
            ):
                index[axis] = slice(0, 6)
            if group == "hints":
                index[0] = slice(0, batch.num_steps)
            np.testing.assert_array_equal(
                value[tuple(index)], getattr(batch, group)[name]
            )
    np.testing.assert_array_equal(big.lengths, batch.lengths)
    np.testing.assert_array_equal(big.node_mask, np.tile(np.arange(9) < 6, (5, 1)))


def test_padded_nodes_have_zero_scalars_masks_categoricals_and_no_edges(padded):
    big = padded["dfs"]
    for name in ("pos", "A", "adj"):
        value = big.inputs[name]
        assert not value[:, 6:].any(), name
        if value.ndim == 3:
            assert not value[:, :, 6:].any(), name  # no edges, not even self loops
    for name in ("color", "d", "f", "s", "u", "v", "s_last"):
        assert not big.hints[name][:, :, 6:].any(), name
    # mask_one hints keep their single 1 on a real node.
    np.testing.assert_array_equal(
        big.hints["s"][: padded["dfs"].lengths.min()].sum(-1), 1
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_padded_node_pointers_point_to_themselves_at_every_step(padded, algorithm):
    big = padded[algorithm]
    spec = get_spec(algorithm)
    for group in GROUPS:
        for name, value in getattr(big, group).items():
            if spec[name][2] == "pointer":
                np.testing.assert_array_equal(
                    value[..., 6:],
                    np.broadcast_to(np.arange(6, 9), value[..., 6:].shape),
                )
                assert value[..., :6].max() < 6, (
                    name
                )  # real nodes never point to padding


def test_padded_time_steps_are_zero_like_dm_clrs_time_padding(batches, padded):
    batch, big = batches["bellman_ford"], padded["bellman_ford"]
    past = slice(batch.num_steps, None)
    assert not big.hints["d"][past].any() and not big.hints["msk"][past].any()
    assert not big.hints["pi_h"][past][..., :6].any()  # real nodes point to node 0


def test_padding_in_either_order_or_twice_gives_the_same_batch(batches):
    batch = batches["bfs_seq"]
    once = data.pad_batch(batch, num_nodes=8, num_steps=batch.num_steps + 3)
    nodes_first = data.pad_batch(
        data.pad_batch(batch, num_nodes=8), num_steps=batch.num_steps + 3
    )
    steps_first = data.pad_batch(
        data.pad_batch(batch, num_steps=batch.num_steps + 3), num_nodes=8
    )
    assert_batches_equal(nodes_first, once)
    assert_batches_equal(steps_first, once)


def test_pad_batch_refuses_to_shrink(batches):
    with pytest.raises(ValueError, match="num_nodes=5 is smaller than the batch's 6"):
        data.pad_batch(batches["bfs"], num_nodes=5)
    with pytest.raises(ValueError, match="num_steps=0 is smaller"):
        data.pad_batch(batches["bfs"], num_steps=0)


def test_concat_batches_pads_time_to_the_longest_and_joins_samples(batches):
    short = data.sample_batch("bfs_seq", 6, 2, seed=1)
    joined = data.concat_batches([batches["bfs_seq"], short])
    steps = max(batches["bfs_seq"].num_steps, short.num_steps)
    assert (joined.batch_size, joined.num_steps) == (7, steps)
    assert_batches_equal(one_sample(joined, 5), one_sample(short, 0))
    assert_batches_equal(one_sample(joined, 0), one_sample(batches["bfs_seq"], 0))


def test_concat_batches_rejects_mismatches(batches):
    with pytest.raises(ValueError, match=r"same number of nodes, found \[6, 9\]"):
        data.concat_batches(
            [batches["bfs"], data.pad_batch(batches["bfs"], num_nodes=9)]
        )
    with pytest.raises(ValueError, match="one algorithm"):
        data.concat_batches([batches["bfs"], batches["bfs_seq"]])
    with pytest.raises(ValueError, match="at least one batch"):
        data.concat_batches([])


def test_stack_seeds_adds_a_leading_axis_that_vmap_can_take(batches):
    other = data.sample_batch("bellman_ford", 6, 5, seed=8)
    steps = max(other.num_steps, batches["bellman_ford"].num_steps)
    seeds = [
        data.pad_batch(b, num_steps=steps) for b in (batches["bellman_ford"], other)
    ]
    stacked = data.stack_seeds(seeds)
    assert stacked.inputs["A"].shape == (2, 5, 6, 6)
    assert stacked.hints["pi_h"].shape == (2, steps, 5, 6)
    assert (stacked.batch_size, stacked.num_nodes, stacked.num_steps) == (5, 6, steps)
    totals = jax.vmap(lambda b: b.lengths.sum())(stacked)
    np.testing.assert_array_equal(totals, [s.lengths.sum() for s in seeds])


def test_stack_seeds_names_the_leaf_whose_shapes_differ(batches):
    longer = data.pad_batch(batches["bfs"], num_steps=batches["bfs"].num_steps + 1)
    with pytest.raises(
        ValueError, match=r"hints\['reach_h'\]: batch 0 has \(\d+, 5, 6\)"
    ):
        data.stack_seeds([batches["bfs"], longer])


# ------------------------------------------------------------------ user graphs


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_batch_from_graph_equals_the_sampled_sample(batches, algorithm):
    batch = batches[algorithm]
    for index in range(batch.batch_size):
        weights = batch.inputs["A"][index].astype(np.float64)
        if algorithm == "bellman_ford":  # keep the float64 weights the sampler made
            sampler = sampling._make_sampler(algorithm, 5, 6, 7, (0.5,))
            weights = sampler.next().features.inputs[2].data[index]
        source = int(batch.inputs["s"][index].argmax()) if "s" in batch.inputs else None
        mine = data.batch_from_graph(algorithm, weights, source)
        assert_batches_equal(mine, one_sample(batch, index))


def test_batch_from_graph_treats_every_nonzero_weight_as_an_edge_for_bfs():
    weighted = np.array([[0, 2.5, 0], [2.5, 0, 0.1], [0, 0.1, 0]])
    batch = data.batch_from_graph("bfs", weighted, source=0)
    np.testing.assert_array_equal(batch.inputs["A"][0], weighted != 0)
    np.testing.assert_array_equal(batch.outputs["pi"][0], [0, 0, 1])
    kept = data.batch_from_graph("bellman_ford", weighted, source=np.int64(0))
    np.testing.assert_array_equal(kept.inputs["A"][0], weighted.astype(np.float32))


def test_batch_from_graph_handles_a_single_node():
    batch = data.batch_from_graph("dfs_light", [[0]])
    assert batch.inputs["adj"].shape == (1, 1, 1) and batch.inputs["adj"][0, 0, 0] == 1
    assert batch.hints["color"].shape == (3, 1, 1, 3) and batch.outputs["pi"].shape == (
        1,
        1,
    )


@pytest.mark.parametrize(
    ("algorithm", "weights", "source", "message"),
    [
        ("bfs", [[0, 1, 0], [1, 0, 1]], 0, r"square \(n, n\) .* found shape \(2, 3\)"),
        ("bfs", np.zeros((2, 2, 2)), 0, r"square .* found shape \(2, 2, 2\)"),
        ("bfs", np.zeros((0, 0)), 0, "at least one node"),
        ("bfs", [["a", "b"], ["c", "d"]], 0, "numeric"),
        ("bfs", [[0, np.nan], [1, 0]], 0, r"finite weights, found nan at \(0, 1\)"),
        ("bellman_ford", [[0, np.inf], [1, 0]], 0, "finite weights, found inf"),
        (
            "bellman_ford",
            [[0, -1], [-1, 0]],
            0,
            r"non-negative weights .* -1.0 at \(0, 1\)",
        ),
        ("bfs", np.eye(3), None, "bfs needs a source node"),
        ("bfs_seq", np.eye(3), 3, r"source 3 is out of range: expected 0..2"),
        ("bellman_ford", np.eye(3), -1, "source -1 is out of range"),
        ("bfs", np.eye(3), 1.5, "integer source node, found 1.5"),
        ("bfs", np.eye(3), True, "integer source node, found True"),
        ("dfs", np.eye(3), 0, "dfs takes no source node"),
        ("dfs_light", np.eye(3), 0, "dfs_light takes no source node"),
    ],
)
def test_batch_from_graph_rejects_bad_input_naming_the_problem(
    algorithm, weights, source, message
):
    with pytest.raises(data.GraphInputError, match=message) as error:
        data.batch_from_graph(algorithm, weights, source)
    assert isinstance(error.value, ValueError)


def test_batch_from_graph_rejects_an_unknown_algorithm():
    with pytest.raises(UnknownAlgorithmError, match="bfs_seq"):
        data.batch_from_graph("bfs-seq", np.eye(2), 0)


def test_train_batch_is_a_pure_function_of_seed_and_step():
    later = data.train_batch("bfs", 3, 7, batch_size=4)
    assert_batches_equal(later, data.train_batch("bfs", 3, 7, batch_size=4))
    stream = data.TrainStream("bfs", seed=3, batch_size=4, start=6)
    next(stream)
    assert_batches_equal(next(stream), later)
    other_seed = data.train_batch("bfs", 4, 7, batch_size=4)
    other_step = data.train_batch(
        "bfs", 3, 12, batch_size=4
    )  # same size (7 % 5 == 12 % 5)
    assert later.num_nodes == other_step.num_nodes == 11
    assert not np.array_equal(later.inputs["A"], other_seed.inputs["A"])
    assert not np.array_equal(later.inputs["A"], other_step.inputs["A"])
