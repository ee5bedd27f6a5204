"""Family graphs mixed into training batches (``nar_gap.tasks.mixing``)."""

from __future__ import annotations

import numpy as np
import pytest

from nar_gap.tasks import mixing
from nar_gap.tasks._clrs import clrs
from nar_gap.tasks.batch import pad_batch, stack_seeds
from nar_gap.tasks.fast_sampling import _same_bytes, bucketed
from nar_gap.tasks.mixing import (
    family_graphs,
    family_train_batch,
    mixed_train_batch,
    stacked_mixed_batches,
)
from nar_gap.tasks.sampling import train_batch


def _sample(batch, k: int) -> dict[str, np.ndarray]:
    """Sample ``k``'s graph, source, and its trace cut to its length."""
    steps = int(batch.lengths[k])
    hints = {name: np.asarray(v)[:steps, k] for name, v in batch.hints.items()}
    return {
        "A": np.asarray(batch.inputs["A"])[k],
        "source": int(np.argmax(np.asarray(batch.inputs["s"])[k])),
        "pos": np.asarray(batch.inputs["pos"])[k],
        **hints,
        **{name: np.asarray(v)[k] for name, v in batch.outputs.items()},
    }


@pytest.mark.parametrize(
    ("share", "batch_size", "expected"),
    [(0.0, 32, 0), (0.25, 32, 8), (0.01, 4, 1), (1.0, 5, 5), (0.5, 3, 2)],
)
def test_a_share_takes_a_whole_number_of_graphs_at_least_one(
    share, batch_size, expected
):
    assert family_graphs(share, batch_size) == expected


def test_path_graphs_are_paths_with_shuffled_ids_and_dm_clrs_s_trace():
    """Seen failing with the ids left unshuffled and with ``pos`` left at i/n."""
    n, count = 9, 6
    batch = family_train_batch("bfs", ("path",), 3, 2, num_nodes=n, count=count)
    along = []
    for k in range(count):
        sample = _sample(batch, k)
        edges = (sample["A"] != 0) & ~np.eye(n, dtype=bool)
        np.testing.assert_array_equal(edges, edges.T)
        assert edges.sum() == 2 * (n - 1) and edges.sum(1).max() == 2
        along.append(all(edges[i, i + 1] for i in range(n - 1)))
        _, probes = clrs.algorithms.bfs(sample["A"], sample["source"])
        reach_h = np.asarray(probes["hint"]["node"]["reach_h"]["data"])
        pi_h = np.asarray(probes["hint"]["node"]["pi_h"]["data"])
        assert int(batch.lengths[k]) == len(reach_h)
        np.testing.assert_array_equal(sample["reach_h"], reach_h)
        np.testing.assert_array_equal(sample["pi_h"], pi_h)
        np.testing.assert_array_equal(sample["pi"], pi_h[-1])
        assert np.all(np.diff(sample["pos"]) > 0) and 0 <= sample["pos"].min()
        assert not np.allclose(sample["pos"], np.arange(n) / n)
    assert not all(along)


def test_families_take_turns_and_bellman_ford_keeps_dm_clrs_s_weights():
    families = ("path", "grid", "tree")
    batch = family_train_batch("bellman_ford", families, 0, 0, num_nodes=9, count=6)
    degrees = []
    for k in range(6):
        sample = _sample(batch, k)
        weights = sample["A"]
        assert np.all((weights == 0) | (weights >= np.sqrt(1e-3) - 1e-7))
        edges = (weights != 0) & ~np.eye(9, dtype=bool)
        degrees.append(int(edges.sum(1).max()))
        _, probes = clrs.algorithms.bellman_ford(weights, sample["source"])
        expected = np.asarray(probes["output"]["node"]["pi"]["data"])
        np.testing.assert_array_equal(sample["pi"], expected)
    assert degrees[0] == degrees[3] == 2  # the paths
    assert degrees[1] == degrees[4] == 4  # the 3 x 3 grids' centre


def test_a_family_batch_is_a_pure_function_of_seed_and_step():
    def draw(seed, step):
        return family_train_batch("bfs", ("tree",), seed, step, num_nodes=7, count=3)

    assert _same_bytes(draw(1, 4), draw(1, 4))
    assert not _same_bytes(draw(1, 4), draw(1, 5))
    assert not _same_bytes(draw(1, 4), draw(2, 4))


