"""Notebook 02: the baselines (the paper's Table 10), each algorithm over seeds."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nar_gap.analysis.stats import score_summary
from nar_gap.experiments.profiles import OutputDirs, Profile
from nar_gap.experiments.runs import baseline_config, metadata, train_once
from nar_gap.system import files

BASELINE_ALGORITHMS = ("bfs", "dfs", "bellman_ford")


def run_baselines(
    profile: Profile,
    dirs: OutputDirs,
    algorithms: Sequence[str] = BASELINE_ALGORITHMS,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Table 9: each algorithm trained over the profile's seeds, test score."""
    rows = []
    for algorithm in algorithms:
        config = baseline_config(profile, algorithm)
        result = train_once(config, dirs.runs, progress)
        rows.append(
            {
                "algorithm": algorithm,
                "hidden_size": config.network.hidden_size,
                "steps": config.steps,
                "test_num_nodes": config.test_num_nodes,
                **score_summary([m["test_score"] for m in result.metrics]),
            }
        )
    files.write_table(
        Path(dirs.results) / "table9_baselines.csv", rows, metadata(profile)
    )
    return rows
