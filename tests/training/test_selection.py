"""Model selection: which validated parameters a run keeps, and where they are from.

The rule (``TrainConfig.selection``) is tested on its own on constructed
validation sequences; the loop is tested on small runs (``test_train.py``'s
``SMALL``, so the compiled step is shared with its resume tests).
"""

from __future__ import annotations

import dataclasses
import json
import shutil

import flax.serialization
import jax
import numpy as np
import pytest
from test_train import SMALL

import nar_gap.training.loop as loop
from nar_gap.paper.experiments import profiles, runs
from nar_gap.training import CheckpointError, TrainConfig, load_run, train
from nar_gap.training.loop import improved, selected_position
from nar_gap.training.run_dir import (
    continue_from,
    load_current_params,
    read_validation,
)

# test_train.SMALL: 20 steps, two validations after step 0.
CONFIG = dataclasses.replace(SMALL, steps=20, eval_every=10, checkpoint_every=10)


def _leaves_equal(a, b) -> bool:
    return all(
        np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(
            jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True
        )
    )


def _seed(tree, index):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[index], tree)


@pytest.mark.parametrize(
    ("rule", "position"), [("first_best", 1), ("last_best", 2), ("final", 3)]
)
def test_each_rule_selects_its_step_of_a_validation_sequence(rule, position):
    """0.5, 1.0, 1.0, 0.9: the first 1.0, the second 1.0, the last step."""
    assert selected_position([0.5, 1.0, 1.0, 0.9], rule) == position


def test_the_rule_decides_per_seed():
    scores = np.array([0.5, 1.0, 0.9, np.nan])
    best = np.array([0.4, 1.0, 1.0, 0.2])
    assert improved(scores, best, "first_best").tolist() == [
        True,
        False,
        False,
        False,
    ]
    assert improved(scores, best, "last_best").tolist() == [True, True, False, False]
    assert improved(scores, best, "final").tolist() == [True] * 4  # NaN too
    # a seed nothing was selected for yet takes its first finite score
    assert selected_position([np.nan, 0.0, 0.0], "first_best") == 1
    assert selected_position([np.nan], "first_best") is None
    with pytest.raises(ValueError, match="selection must be one of"):
        improved(scores, best, "best")


def test_an_unknown_selection_rule_is_one_line_naming_the_choices():
    with pytest.raises(ValueError) as error:
        dataclasses.replace(CONFIG, selection="best")
    message = str(error.value)
    assert "\n" not in message
    assert "('first_best', 'last_best', 'final')" in message


def test_configs_written_before_selection_load_with_clrs_rule():
    payload = CONFIG.to_dict()
    del payload["selection"]
    assert TrainConfig.from_dict(payload) == CONFIG
    assert CONFIG.selection == "first_best"
    # the default keeps every run's address; another rule is another run
    baseline = runs.baseline_config(profiles.get("cpu"), "bfs")
    assert runs.run_dir(baseline, "r").name == "bfs_fe06fe523164"
    other = dataclasses.replace(baseline, selection="last_best")
    assert runs.run_dir(other, "r") != runs.run_dir(baseline, "r")


def test_a_fresh_run_validates_step_0_and_records_its_selection(tmp_path, monkeypatch):
    result = train(CONFIG, tmp_path / "run", progress=False)
    history = read_validation(tmp_path / "run")
    assert [(r["step"], r["seed"]) for r in history] == [
        (step, seed) for step in (0, 10, 20) for seed in CONFIG.seeds
    ]
    assert all(np.isnan(r["train_loss"]) for r in history if r["step"] == 0)
    header = (tmp_path / "run" / "metrics.csv").read_text().splitlines()[0]
    assert {"selection", "selected_step"} <= set(header.split(","))
    for metrics in result.metrics:
        assert metrics["selection"] == "first_best"
        assert metrics["selection_reset_step"] == 0
        mine = [r for r in history if r["seed"] == metrics["seed"]]
        chosen = selected_position([r["val_score"] for r in mine], "first_best")
        assert metrics["selected_step"] == mine[chosen]["step"]
        assert metrics["best_val_score"] == mine[chosen]["val_score"]

    # The same run without the step-0 validation: the same trained parameters,
    # and the same selection wherever step 0 was not selected.
    monkeypatch.setattr(loop, "starts_fresh", lambda state: False)
    without = train(CONFIG, tmp_path / "without", progress=False)
    assert {r["step"] for r in read_validation(tmp_path / "without")} == {10, 20}
    assert _leaves_equal(
        load_current_params(tmp_path / "run"),
        load_current_params(tmp_path / "without"),
    )
    for k, (a, b) in enumerate(zip(result.metrics, without.metrics, strict=True)):
        if a["selected_step"] != 0:
            assert a["selected_step"] == b["selected_step"]
            assert a["test_score"] == b["test_score"]
            assert _leaves_equal(_seed(result.params, k), _seed(without.params, k))


def test_load_run_reads_selected_or_final_parameters(tmp_path):
    out = tmp_path / "run"
    result = train(dataclasses.replace(CONFIG, steps=10), out, progress=False)
    selected = load_run(out)
    final = load_run(out, parameters="final")
    assert selected.parameters == "selected" and final.parameters == "final"
    assert _leaves_equal(selected.params, result.params)
    assert _leaves_equal(final.params, load_current_params(out))
    assert final.metrics == selected.metrics  # the selected parameters' scores
    for k, metrics in enumerate(selected.metrics):
        same = _leaves_equal(_seed(selected.params, k), _seed(final.params, k))
        assert same == (metrics["selected_step"] == 10)
    # A run asked for more steps than its checkpoints hold (interrupted).
    cut = tmp_path / "cut"
    shutil.copytree(out, cut)
    config = json.loads((cut / "config.json").read_text())
    (cut / "config.json").write_text(json.dumps({**config, "steps": 20}))
    with pytest.raises(CheckpointError, match="at step 10, not the run's last step"):
        load_run(cut, parameters="final")
    with pytest.raises(ValueError, match="parameters must be one of"):
        load_run(out, parameters="best")


