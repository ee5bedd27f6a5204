"""One function per notebook section: train or load, measure, write files.

The notebooks in ``notebooks/`` call these and display what they wrote, so
everything that produces a reported number lives here and is tested.  Every
function takes a :class:`~nar_gap.profiles.Profile`, a runs directory
(training checkpoints, resumed across notebooks and reruns) and the output
folders, and writes atomically.

Runs are *content-addressed*: a configuration trains in
``<runs>/<algorithm>_<hash of its TrainConfig>``, so two notebooks (or two
ablation tables) that need the same configuration share one run, and a rerun
with the same seeds finds it finished.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from nar_gap import ablations, io
from nar_gap.data import Batch, sample_batch
from nar_gap.network import NetworkConfig
from nar_gap.profiles import Profile
from nar_gap.statistics import score_summary
from nar_gap.train import RunResult, TrainConfig, eval_batch, train

BASELINE_ALGORITHMS = ("bfs", "dfs", "bellman_ford")


def run_dir(config: TrainConfig, runs_dir: str | os.PathLike) -> Path:
    """Where ``config`` trains: one directory per distinct configuration."""
    text = json.dumps(config.to_dict(), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return Path(runs_dir) / f"{config.network.algorithm}_{digest}"


def train_once(
    config: TrainConfig, runs_dir: str | os.PathLike, progress: bool = True
) -> RunResult:
    """Train ``config`` in its own run directory (finished seeds are not redone)."""
    return train(config, run_dir(config, runs_dir), progress=progress)


def metadata(profile: Profile, **extra: Any) -> dict[str, Any]:
    """What every results sidecar records about the profile."""
    return {"profile": profile.name, "profile_sizes": profile.__dict__, **extra}


def baseline_config(profile: Profile, algorithm: str) -> TrainConfig:
    """The default architecture (hidden from the profile) for ``algorithm``."""
    return profile.train_config(
        NetworkConfig(algorithm, hidden_size=profile.hidden_size)
    )


# --------------------------------------------------------------------------- #
# 02 baselines (Table 9).
# --------------------------------------------------------------------------- #


def baselines(
    profile: Profile,
    runs_dir: str | os.PathLike,
    results_dir: str | os.PathLike,
    algorithms: Sequence[str] = BASELINE_ALGORITHMS,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Table 9: each algorithm trained over the profile's seeds, test score."""
    rows = []
    for algorithm in algorithms:
        config = baseline_config(profile, algorithm)
        result = train_once(config, runs_dir, progress)
        rows.append(
            {
                "algorithm": algorithm,
                "hidden_size": config.network.hidden_size,
                "steps": config.steps,
                "test_num_nodes": config.test_num_nodes,
                **score_summary([m["test_score"] for m in result.metrics]),
            }
        )
    io.write_table(Path(results_dir) / "table9_baselines.csv", rows, metadata(profile))
    return rows


# --------------------------------------------------------------------------- #
# 03 faithfulness (Section 4).
# --------------------------------------------------------------------------- #


def faithfulness_batch(profile: Profile, algorithm: str) -> Batch:
    """The graphs of the faithfulness study: the test graphs training scores on."""
    batch = eval_batch(algorithm, "test", profile.test_num_nodes)
    return _first(batch, profile.faithfulness_graphs)


def _first(batch: Batch, count: int) -> Batch:
    import jax

    if count >= batch.batch_size:
        return batch
    hints = {k: v[:, :count] for k, v in batch.hints.items()}
    rest = jax.tree_util.tree_map(lambda x: x[:count], (batch.inputs, batch.outputs))
    return Batch(
        batch.algorithm,
        rest[0],
        hints,
        rest[1],
        batch.lengths[:count],
        batch.node_mask[:count],
    )


def faithfulness(
    profile: Profile,
    algorithm: str,
    runs_dir: str | os.PathLike,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    progress: bool = True,
):
    """Section 4 for one algorithm: the baseline seeds against compiled (hidden 128)."""
    import nar_gap
    from nar_gap.faithfulness import Models
    from nar_gap.faithfulness_study import faithfulness_study, write_report

    config = baseline_config(profile, algorithm)
    run = train_once(config, runs_dir, progress)
    compiled = nar_gap.compile(algorithm, hidden_size=128)
    batch = faithfulness_batch(profile, algorithm)
    report = faithfulness_study(
        Models.from_run(run), compiled, batch, progress=progress
    )
    write_report(
        report,
        results_dir,
        figures_dir,
        metadata(profile, config=config.to_dict(), compiled_hidden_size=128),
    )
    return report


# --------------------------------------------------------------------------- #
# 04 ablations (Tables 11-15, D.1, D.10).
# --------------------------------------------------------------------------- #


def ablation_tables(
    profile: Profile,
    runs_dir: str | os.PathLike,
    results_dir: str | os.PathLike,
    names: Sequence[str] | None = None,
    progress: bool = True,
) -> dict[str, list[dict[str, Any]]]:
    """Every ablation table (or ``names``), each written to ``results/<name>.csv``."""
    experiments = ablations.experiments(profile)
    unknown = sorted(set(names or ()) - set(experiments))
    if unknown:
        raise ValueError(
            f"unknown ablations {unknown}; known: {', '.join(sorted(experiments))}"
        )
    tables = {}
    for name in names or list(experiments):
        experiment = experiments[name]
        rows = ablations.run_experiment(
            experiment, runs_dir, progress=progress, run_dir=run_dir
        )
        ablations.write_experiment(experiment, rows, results_dir, metadata(profile))
        tables[name] = rows
        # A kernel that trains every table holds dozens of configurations'
        # executables; drop them between tables (the on-disk compilation cache
        # brings back any one needed again).
        jax.clear_caches()
    return tables


