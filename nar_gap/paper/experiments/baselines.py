"""Notebook 02: the baselines (the paper's Table 10), each algorithm over seeds.

Besides Table 10's default networks, an algorithm named in the profile's
``edge_info_baselines`` also trains the paper's modified network (edge
information, Table 11) at the same sizes: the compiled Bellman-Ford uses
edge information, so notebook 03 measures this arm against it like for like,
beside the paper's pairing of compiled with the default network.  That arm
uses the fork's parameter-free form (``edge_map="channel"``, the compiler's),
which runs at any size, so it trains and tests at the baselines' sizes; the
fork's later, size-locked learned form (commit cef64d2) is an ablation arm
trained and tested at one size (:mod:`nar_gap.paper.experiments.ablations`).
Table 8 (Appendix A's settings) is written from the profiles here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nar_gap.analysis.curves import step_means
from nar_gap.analysis.stats import score_summary
from nar_gap.paper import plots
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import (
    baseline_config,
    final_test_scores,
    metadata,
    train_once,
)
from nar_gap.paper.experiments.settings import write_settings
from nar_gap.system import files
from nar_gap.training import TrainResult, read_validation, read_validation_table

BASELINE_ALGORITHMS = ("bfs", "dfs", "bellman_ford")
BASELINES_FILE = "table10_baselines.csv"


def seeds_file(algorithm: str) -> str:
    """Each seed of ``algorithm``'s baseline under both protocols."""
    return f"table10_seeds_{algorithm}.csv"


def validation_file(arm: str) -> str:
    """Every seed's validation curve of ``arm`` (``<a>`` or ``<a>_edge_info``)."""
    return f"validation_{arm}.csv"


def validation_arms(profile: Profile, algorithms: Sequence[str]) -> list[str]:
    """The arms notebook 02 trains: each algorithm, then the edge-information ones."""
    edge_info = [
        f"{a}_edge_info" for a in algorithms if a in profile.edge_info_baselines
    ]
    return [*algorithms, *edge_info]


def validation_figure_stem(arm: str) -> str:
    """The figure of :func:`validation_file`'s curves."""
    return f"fig_validation_{arm}"


def run_baselines(
    profile: Profile,
    dirs: OutputDirs,
    algorithms: Sequence[str] = BASELINE_ALGORITHMS,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Table 10: each algorithm trained over the profile's seeds, test score.

    Reading (``dirs.reading``): Table 10's rows of ``algorithms``, as
    written, and each validation figure drawn again from its table.
    """
    if dirs.reading:
        rows = dirs.read_back(BASELINES_FILE)
        for arm in validation_arms(profile, algorithms):
            if (Path(dirs.results) / validation_file(arm)).is_file():
                draw_validation(dirs, arm)
        return [r for r in rows if r["algorithm"] in algorithms]
    rows = []
    for algorithm in algorithms:
        config = baseline_config(profile, algorithm)
        result = train_once(config, dirs.runs, progress)
        write_validation(
            read_validation(result.out_dir),
            algorithm,
            dirs,
            metadata(profile, config=config.to_dict()),
        )
        files.write_table(
            Path(dirs.results) / seeds_file(algorithm),
            seed_rows(result),
            metadata(profile, config=config.to_dict()),
        )
        rows.append(
            {
                "algorithm": algorithm,
                "hidden_size": config.network.hidden_size,
                "steps": config.steps,
                "test_num_nodes": config.test_num_nodes,
                **score_summary([m["test_score"] for m in result.metrics]),
            }
        )
    for algorithm in (a for a in algorithms if a in profile.edge_info_baselines):
        config = baseline_config(profile, algorithm, edge_info=True)
        result = train_once(config, dirs.runs, progress)
        write_validation(
            read_validation(result.out_dir),
            f"{algorithm}_edge_info",
            dirs,
            metadata(profile, config=config.to_dict()),
        )
    files.write_table(Path(dirs.results) / BASELINES_FILE, rows, metadata(profile))
    write_settings(dirs.results, metadata(profile))
    return rows


def seed_rows(result: TrainResult) -> list[dict[str, Any]]:
    """Per seed: the test score of its selected and of its final-step parameters.

    The paper's protocol is CLRS's selection (``first_best``): a seed whose
    validation saturates early keeps an early step's parameters, so the
    selected step, not the model, can decide a claim about the trained
    network.  The final-step parameters are the control; the paper-vs-ours
    rows judge both (:mod:`nar_gap.paper.report.rules`).
    """
    config = result.config
    final_scores = final_test_scores(result)
    return [
        {
            "seed": metric["seed"],
            "selection": config.selection,
            "selected_step": metric["selected_step"],
            "steps": metric["steps"],
            "test_score": metric["test_score"],
            "final_test_score": float(score),
        }
        for metric, score in zip(result.metrics, final_scores, strict=True)
    ]


def write_validation(
    history: Sequence[dict[str, Any]],
    algorithm: str,
    dirs: OutputDirs,
    meta: dict[str, Any],
) -> list[Path]:
    """Every seed's validation curve: ``results/validation_<a>.csv`` and its figure.

    What a profile's step count rests on: where the curves flatten.  A run
    trained before runs kept this history has none: nothing is written.
    The figure is drawn from the table just written (:func:`draw_validation`).
    """
    if not history:
        return []
    table = files.write_table(
        Path(dirs.results) / validation_file(algorithm), history, meta
    )
    return [table, *draw_validation(dirs, algorithm)]


def draw_validation(dirs: OutputDirs, arm: str) -> list[Path]:
    """``arm``'s validation figure, drawn from its written table.

    Reading results, notebook 02 draws each figure again from the table
    (another machine's, a GPU job's): the figure's sidecar names the table
    (``drawn_from``), whose own sidecar says which run wrote it.
    """
    name = validation_file(arm)
    history = read_validation_table(Path(dirs.results) / name)
    fig = plots.plot_validation_curves(
        history,
        f"{arm}: validation over training",
        means={key: step_means(history, key) for key in ("val_score", "train_loss")},
    )
    written = files.save_figure(
        fig,
        Path(dirs.figures) / validation_figure_stem(arm),
        metadata={"drawn_from": [name]},
    )
    plots.close(fig)
    return written