def _at_the_ceiling(path):
    """Rewrite a checkpoint as if its selected step had validated at 1.0."""
    state = flax.serialization.msgpack_restore(path.read_bytes())
    path.write_bytes(flax.serialization.msgpack_serialize({**state, "best_val": 1.0}))


def test_continue_from_with_reselect_lets_a_later_step_win(tmp_path):
    """A shorter run whose seeds validated at the ceiling, trained on.

    Without ``reselect``, CLRS's rule keeps the shorter run's parameters
    (nothing beats 1.0); with it, selection starts again after step 10 and the
    only later validation, step 20, is selected.  The trained parameters are
    the same either way.
    """
    short = dataclasses.replace(CONFIG, steps=10)
    train(short, tmp_path / "short", progress=False)
    for seed in CONFIG.seeds:
        _at_the_ceiling(tmp_path / "short" / f"seed_{seed}" / "checkpoint.msgpack")
    assert continue_from(tmp_path / "short", CONFIG, tmp_path / "kept") == list(
        CONFIG.seeds
    )
    continue_from(tmp_path / "short", CONFIG, tmp_path / "again", reselect=True)
    kept = train(CONFIG, tmp_path / "kept", progress=False)
    again = train(CONFIG, tmp_path / "again", progress=False)
    assert all(m["selected_step"] <= 10 for m in kept.metrics)
    assert all(m["selection_reset_step"] == 0 for m in kept.metrics)
    assert all(m["selected_step"] == 20 for m in again.metrics)
    assert all(m["selection_reset_step"] == 10 for m in again.metrics)
    assert _leaves_equal(load_run(again.out_dir, "final").params, again.params)
    assert _leaves_equal(
        load_current_params(tmp_path / "kept"), load_current_params(tmp_path / "again")
    )
    # step 10 is not validated again: one row per (seed, step)
    history = read_validation(tmp_path / "again")
    assert [(r["step"], r["seed"]) for r in history] == [
        (step, seed) for step in (0, 10, 20) for seed in CONFIG.seeds
    ]


def test_shorter_run_finds_what_a_configuration_continues(tmp_path):
    """Fewer or as many steps, a subset of the seeds, any selection rule.

    Of two as long, the run selecting by the same rule (an exact straight run)
    wins; another rule asks for the selection reset; anything else that
    differs (the width), a seed the run lacks, more steps or the very same
    configuration gives none.
    """
    from nar_gap.training.run_dir import Start, shorter_run

    asked = dataclasses.replace(CONFIG, seeds=(4, 5), selection="final")
    baseline = dataclasses.replace(CONFIG, steps=20)  # first_best, seeds 4-7
    short = dataclasses.replace(asked, steps=10)
    assert shorter_run(asked, [(baseline, tmp_path / "b")]) == Start(
        tmp_path / "b", reselect=True
    )
    assert shorter_run(
        asked, [(baseline, tmp_path / "b"), (short, tmp_path / "s")]
    ) == (Start(tmp_path / "b", reselect=True))
    same_rule = dataclasses.replace(baseline, selection="final")
    both = [(baseline, tmp_path / "b"), (same_rule, tmp_path / "f")]
    assert shorter_run(asked, both) == Start(tmp_path / "f", reselect=False)
    wider = dataclasses.replace(
        baseline, network=dataclasses.replace(baseline.network, hidden_size=16)
    )
    for other in (
        wider,
        dataclasses.replace(baseline, seeds=(5, 6)),
        dataclasses.replace(baseline, steps=30),
        asked,
    ):
        assert shorter_run(asked, [(other, tmp_path / "o")]) is None, other


def test_a_final_run_started_from_a_first_best_run_trains_nothing(
    tmp_path, monkeypatch
):
    """Notebook 07's ``plain`` recipe: the baseline's first seeds, last step.

    Started from a first_best run of the same steps (its selection reset),
    the final-rule run keeps each seed's last parameters and trains no step;
    without the reset the two rules may not share a run.
    """
    from nar_gap.training.run_dir import load_run

    baseline = train(CONFIG, tmp_path / "baseline", progress=False)
    asked = dataclasses.replace(CONFIG, seeds=(4, 5), selection="final")
    with pytest.raises(CheckpointError, match="selection"):
        continue_from(tmp_path / "baseline", asked, tmp_path / "no")
    assert continue_from(
        tmp_path / "baseline", asked, tmp_path / "plain", reselect=True
    ) == [4, 5]

    def refuse(*args, **kwargs):
        raise AssertionError("a finished step was trained again")

    monkeypatch.setattr(loop, "train_group", refuse)
    plain = train(asked, tmp_path / "plain", progress=False)
    last = load_run(baseline.out_dir, "final").params
    assert _leaves_equal(plain.params, _seed(last, slice(0, 2)))
    assert [m["selected_step"] for m in plain.metrics] == [20, 20]
    history = read_validation(tmp_path / "plain")
    assert [(r["step"], r["seed"]) for r in history] == [
        (step, seed) for step in (0, 10, 20) for seed in (4, 5)
    ]
