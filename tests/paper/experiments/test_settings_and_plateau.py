"""Appendix A's settings table from the profiles, and where validation flattens."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nar_gap.analysis import verdicts
from nar_gap.paper.experiments import plateau, profiles, settings
from nar_gap.system import files


def test_the_settings_table_reads_every_profile():
    rows = {r["setting"]: r for r in settings.settings_rows()}
    assert set(next(iter(rows.values()))) == {"setting", *profiles.PROFILES}
    bfs = rows["baseline bfs: seeds x steps"]
    assert bfs["paper"] == "128 x 10000, hidden 128"
    cpu = profiles.CPU.baseline_sizes("bellman_ford")
    assert rows["baseline bellman_ford: seeds x steps"]["cpu"] == (
        f"{cpu.seeds} x {cpu.steps}, hidden {cpu.hidden_size}"
    )
    assert rows["model selection"]["paper"] == "first_best"
    assert rows["learning_rate"]["smoke"] == 1e-3


def test_a_changed_profile_changes_its_column_only():
    longer = dataclasses.replace(profiles.SMOKE, name="longer", long_steps=99)
    rows = settings.settings_rows([profiles.SMOKE, longer])
    extended = next(r for r in rows if r["setting"] == "extended training steps")
    assert extended == {"setting": "extended training steps", "smoke": 24, "longer": 99}


def test_the_settings_file_has_a_sidecar(tmp_path):
    written = settings.write_settings(tmp_path, {"profile": "test"})
    assert written.name == "table8_settings.csv"
    assert files.read_json(str(written) + ".json")["profile"] == "test"
    assert len(files.read_table(written)) == len(settings.SETTINGS)


def _history(means_by_step):
    return [
        {"seed": seed, "step": step, "val_score": mean + offset}
        for step, mean in means_by_step.items()
        for seed, offset in ((0, -0.01), (1, 0.01))
    ]


@pytest.mark.parametrize(
    ("curve", "expected"),
    [
        # still rising at every horizon: no plateau anywhere
        ({s: 0.1 + 0.1 * s / 100 for s in range(0, 900, 100)}, None),
        # rises, then flat from 300 on: from 600 the last half (4 evaluations)
        # is flat
        ({0: 0.1, 100: 0.5, 200: 0.8, **{s: 0.9 for s in range(300, 1100, 100)}}, 600),
        # flat from the start: from the first horizon with 4 evaluations in
        # its last half
        ({s: 0.5 for s in range(0, 800, 100)}, 600),
    ],
)
def test_the_plateau_is_where_every_longer_horizon_is_flat(curve, expected):
    rows = verdicts.plateau_horizons(_history(curve))
    assert [r["steps"] for r in rows] == sorted(curve)
    assert rows[0]["at_plateau"] is False  # one evaluation says nothing
    assert verdicts.first_plateau(rows) == expected


def test_a_dip_after_the_plateau_moves_it_later():
    curve = {0: 0.1, 100: 0.9, 200: 0.9, 300: 0.9, 400: 0.9, 500: 0.9, 600: 0.9}
    curve |= {700: 0.8, 800: 0.8, 900: 0.8, 1000: 0.8, 1100: 0.8, 1200: 0.8}
    curve |= {s: 0.8 for s in range(1300, 2100, 100)}
    found = verdicts.first_plateau(verdicts.plateau_horizons(_history(curve)))
    assert found is not None and found > 1200


def test_the_plateau_reads_the_baseline_run_and_a_longer_horizon_continues_it(
    tmp_path,
):
    """Horizon 0 trains nothing new; a longer one is the baseline run, resumed."""
    from nar_gap.paper.experiments.runs import baseline_config, run_dir, train_once
    from nar_gap.training import read_validation

    profile = profiles.get("smoke")
    dirs = profiles.output_dirs("smoke", str(tmp_path / "runs"), str(tmp_path / "out"))
    baseline = train_once(baseline_config(profile, "bfs"), dirs.runs, progress=False)
    names = plateau.measure_profile_plateaus(profile, dirs, progress=False)
    assert names == ["plateau_bfs.csv"]
    assert [p.name for p in Path(dirs.runs).iterdir()] == [baseline.out_dir.name]
    rows = files.read_table(Path(dirs.results) / names[0])
    assert int(rows[-1]["steps"]) == baseline.config.steps

    longer = 2 * baseline.config.steps
    plateau.measure_plateau(profile, "bfs", dirs, longer, progress=False)
    long_dir = run_dir(plateau.plateau_config(profile, "bfs", False, longer), dirs.runs)
    history = read_validation(long_dir)
    short = baseline.config.steps
    # repr: the untrained step's loss is NaN, which equals nothing
    assert sorted(repr(r) for r in history if int(r["step"]) <= short) == sorted(
        repr(r) for r in read_validation(baseline.out_dir)
    )
    assert max(int(r["step"]) for r in history) == longer
