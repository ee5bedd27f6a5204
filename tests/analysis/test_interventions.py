"""Swapping attention: the compiled BFS keeps its answer under its own attention
and loses it under attention that cannot route (self only), at every step and at
one; attention moves between head counts as Eq. 24 sees it."""

from __future__ import annotations

import functools

import numpy as np

import nar_gap
from nar_gap.analysis import interventions
from nar_gap.tasks.families import path


@functools.cache
def _compiled():
    """The compiled BFS and a 6-node path searched from one end (5 steps)."""
    model = nar_gap.compile("bfs", hidden_size=None)
    batch = nar_gap.data.batch_from_graph("bfs", path(6), source=0)
    return model, batch


def test_the_compiled_bfs_keeps_its_answer_under_its_own_attention_at_any_step():
    model, batch = _compiled()
    score, attention = interventions.own_attention(model, batch)
    steps = [interventions.ALL_STEPS, *((t,) for t in range(attention.shape[0]))]
    assert score == 1.0
    np.testing.assert_array_equal(
        interventions.patched_scores(model, batch, attention, steps), 1.0
    )


def test_self_only_attention_breaks_the_compiled_bfs_and_uniform_changes_its_parents():
    """On a path searched from node 0 the answer needs each node to read its
    left neighbour: self-only attention reads nobody, so nothing beyond the
    source is reached; uniform attention averages the two neighbours."""
    model, batch = _compiled()
    _, attention = interventions.own_attention(model, batch)
    controls = interventions.reference_attentions(batch, attention.shape[0])
    alone = interventions.patched_scores(model, batch, controls["self only"])
    assert alone[0] < 0.5
    uniform = interventions.patched_scores(model, batch, controls["uniform"])
    assert uniform[0] < 1.0


def test_attention_moves_between_head_counts_as_its_head_mean():
    two = np.random.default_rng(0).random((3, 2, 2, 4, 4)).astype(np.float32)
    one = interventions.head_matched(two, 1)
    np.testing.assert_allclose(one[:, :, 0], two.mean(axis=2), rtol=1e-6)
    three = interventions.head_matched(two[:, :, :1], 3)
    assert three.shape == (3, 2, 3, 4, 4)
    np.testing.assert_array_equal(three[:, :, 2], two[:, :, 0])
    assert interventions.head_matched(two, 2) is not None
    np.testing.assert_array_equal(interventions.head_matched(two, 2), two)
    headless = interventions.head_matched(two[:, :, 0], 1)
    np.testing.assert_array_equal(headless[:, :, 0], two[:, :, 0])
