"""Notebook 07's study (issue 18): its recipes and its computed answer.

The study itself runs end to end in ``test_notebooks.py`` (smoke profile).
"""

from __future__ import annotations

import pytest

from nar_gap.experiments import closing_gap, profiles
from nar_gap.experiments.runs import baseline_config


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