def test_a_mixed_batch_is_the_sampler_s_draw_then_the_families():
    options = {"lengths": (5, 8), "batch_size": 8, "p": (0.2, 0.6)}
    mixed = mixed_train_batch(
        "bfs", 7, 1, families=("path", "tree"), share=0.25, **options
    )
    drawn = train_batch("bfs", 7, 1, **{**options, "batch_size": 6})
    part = family_train_batch(
        "bfs", ("path", "tree"), 7, 1, num_nodes=8, count=2, p=(0.2, 0.6)
    )
    assert mixed.batch_size == 8 and mixed.num_nodes == 8
    for k in range(6):
        for name, value in _sample(drawn, k).items():
            np.testing.assert_array_equal(_sample(mixed, k)[name], value)
    for k in range(2):
        for name, value in _sample(part, k).items():
            np.testing.assert_array_equal(_sample(mixed, 6 + k)[name], value)
    plain = mixed_train_batch("bfs", 7, 1, families=(), share=0.0, **options)
    assert _same_bytes(plain, train_batch("bfs", 7, 1, **options))
    whole = mixed_train_batch("bfs", 7, 1, families=("path",), share=1.0, **options)
    assert whole.batch_size == 8 and int(whole.lengths.min()) >= 4


@pytest.mark.parametrize(
    ("families", "count", "message"),
    [
        (("paths",), 2, "graph families among"),
        ((), 2, "graph families"),
        (("path",), 0, "count"),
    ],
)
def test_bad_family_arguments_say_what_is_wrong(families, count, message):
    with pytest.raises(ValueError, match=message):
        family_train_batch("bfs", families, 0, 0, num_nodes=5, count=count)


MIXED = {"lengths": (4, 7, 16), "batch_size": 6, "p": (0.1, 0.5)}
PADDED = bucketed((), (8, 16), (8, 16, 32))
SEEDS = (0, 7, 2**32 - 1)


def _seed_by_seed(algorithm, step, families, share, random_pos):
    """Each seed's ``mixed_train_batch`` (dm-clrs traces), padded and stacked."""
    batches = [
        mixed_train_batch(
            algorithm,
            seed,
            step,
            families=families,
            share=share,
            random_pos=random_pos,
            **MIXED,
        )
        for seed in SEEDS
    ]
    nodes, steps = PADDED(batches[0].num_nodes, max(b.num_steps for b in batches))
    return stack_seeds(
        [pad_batch(b, num_nodes=nodes, num_steps=steps) for b in batches]
    )


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford", "dfs", "dfs_light"])
@pytest.mark.parametrize(
    ("step", "families", "share", "random_pos"),
    [
        (0, ("path", "tree", "grid"), 0.25, True),
        (1, ("power_law", "barbell"), 0.5, False),
        (2, ("geometric", "two_blocks"), 1.0, True),
        (2, ("er_sparse", "path"), 0.75, True),
    ],
)
def test_a_mixed_step_traced_as_arrays_is_the_same_bytes_as_dm_clrs_s(
    monkeypatch, algorithm, step, families, share, random_pos
):
    """The family graphs traced as arrays beside the sampled ones, against each
    seed's batch traced by dm-clrs graph by graph.  Seen failing with the two
    parts' ``pos`` joined in the wrong order, every lane given the first
    seed's sources, Bellman-Ford's family weights dropped (edges as weights),
    and unrandomised ``pos`` as i / (N - 1)."""
    slow = _seed_by_seed(algorithm, step, families, share, random_pos)

    def refuse(*args, **kwargs):
        raise AssertionError("a family graph went through dm-clrs")

    monkeypatch.setattr(mixing, "batch_from_graph", refuse)  # the arrays must do
    fast = stacked_mixed_batches(
        algorithm,
        SEEDS,
        step,
        families=families,
        share=share,
        random_pos=random_pos,
        shape_for=PADDED,
        **MIXED,
    )
    assert _same_bytes(fast, slow)


def test_a_step_without_array_traces_goes_through_dm_clrs_whole(monkeypatch):
    """``bfs_seq`` has no array builder, and a step whose sampler replay was lost
    cannot be traced as arrays: both are each seed's ``mixed_train_batch``."""
    options = {"families": ("path", "tree"), "share": 0.5, "shape_for": PADDED}
    fast = stacked_mixed_batches("bfs_seq", SEEDS, 1, **options, **MIXED)
    assert _same_bytes(fast, _seed_by_seed("bfs_seq", 1, ("path", "tree"), 0.5, True))
    monkeypatch.setattr(mixing, "sampled_graphs", lambda *args: None)
    fast = stacked_mixed_batches("bfs", SEEDS, 1, **options, **MIXED)
    assert _same_bytes(fast, _seed_by_seed("bfs", 1, ("path", "tree"), 0.5, True))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"step": -1}, "step >= 0"),
        ({"batch_size": 0}, "batch_size >= 1"),
        ({"seeds": ()}, "at least one seed"),
        ({"lengths": ()}, "length"),
        ({"families": ("paths",)}, "graph families among"),
    ],
)
def test_a_bad_mixed_step_says_what_is_wrong_in_one_line(change, message):
    arguments = {"algorithm": "bfs", "seeds": SEEDS, "step": 0}
    arguments |= {"families": ("path",), "share": 0.5, **MIXED} | change
    with pytest.raises(ValueError, match=message) as raised:
        stacked_mixed_batches(**arguments)
    assert "\n" not in str(raised.value)