# --------------------------------------------------------------------------- #
# 05 stability (D.8) and 06 landscapes (D.11).
# --------------------------------------------------------------------------- #


def stability_study(
    profile: Profile,
    algorithm: str,
    runs_dir: str | os.PathLike,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """D.8: the minimal compiled model trained on, against the same from random."""
    import nar_gap
    from nar_gap import stability

    compiled = nar_gap.compile(algorithm, hidden_size=None)
    config = profile.train_config(
        compiled.config, seeds=profile.seed_list(profile.stability_orders)
    )
    batch = faithfulness_batch(profile, algorithm)
    rows = []
    for start in ("compiled", "random"):
        out = Path(runs_dir) / f"stability_{start}_{run_dir(config, runs_dir).name}"
        rows += stability.train_on_from(
            compiled, config, batch, out, profile.stability_points, start, progress
        )
    stability.write_stability(
        rows,
        algorithm,
        results_dir,
        figures_dir,
        metadata(profile, config=config.to_dict()),
    )
    return rows


def landscapes(
    profile: Profile,
    algorithm: str,
    runs_dir: str | os.PathLike,
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """D.11: compiled (minimal), learned (best baseline seed) and initial parameters."""
    import jax

    import nar_gap
    from nar_gap import landscape_study
    from nar_gap.train import init_stacked

    compiled = nar_gap.compile(algorithm, hidden_size=None)
    config = baseline_config(profile, algorithm)
    run = train_once(config, runs_dir, progress)
    best = int(np.argmax([m["test_score"] for m in run.metrics]))
    learned = jax.tree_util.tree_map(lambda x: x[best], run.params)
    batch = sample_batch(algorithm, profile.val_num_nodes, profile.batch_size, seed=2)
    centres = [
        landscape_study.Centre("compiled", compiled.config, compiled.params),
        landscape_study.Centre("learned", config.network, learned),
        landscape_study.Centre(  # the learned seed's own starting point
            "initial",
            config.network,
            jax.tree_util.tree_map(
                lambda x: x[0],
                init_stacked(config.network, batch, (int(config.seeds[best]),)),
            ),
        ),
    ]
    rows, surfaces = landscape_study.landscape_rows_and_surfaces(
        centres, batch, points=profile.landscape_points, progress=progress
    )
    landscape_study.write_landscapes(
        rows,
        surfaces,
        algorithm,
        results_dir,
        figures_dir,
        metadata(profile, learned_seed=int(config.seeds[best])),
    )
    return rows


# --------------------------------------------------------------------------- #
# 01 compile: figures of the compiled weights, the exactness table.
# --------------------------------------------------------------------------- #

EXAMPLE_EDGES = ((0, 1), (1, 3), (1, 4), (2, 5), (3, 5), (4, 5))  # clrs-semantics §2.1


def example_graph(num_nodes: int = 6) -> np.ndarray:
    """The walkthrough's small undirected graph (node 5 has two parents)."""
    weights = np.zeros((num_nodes, num_nodes))
    for u, v in EXAMPLE_EDGES:
        weights[u, v] = weights[v, u] = 1.0
    return weights


def compiled_figures(
    algorithms: Sequence[str], figures_dir: str | os.PathLike
) -> list[Path]:
    """Figures 6-7 (compiled weights, minimal size) and the example's attention."""
    import nar_gap
    from nar_gap import plots

    written = []
    for number, algorithm in zip((6, 7), algorithms, strict=False):
        model = nar_gap.compile(algorithm, hidden_size=None)
        figures = {
            f"fig{number}_{algorithm}_weights": plots.plot_compiled_weights(model),
            f"fig_compiled_{algorithm}_attention": plots.plot_attention_steps(
                model.run(example_graph(), source=0).attention,
                f"compiled {algorithm}: attention on the example graph",
            ),
        }
        for stem, fig in figures.items():
            written += io.save_figure(fig, Path(figures_dir) / stem)
            plots.close(fig)
    return written


def exactness_table(
    profile: Profile,
    algorithms: Sequence[str],
    results_dir: str | os.PathLike,
    graphs: int = 4,
    edge_probabilities: Sequence[float] = (0.5, 0.1),
) -> list[dict[str, Any]]:
    """Compiled models (minimal and hidden 128) against dm-clrs on sampled graphs."""
    import nar_gap

    rows = []
    for algorithm in algorithms:
        for hidden in (None, 128):
            model = nar_gap.compile(algorithm, hidden_size=hidden)
            for n in profile.exactness_sizes:
                for p in edge_probabilities:
                    batch = sample_batch(algorithm, n, graphs, seed=n, p=(p,))
                    mismatches = model.check(batch)
                    rows.append(
                        {
                            "algorithm": algorithm,
                            "hidden_size": model.layout.hidden_size,
                            "num_nodes": n,
                            "edge_probability": p,
                            "graphs": graphs,
                            "mismatches": len(mismatches),
                            "exact": not mismatches,
                            "first_mismatch": str(mismatches[0]) if mismatches else "",
                        }
                    )
    io.write_table(
        Path(results_dir) / "compiled_exactness.csv", rows, metadata(profile)
    )
    return rows
