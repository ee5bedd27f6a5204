"""The paper profile's dry run: the real run's programs, each run once.

What a dry run must keep (seed counts, widths, batch shapes, graph and
evaluation sizes: what decides the compiled programs and their memory) and
what it may cut (steps, evaluation graphs, repeated evaluation points).  The
slow test runs it end to end, as ``./run_all.sh --profile paper --dry-run``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from nar_gap.model.config import NetworkConfig
from nar_gap.paper.experiments import profiles, runs
from nar_gap.system.files import read_table
from nar_gap.tasks.sampling import eval_batch
from nar_gap.training import TrainConfig, train

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

# What decides a program's shapes, seeds and memory: a dry run keeps these.
KEPT = (
    "seeds",
    "hidden_size",
    "batch_size",
    "train_lengths",
    "val_num_nodes",
    "test_num_nodes",
    "node_buckets",
    "time_buckets",
    "shape_buckets",
    "minimal_seeds",
    "stability_orders",
    "exactness_sizes",
    "sequential_lengths",
    "closing_gap_seeds",
    "closing_gap_long_factor",
    "generalisation_sizes",
    "ablation_algorithms",
    "minimal_search_algorithms",
    "edge_info_baselines",
    "stability_controls",
)


@pytest.mark.parametrize("name", list(profiles.PROFILES))
def test_a_dry_run_keeps_every_shape_and_seed_count_and_cuts_the_steps(name):
    real = profiles.get(name)
    dry = profiles.get(f"{name}-dry")
    assert dry.name == f"{name}-dry"
    for field in KEPT:
        assert getattr(dry, field) == getattr(real, field), field
    for algorithm in ("bfs", "bellman_ford", "dfs"):
        kept, cut = real.baseline_sizes(algorithm), dry.baseline_sizes(algorithm)
        assert (cut.seeds, cut.hidden_size) == (kept.seeds, kept.hidden_size)
        assert cut.steps == profiles.DRY_STEPS
    assert dry.steps == profiles.DRY_STEPS < real.steps
    assert dry.eval_graphs == profiles.DRY_EVAL_GRAPHS
    assert dry.faithfulness_graphs <= profiles.DRY_EVAL_GRAPHS
    config = dry.train_config(NetworkConfig("bfs", hidden_size=dry.hidden_size))
    assert (config.steps, config.eval_every, config.eval_graphs) == (1, 1, 2)


def test_a_dry_run_has_its_own_folders_and_unknown_names_are_refused():
    dirs = profiles.output_dirs("paper-dry")
    assert dirs.results.parts[-3:] == ("build", "paper-dry", "results")
    assert dirs.runs.parts[-3:] == ("build", "runs", "paper-dry")
    with pytest.raises(ValueError, match="paper-dry"):
        profiles.get("paper-dryer")


def test_evaluation_cut_to_a_few_graphs_is_the_split_s_first_graphs():
    whole = eval_batch("bfs", "val", 16)
    cut = eval_batch("bfs", "val", 16, graphs=2)
    assert cut.batch_size == 2 and whole.batch_size > 2
    assert cut.num_steps == whole.num_steps  # the split's program, fewer graphs
    for name, hint in cut.hints.items():
        np.testing.assert_array_equal(hint, whole.hints[name][:, :2])
    np.testing.assert_array_equal(cut.lengths, whole.lengths[:2])


def test_eval_graphs_at_its_default_leaves_every_run_s_directory_where_it_was():
    config = TrainConfig(NetworkConfig("bfs", hidden_size=8))
    payload = config.to_dict()
    del payload["eval_graphs"]  # a run hashed before the field existed
    old = TrainConfig.from_dict(payload)
    assert runs.run_dir(old, "r") == runs.run_dir(config, "r")
    cut = dataclasses.replace(config, eval_graphs=2)
    assert runs.run_dir(cut, "r") != runs.run_dir(config, "r")


def test_training_with_eval_graphs_validates_and_tests_on_that_many(
    tmp_path, monkeypatch
):
    from nar_gap.training import loop

    used = []

    def recording(*args, **kwargs):
        batch = eval_batch(*args, **kwargs)
        used.append(batch.batch_size)
        return batch

    monkeypatch.setattr(loop, "eval_batch", recording)
    config = TrainConfig(
        NetworkConfig("bfs", hidden_size=8),
        seeds=(0,),
        steps=1,
        batch_size=4,
        train_lengths=(4,),
        val_num_nodes=4,
        test_num_nodes=4,
        eval_every=1,
        checkpoint_every=1,
        node_buckets=(4,),
        time_buckets=(8,),
        shape_buckets=(),
        eval_graphs=3,
    )
    train(config, tmp_path / "run", progress=False)
    assert used == [3, 3]  # validation, test
    with pytest.raises(ValueError, match="eval_graphs"):
        dataclasses.replace(config, eval_graphs=-1)


@pytest.mark.slow
def test_the_paper_profile_s_dry_run_executes_every_notebook(tmp_path):
    """``./run_all.sh --profile paper --dry-run``, from start to end.

    Every notebook executes with the paper profile's seeds, widths and
    sizes; every table it writes says so in its sidecar; every run the plan
    (``nar-gap plan``) counts was trained, at the paper's seed count.  (Its
    time on 2 cores is measured in docs/notebooks.md, not asserted here.)
    """
    from nar_gap.paper.tools import plan

    runs = tmp_path / "runs"
    done = subprocess.run(
        ["./run_all.sh", "--profile", "paper", "--dry-run", "--force"]
        + ["--out", str(tmp_path), "--runs", str(runs)],
        cwd=ROOT,
        env={**os.environ, "NAR_GAP_JOBS": "2"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    executed = sorted(p.stem for p in (tmp_path / "notebooks").glob("*.ipynb"))
    assert executed == [p.stem for p in NOTEBOOKS]
    tables = sorted((tmp_path / "results").glob("*.csv"))
    assert len(tables) >= len(NOTEBOOKS)
    sized = 0
    for table in tables:
        sidecar = json.loads(table.with_name(table.name + ".json").read_text())
        assert sidecar["profile"] == "paper-dry", table.name
        assert read_table(table), f"{table.name} has no rows"
        if "profile_sizes" in sidecar:  # the paper-vs-ours tables name only the profile
            assert sidecar["profile_sizes"]["seeds"] == profiles.PAPER.seeds
            sized += 1
    assert sized >= len(tables) - len(NOTEBOOKS)
    planned = plan.inventory(profiles.get("paper-dry"))
    for trainings in planned.values():
        for training in trainings:
            config = json.loads((runs / training.run / "config.json").read_text())
            assert len(config["seeds"]) == len(training.config.seeds), training.run
