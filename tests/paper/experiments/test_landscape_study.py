"""Notebook 06's centres: a learned minimum of the compiled network's class."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import jax
import numpy as np
import pytest

import nar_gap
from nar_gap.analysis import landscape
from nar_gap.model.model import Model
from nar_gap.model.seeds import unstack_tree
from nar_gap.paper.experiments import landscape_study, profiles, stability
from nar_gap.paper.experiments.profiles import OutputDirs
from nar_gap.tasks.sampling import sample_batch
from nar_gap.training import TrainResult

SMOKE = profiles.get("smoke")


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_the_same_class_run_is_notebook_05s_random_setting(
    algorithm, monkeypatch, tmp_path
):
    compiled = nar_gap.compile(algorithm, hidden_size=None)
    config = landscape_study.same_class_config(SMOKE, compiled)
    assert config.network == compiled.config  # its hidden size, no layer norm
    assert not config.network.use_ln
    assert config.network.hidden_size == compiled.config.hidden_size
    # where notebook 05's study trains each setting (nothing trained here)
    trained: dict[str, tuple] = {}

    def record(model, setting, batch, out, points, start, *rest):
        trained[start] = (setting, Path(out))
        return []

    monkeypatch.setattr(stability, "train_on_from", record)
    monkeypatch.setattr(stability, "faithfulness_batch", lambda *a: None)
    monkeypatch.setattr(stability, "write_stability", lambda *a, **k: [])
    dirs = OutputDirs(tmp_path, tmp_path, tmp_path)
    stability.run_stability(SMOKE, algorithm, dirs, progress=False)
    assert trained["random"] == (
        config,
        landscape_study.same_class_dir(config, tmp_path),
    )


def test_the_cpu_profile_trains_the_same_class_longer_than_notebook_05():
    cpu = profiles.get("cpu")
    compiled = nar_gap.compile("bfs", hidden_size=None)
    config = landscape_study.same_class_config(cpu, compiled)
    notebook_05 = cpu.train_config(
        compiled.config, seeds=cpu.seed_list(cpu.stability_orders)
    )
    assert cpu.same_class_steps > cpu.steps
    assert config == dataclasses.replace(notebook_05, steps=cpu.same_class_steps)
    dry = profiles.dry_run(cpu)  # a dry run trains its one step
    assert landscape_study.same_class_config(dry, compiled).steps == dry.steps


def test_each_network_gets_planes_of_its_own(monkeypatch):
    """The test's planes: independent per network and plane, kept when a
    network is added last, and not the figures' planes."""
    compiled = nar_gap.compile("bfs", hidden_size=None)
    batch = sample_batch("bfs", 4, 2, seed=2)
    calls = []
    rises = iter(range(1000))

    def measured(config, params, directions, batch, radii):
        calls.append(np.asarray(directions[0]["net"]["processor"]["value"]["kernel"]))
        return {r: float(next(rises)) for r in radii}

    monkeypatch.setattr(landscape, "sharpness", measured)
    networks = [(compiled, {"centre": "compiled"}), (compiled, {"centre": "again"})]
    rows = landscape_study.plane_sharpness_rows(networks, batch, 3, progress=False)
    assert [(r["centre"], r["plane"]) for r in rows] == [
        (c, k) for c in ("compiled", "again") for k in range(3)
    ]
    assert set(rows[0]) == {"centre", "plane", "sharpness_r0.1", "sharpness_r0.5"}
    drawn = [d.ravel() for d in calls]
    assert all(
        not np.allclose(drawn[i], drawn[j]) for i in range(len(drawn)) for j in range(i)
    )
    figure_plane = landscape_study.plane_directions(
        landscape_study.centre_key(0), compiled.params
    )[0]["net"]["processor"]["value"]["kernel"]
    assert not np.allclose(np.asarray(figure_plane).ravel(), drawn[0])
    calls.clear()
    landscape_study.plane_sharpness_rows(
        [*networks, (compiled, {"centre": "third"})], batch, 3, progress=False
    )
    kept = zip(calls[: len(drawn)], drawn, strict=True)  # the first two networks
    assert all(np.array_equal(a.ravel(), b) for a, b in kept)


