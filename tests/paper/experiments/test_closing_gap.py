"""Notebook 07's study (issue 18): its recipes and its computed answer.

The study itself runs end to end in ``test_notebooks.py`` (smoke profile).
"""

from __future__ import annotations

import pytest

from nar_gap.paper.experiments import closing_gap, profiles
from nar_gap.paper.experiments.runs import baseline_config


def _row(variant, internal, agreement, accuracy):
    return {
        "variant": variant,
        "internal": internal,
        "argmax_agreement": agreement,
        "accuracy": accuracy,
    }


def test_the_recipes_share_seeds_and_width_and_differ_in_one_thing_each():
    profile = profiles.get("smoke")
    configs = closing_gap.variant_configs(profile, "bfs")
    assert tuple(configs) == closing_gap.VARIANTS
    plain = configs["plain"]
    assert plain == baseline_config(profile, "bfs")  # notebook 02's run, reused
    seeds = plain.seeds[: profile.closing_gap_seeds]
    assert len(seeds) == profile.closing_gap_seeds < len(plain.seeds)
    assert all(configs[v].seeds == seeds for v in ("attention", "state", "long"))
    assert {c.network.hidden_size for c in configs.values()} == {
        plain.network.hidden_size
    }
    assert configs["attention"].attention_weight == profile.supervision_weight > 0
    assert plain.attention_weight == plain.state_weight == 0
    assert configs["state"].state_weight == profile.supervision_weight
    assert configs["state"].network.state_probe_size > 0
    assert plain.network.state_probe_size == 0
    assert configs["long"].steps == plain.steps * profile.closing_gap_long_factor
    assert configs["long"].network == plain.network


def test_the_verdict_names_the_faithful_variants():
    rows = [
        _row("compiled", 0.0, 1.0, 1.0),
        _row("plain", 0.6, 0.7, 0.99),
        _row("attention", 0.04, 0.995, 0.995),
    ]
    assert closing_gap.is_faithful(rows[2]) and not closing_gap.is_faithful(rows[1])
    assert closing_gap.verdict(rows).startswith("attention meet the bar")


@pytest.mark.parametrize(
    "internal, agreement, accuracy",
    [(0.06, 0.995, 0.995), (0.04, 0.98, 0.995), (0.04, 0.995, 0.98)],
)
def test_missing_any_one_bar_is_a_negative_answer(internal, agreement, accuracy):
    rows = [
        _row("compiled", 0.0, 1.0, 1.0),
        _row("plain", 0.6, 0.7, 0.99),
        _row("attention", internal, agreement, accuracy),
    ]
    text = closing_gap.verdict(rows)
    assert text.startswith("No variant meets the bar")
    assert "Closest: attention" in text  # the compiled row is not a candidate


def test_time_rows_average_the_hints_then_give_mean_and_std_over_seeds():
    import numpy as np

    from nar_gap.analysis.models import SeedEvaluation

    evaluation = SeedEvaluation(
        seeds=(0, 1),
        scalars={},
        series={
            "external_a_uniform": np.array([[1.0, 0.5], [1.0, 0.0]]),
            "external_b_uniform": np.array([[1.0, 1.0], [0.0, 0.0]]),
            "external_a_along_time": np.array([[9.0, 9.0], [9.0, 9.0]]),  # not used
            "internal_along_time": np.array(
                [[0.1, np.nan, np.nan], [0.3, 0.5, np.nan]]
            ),
        },
        attention=np.zeros(()),
        lengths=np.zeros(()),
    )
    rows = closing_gap.time_rows("attention", evaluation)
    external = [r for r in rows if r["measure"] == "external"]
    internal = [r for r in rows if r["measure"] == "internal"]
    assert {r["clock"] for r in external} == {"uniform"}
    assert [r["position"] for r in external] == [0.25, 0.75]
    assert [r["mean"] for r in external] == pytest.approx([0.75, 0.375])
    assert [r["std"] for r in external] == pytest.approx([0.25, 0.375])
    # step 2 has no value in any seed: left out; step 1 has one seed
    assert [(r["position"], r["seeds"]) for r in internal] == [(0, 2), (1, 1)]
    assert [r["mean"] for r in internal] == pytest.approx([0.2, 0.5])
    assert [r["std"] for r in internal] == pytest.approx([0.1, 0.0])
    assert {r["variant"] for r in rows} == {"attention"}


def _seed_metrics(seed, step, score, rule="first_best", reset=0):
    return {
        "seed": seed,
        "best_val_score": score,
        "selection": rule,
        "selection_reset_step": reset,
        "selected_step": step,
    }


def test_a_row_lists_each_seeds_selected_step():
    metrics = [
        _seed_metrics(0, 50, 1.0),
        _seed_metrics(1, 200, 0.9),
        _seed_metrics(2, 100, 1.0),
    ]
    columns = closing_gap.selection_columns(metrics, seeds=(2, 0))
    assert columns == {
        "selection": "first_best",
        "selected_steps": "100 50",
        "selected_step_min": 50,
        "selected_step_max": 100,
    }


def test_the_long_row_counts_seeds_selected_after_plain_and_says_why_not():
    metrics = [
        _seed_metrics(0, 400, 1.0, reset=200),  # selected after plain's 200 steps
        _seed_metrics(1, 200, float("nan"), reset=200),  # never finite after 200
        _seed_metrics(2, 50, 1.0),  # continued without reselect: at the ceiling
        _seed_metrics(3, 150, 0.8),
    ]
    columns = closing_gap.selection_columns(metrics, (0, 1, 2, 3), plain_steps=200)
    assert columns["selected_after_plain"] == 1
    reasons = columns["not_after_plain"].split("; ")
    assert reasons == [
        "seed 1: no finite validation score after step 200",
        "seed 2: first_best keeps step 50, validated at the ceiling 1.0, which "
        "no later step can beat",
        "seed 3: first_best keeps step 150: no later step scored higher than 0.800",
    ]
    everyone = closing_gap.selection_columns(metrics[:1], (0,), plain_steps=200)
    assert everyone["selected_after_plain"] == 1
    assert everyone["not_after_plain"] == ""


def test_the_long_recipe_has_its_own_reselected_directory(tmp_path):
    configs = closing_gap.variant_configs(profiles.get("smoke"), "bfs")
    long_dir = closing_gap.long_run_dir(configs["long"], tmp_path)
    plain_address = closing_gap.run_dir(configs["long"], tmp_path)
    assert long_dir.name == f"{plain_address.name}_reselected"
