"""Training on from compiled parameters (D.8) and the landscape study (D.11)."""

from __future__ import annotations

import dataclasses
import json

import jax
import numpy as np
import pytest

import nar_gap
from nar_gap.model.model import Model
from nar_gap.model.network import init_params
from nar_gap.paper import experiments
from nar_gap.paper.experiments import landscape_study, profiles, runs, stability
from nar_gap.paper.experiments.profiles import OutputDirs
from nar_gap.system.files import read_table

SMOKE = profiles.get("smoke")


@pytest.fixture(scope="module")
def compiled_bfs():
    return nar_gap.compile("bfs", hidden_size=None)


@pytest.fixture(scope="module")
def batch():
    return runs.faithfulness_batch(SMOKE, "bfs")


# With the notebook and ablation tests in one pytest-xdist worker: notebooks
# 03 and 05 trained and studied these very runs there (shared_runs resumes
# them); on another worker they would be trained again.
SHARED_RUNS = pytest.mark.xdist_group("chain_baselines")


@pytest.fixture(scope="module")
def stability_rows(shared_runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("stability_files")
    rows = experiments.run_stability(
        SMOKE, "bfs", OutputDirs(shared_runs, out, out), progress=False
    )
    config = SMOKE.train_config(
        nar_gap.compile("bfs", None).config,
        seeds=SMOKE.seed_list(SMOKE.stability_orders),
    )
    return config, rows


@SHARED_RUNS
def test_training_starts_exactly_at_the_compiled_solution(stability_rows):
    config, rows = stability_rows
    start = [r for r in rows if r["start"] == "compiled" and r["step"] == 0]
    assert len(start) == len(config.seeds)
    for row in start:
        assert row["accuracy"] == 1.0 and row["external"] == 1.0
        assert row["param_drift"] == 0.0 and row["internal"] < 1e-6


@SHARED_RUNS
def test_stability_rows_and_table_are_sane(stability_rows, tmp_path):
    config, rows = stability_rows
    steps = sorted({r["step"] for r in rows})
    assert steps == [
        0,
        *stability.schedule(
            config.steps, SMOKE.stability_points, SMOKE.stability_early
        ),
    ]
    for row in rows:
        for key in ("accuracy", "internal", "external"):
            assert 0.0 <= row[key] <= 1.0 + 1e-6, row
        assert row["param_drift"] >= 0.0
    moved = [r for r in rows if r["start"] == "compiled" and r["step"] > 0]
    assert all(r["param_drift"] > 0 for r in moved)
    stability.write_stability(rows, "bfs", tmp_path, tmp_path, {"profile": "smoke"})
    table = read_table(tmp_path / "table16_stability_bfs.csv")
    assert [(r["start"], int(r["step"])) for r in table] == [
        ("compiled", 0),
        ("compiled", config.steps),
        ("random", 0),
        ("random", config.steps),
    ]
    assert all(" ± " in r["performance"] for r in table)
    assert (tmp_path / "fig_stability_bfs.png").stat().st_size > 0


def test_random_starts_have_their_step_0_point_where_training_starts(
    stability_rows, batch
):
    """Step 0 of a random start is each seed's initialisation: the parameters
    training from scratch starts from (initialised for a training batch)."""
    from nar_gap.model.seeds import init_stacked
    from nar_gap.training.feed import seed_batches

    config, rows = stability_rows
    start = [r for r in rows if r["start"] == "random" and r["step"] == 0]
    assert [r["seed"] for r in start] == list(config.seeds)
    assert all(r["accuracy"] < 1.0 for r in start)
    template = jax.tree_util.tree_map(lambda x: x[0], seed_batches(config, 0))
    trained_from = init_stacked(config.network, template, config.seeds)
    recorded_from = init_stacked(config.network, batch, config.seeds)
    for a, b in zip(
        jax.tree_util.tree_leaves(trained_from),
        jax.tree_util.tree_leaves(recorded_from),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)


def test_evaluations_are_dense_in_the_first_steps():
    assert stability.schedule(16, 2) == [1, 2, 4, 8, 16]
    assert stability.schedule(16, 2, early=1) == [1, 8, 16]
    cpu = profiles.get("cpu")
    assert stability.schedule(250, cpu.stability_points, cpu.stability_early) == [
        *(1, 2, 4, 8, 16, 32),
        *(62, 125, 188, 250),
    ]
    assert stability.schedule(1, 1) == [1]


@SHARED_RUNS
def test_stability_is_reproducible(stability_rows, compiled_bfs, batch, tmp_path):
    config, rows = stability_rows
    again = stability.train_on_from(
        compiled_bfs,
        config,
        batch,
        tmp_path,
        SMOKE.stability_points,
        progress=False,
        early=SMOKE.stability_early,
    )
    assert again == [r for r in rows if r["start"] == "compiled"]


def test_a_config_for_another_network_is_refused(compiled_bfs, batch, tmp_path):
    config = SMOKE.train_config(dataclasses.replace(compiled_bfs.config, use_ln=True))
    with pytest.raises(ValueError, match="compiled model's"):
        stability.train_on_from(compiled_bfs, config, batch, tmp_path, 1)


def test_relative_drift_by_hand():
    centre = {"w": np.array([3.0, 4.0])}
    stacked = {"w": np.array([[3.0, 4.0], [3.0, 9.0]])}
    assert np.allclose(stability.relative_drift(stacked, centre), [0.0, 1.0])


def test_landscape_table_reports_every_centre_and_reproduces(
    compiled_bfs, batch, tmp_path
):
    centres = {
        "compiled": compiled_bfs,
        "initial": Model(
            compiled_bfs.config, init_params(compiled_bfs.config, batch, seed=0)
        ),
    }
    args = dict(points=SMOKE.landscape_points, progress=False)
    rows, surfaces = landscape_study.landscape_rows_and_surfaces(centres, batch, **args)
    again, _ = landscape_study.landscape_rows_and_surfaces(centres, batch, **args)
    assert rows == again
    landscape_study.write_landscapes(rows, surfaces, "bfs", tmp_path, tmp_path)
    table = read_table(tmp_path / "landscape_bfs.csv")
    assert [r["centre"] for r in table] == ["compiled", "initial"]
    compiled, initial = rows
    assert compiled["centre_loss"] < 1e-6  # the compiled minimum is exact
    assert compiled["sharpness_r0.1"] > initial["sharpness_r0.1"]
    assert (tmp_path / "fig17_bfs_landscape_compiled.png").stat().st_size > 0


def test_the_controls_are_trained_from_compiled_with_their_optimiser():
    """SGD and smaller Adam steps from compiled (not in smoke: CI's budget)."""
    config = SMOKE.train_config(
        nar_gap.compile("bfs", None).config, seeds=SMOKE.seed_list(2)
    )
    cpu = profiles.get("cpu")
    settings = stability.stability_settings(config, cpu)
    assert [label for label, _, _ in settings] == [
        "compiled",
        "random",
        "compiled, adam lr 0.0001",
        "compiled, adam lr 1e-05",
        "compiled, sgd lr 0.001",
    ]
    assert [c.optimizer for _, _, c in settings] == ["adam"] * 4 + ["sgd"]
    assert all(start == "compiled" for _, start, _ in settings[2:])
    assert len({runs.run_dir(c, "r") for _, _, c in settings}) == 4  # 2 share one
    assert [s[0] for s in stability.stability_settings(config, SMOKE)] == [
        "compiled",
        "random",
    ]


def test_every_profile_writes_json_metadata():
    for profile in profiles.PROFILES.values():
        json.loads(json.dumps(runs.metadata(profile)))