def test_the_compiled_controls_are_the_compiler_at_smaller_margins(monkeypatch):
    """The default compiled network first, then each control, each checked
    against dm-clrs: at an eighth of the margins BFS is no longer exact."""
    monkeypatch.setattr(landscape_study, "MARGIN_CONTROLS", (0.5, 0.125))
    batch = sample_batch("bfs", 16, 4, seed=2)
    networks = landscape_study.compiled_networks("bfs", [batch])
    assert [c["centre"] for _, c in networks] == [
        "compiled",
        "compiled, margins x0.5",
        "compiled, margins x0.125",
    ]
    assert [c["exact"] for _, c in networks] == [True, True, False]
    default = nar_gap.compile("bfs", hidden_size=None)
    assert all(
        np.array_equal(a, b)
        for a, b in zip(
            jax.tree_util.tree_leaves(networks[0][0].params),
            jax.tree_util.tree_leaves(default.params),
            strict=True,
        )
    )

    def largest(model):
        return max(
            float(np.abs(x).max()) for x in jax.tree_util.tree_leaves(model.params)
        )

    assert largest(networks[1][0]) == pytest.approx(largest(default) / 2, rel=0.01)


def _run(scores: list[float]) -> TrainResult:
    config = SMOKE.train_config(
        nar_gap.compile("bfs", None).config, seeds=(3, 4, 5)[: len(scores)]
    )
    metrics = [{"test_score": s} for s in scores]
    return TrainResult(config=config, metrics=metrics, params=None, out_dir=None)


def test_a_centre_that_does_not_solve_the_task_says_so():
    run = _run([0.5, 0.97])
    assert landscape_study.best_seed(run) == 1
    solved = landscape_study.score_columns(run, 1)
    assert solved["seed"] == 4 and solved["test_score"] == 0.97
    assert solved["solves_task"] and solved["note"] == "solves the task"
    failed = landscape_study.score_columns(run, 0)
    assert not failed["solves_task"] and "does not solve" in failed["note"]


# In the group whose worker runs notebook 05 and test_stability.py: the
# learned centre is read back from their run of the random setting.  Alone
# (that run trained here) about 18 s on 2 cores; notebook 06's test checks the
# same row in the table the notebook writes.
@pytest.mark.slow
@pytest.mark.xdist_group("chain_baselines")
def test_the_same_class_row_at_smoke_is_of_the_compiled_class(shared_runs, tmp_path):
    dirs = OutputDirs(shared_runs, tmp_path, tmp_path)
    compiled = nar_gap.compile("bfs", hidden_size=None)
    run = landscape_study.same_class_run(SMOKE, compiled, dirs, progress=False)
    index = landscape_study.best_seed(run)
    centres = {
        "compiled": compiled,
        landscape_study.SAME_CLASS: Model(
            compiled.config, unstack_tree(run.params, index)
        ),
    }
    batch = sample_batch("bfs", SMOKE.val_num_nodes, SMOKE.batch_size, seed=2)
    columns = {landscape_study.SAME_CLASS: landscape_study.score_columns(run, index)}
    rows, _ = landscape_study.landscape_rows_and_surfaces(
        centres, batch, points=SMOKE.landscape_points, progress=False, columns=columns
    )
    compiled_row, same = landscape_study.same_class_rows(rows)
    assert same["centre"] == "learned (compiled class)"
    assert same["hidden_size"] == compiled_row["hidden_size"] == 7
    assert same["use_ln"] is False and compiled_row["use_ln"] is False
    for measure in ("centre_loss", "sharpness_r0.1", "sharpness_r0.5"):
        assert math.isfinite(same[measure]), measure
    assert math.isfinite(same["max_grid_loss"])
    assert 0.0 <= same["test_score"] <= 1.0
    assert same["solves_task"] == (same["test_score"] >= landscape_study.SOLVED_SCORE)
    assert compiled_row["test_score"] == ""  # the compiled network is not trained


def test_centre_names_are_file_name_words():
    assert landscape_study.centre_name("learned (compiled class)") == (
        "learned_compiled_class"
    )
    assert landscape_study.centre_stem("bfs", "compiled") == (
        "fig17_bfs_landscape_compiled"
    )
    assert np.all([landscape_study.centre_name(c) == c for c in ("learned", "initial")])
