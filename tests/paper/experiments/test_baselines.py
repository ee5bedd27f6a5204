"""Notebook 02's validation figures: drawn from the tables, and again when reading."""

from __future__ import annotations

import json
import math

from nar_gap.paper.experiments import baselines, profiles
from nar_gap.system import files


def _history() -> list[dict]:
    """Two seeds validated at steps 0, 8 and 16 (no training loss at step 0)."""
    return [
        {"seed": seed, "step": step, "val_score": score, "train_loss": loss}
        for seed, offset in ((0, 0.0), (1, 0.05))
        for step, score, loss in (
            (0, 0.2 + offset, math.nan),
            (8, 0.6 + offset, 1.3),
            (16, 0.7 + offset, 0.9),
        )
    ]


def _dirs(tmp_path, reading: bool = False) -> profiles.OutputDirs:
    return profiles.OutputDirs(
        runs=tmp_path / "runs",
        results=tmp_path / "results",
        figures=tmp_path / ("figures_again" if reading else "figures"),
        reading=reading,
    )


def test_the_validation_figure_is_drawn_from_its_table(tmp_path):
    """A figure drawn again from the written table is the same file, and its
    sidecar names that table; a changed table draws another figure."""
    dirs = _dirs(tmp_path)
    written = baselines.write_validation(_history(), "bfs", dirs, {"profile": "t"})
    figure = tmp_path / "figures" / "fig_validation_bfs.png"
    assert figure in written
    first = figure.read_bytes()
    assert figure in baselines.draw_validation(dirs, "bfs")
    assert figure.read_bytes() == first
    sidecar = json.loads((tmp_path / "figures" / "fig_validation_bfs.json").read_text())
    assert sidecar["drawn_from"] == ["validation_bfs.csv"]
    rows = _history()
    rows[-1]["val_score"] = 0.1
    files.write_table(tmp_path / "results" / "validation_bfs.csv", rows, {})
    baselines.draw_validation(dirs, "bfs")
    assert figure.read_bytes() != first


def test_reading_results_draws_each_arm_s_figure_again(tmp_path):
    """Notebook 02 reading results trains nothing and draws the figure of
    each arm whose validation table is there (the edge-information arm's
    too), byte for byte as written."""
    profile = profiles.get("cpu")  # Bellman-Ford has an edge-information arm
    dirs = _dirs(tmp_path)
    arms = baselines.validation_arms(profile, ("bfs", "bellman_ford"))
    assert arms == ["bfs", "bellman_ford", "bellman_ford_edge_info"]
    for arm in arms:
        baselines.write_validation(_history(), arm, dirs, {"profile": "t"})
    files.write_table(
        tmp_path / "results" / baselines.BASELINES_FILE, [{"algorithm": "bfs"}], {}
    )
    reading = _dirs(tmp_path, reading=True)
    rows = baselines.run_baselines(profile, reading, ("bfs", "bellman_ford"))
    assert [r["algorithm"] for r in rows] == ["bfs"]
    assert not (tmp_path / "runs").exists()
    for arm in arms:
        stem = baselines.validation_figure_stem(arm)
        again = tmp_path / "figures_again" / f"{stem}.png"
        assert again.read_bytes() == (tmp_path / "figures" / f"{stem}.png").read_bytes()
