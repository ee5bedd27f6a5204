"""What the notebooks' teaching cells call (nar_gap.paper.report.walkthrough)."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

import nar_gap
from nar_gap.analysis.landscape import loss_grid, model_loss
from nar_gap.model.gatv2 import GATv2
from nar_gap.paper.experiments.landscape_study import Centres, centre_key
from nar_gap.paper.report import walkthrough
from nar_gap.tasks.exactness import Mismatch


@pytest.fixture(scope="module")
def bfs():
    return nar_gap.compile("bfs", hidden_size=None)


@pytest.fixture(scope="module")
def graphs():
    return nar_gap.data.sample_batch("bfs", num_nodes=8, batch_size=4, seed=0)


def test_source_is_shown_with_its_repository_path_not_this_machines():
    assert walkthrough.source_location(GATv2.__call__) == (
        "nar_gap/model/gatv2.py:GATv2.__call__"
    )
    code = walkthrough.show_source(walkthrough.perturbed)
    assert code.startswith("def perturbed(")


def test_compile_at_refuses_below_the_smallest_size_in_one_line():
    refused = walkthrough.compile_at("bfs", 6, graphs=2, num_nodes=8)
    assert refused.startswith("hidden 6: refused:") and "\n" not in refused
    assert "needs hidden_size >= 7" in refused
    exact = walkthrough.compile_at("bfs", None, graphs=2, num_nodes=8)
    assert exact.startswith("hidden 7: 1390 parameters, exact")


def test_perturbed_moves_exactly_one_entry(bfs):
    moved = walkthrough.perturbed(bfs.params, "processor/value/kernel", (1, 2), 0.5)
    before = np.asarray(bfs.params["net"]["processor"]["value"]["kernel"])
    after = np.asarray(moved["net"]["processor"]["value"]["kernel"])
    assert np.count_nonzero(after - before) == 1
    assert after[1, 2] == pytest.approx(before[1, 2] + 0.5)
    untouched = jax.tree_util.tree_leaves(bfs.params)
    assert (
        sum(
            not np.array_equal(a, b)
            for a, b in zip(untouched, jax.tree_util.tree_leaves(moved), strict=True)
        )
        == 1
    )


def test_perturbed_refuses_unknown_names_and_indices(bfs):
    with pytest.raises(KeyError, match="no parameter 'processor/nope'"):
        walkthrough.perturbed(bfs.params, "processor/nope", (0,), 1.0)
    with pytest.raises(IndexError, match="outside processor/value/kernel's shape"):
        walkthrough.perturbed(bfs.params, "processor/value/kernel", (99, 0), 1.0)


def test_the_first_broken_hint_is_the_earliest_step_outputs_last():
    late = Mismatch("pi_h", 3, 0, (1,), (0.0,), (1.0,))
    early = Mismatch("reach_h", 1, 2, (1,), (0.0,), (1.0,))
    output = Mismatch("pi", -1, 0, (1,), (0.0,), (1.0,))
    assert walkthrough.first_broken([output, late, early]) is early
    assert walkthrough.first_broken([output]) is output
    assert walkthrough.first_broken([]) is None


def test_one_weight_can_break_bfs_and_a_zero_move_cannot(bfs, graphs):
    path = "processor/value/kernel"
    kept = walkthrough.break_one_weight(bfs, graphs, path, (0, 0), 0.0)
    assert kept.endswith("still exact on every hint and output")
    broken = walkthrough.break_one_weight(bfs, graphs, path, (0, 0), 1e-3)
    assert "first broken: pi_h" in broken


def test_walking_a_line_starts_at_the_centre_loss(bfs, graphs):
    line = walkthrough.loss_along(bfs, graphs, [-0.1, 0.0, 0.1])
    centre = float(model_loss(bfs.config, bfs.params, graphs))
    assert line.losses[1] == pytest.approx(centre, abs=1e-6)
    assert line.rise()[1] == 0.0 and line.rise().min() >= 0.0
    still = jax.tree_util.tree_map(np.zeros_like, bfs.params)
    flat = walkthrough.loss_along(bfs, graphs, [-1.0, 1.0], direction=still)
    assert flat.losses == pytest.approx([centre, centre], abs=1e-6)


def test_the_line_is_the_plane_s_first_axis(bfs, graphs):
    """Centres.directions gives the plane run_landscapes drew: the walk along
    its first direction is the landscape's row beta = 0."""
    centres = Centres({"compiled": bfs}, graphs, learned_seed=0)
    land, (first, _) = loss_grid(
        bfs.config, bfs.params, graphs, centre_key(0), radius=0.5, points=3
    )
    mine, _ = centres.directions("compiled")
    assert all(
        np.array_equal(a, b)
        for a, b in zip(
            jax.tree_util.tree_leaves(first),
            jax.tree_util.tree_leaves(mine),
            strict=True,
        )
    )
    line = walkthrough.loss_along(bfs, graphs, [-0.5, 0.0, 0.5], direction=mine)
    np.testing.assert_allclose(line.losses, land.losses[:, 1], rtol=1e-4)


def test_training_on_from_compiled_reports_loss_drift_and_exactness(bfs, graphs):
    reports = walkthrough.train_on(bfs, graphs, [0, 2], learning_rate=1e-3)
    assert [r.step for r in reports] == [0, 2]
    assert reports[0].drift == 0.0 and reports[0].first_broken is None
    assert reports[1].drift > 0.0
    assert str(reports[0]).startswith("step   0: loss")


def test_reading_stats_count_prose_equations_and_cells(tmp_path):
    cells = [
        {"cell_type": "markdown", "source": ["# One two\n", "$$a$$ three"]},
        {"cell_type": "code", "metadata": {"tags": ["hands-on"]}, "source": []},
        {"cell_type": "markdown", "source": ["**Exercise 1.** four"]},
    ]
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    stats = walkthrough.reading_stats(path)
    assert (stats.words, stats.equations, stats.hands_on, stats.exercises) == (
        8,
        1,
        1,
        1,
    )
    assert stats.reading_minutes == 1


def test_choosing_the_smallest_p_passes_where_nothing_differs_and_a_rerun_does_not():
    """Notebook 09's first cell: of 48 null tests the chosen one passes 5 %
    in most explorations (1 - 0.95**48 = 0.91 for independent tests), its
    fresh rerun at about the level; with one test there is nothing to
    choose, and the first pass rate falls to the level too.  Seen failing
    with the rerun on the explored data instead of fresh data."""
    chosen, fresh = walkthrough.winners_curse(tests=48, seeds=24, draws=400)
    assert chosen.shape == fresh.shape == (400,)
    assert np.mean(chosen < 0.05) > 0.8
    assert 0.02 < np.mean(fresh < 0.05) < 0.09
    alone, _ = walkthrough.winners_curse(tests=1, seeds=24, draws=400, seed=1)
    assert np.mean(alone < 0.05) < 0.09
