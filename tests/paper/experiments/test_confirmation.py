"""Notebook 09: 6c's hypotheses tested again on a fresh block of seeds."""

from __future__ import annotations

import dataclasses

import pytest

from nar_gap.paper.experiments import (
    confirmation,
    outputs,
    path_pointers,
    profiles,
    tie_test,
)
from nar_gap.paper.report import readme_results
from nar_gap.system import files

PAIR = ("attention_w10_x2", "plain_x2")


def test_the_catalogue_lists_the_tables_where_notebook_09_writes_them():
    for profile in (profiles.SMOKE, profiles.STUDIES):
        made = outputs.tables(profile)
        for name in confirmation.files_of():
            assert made[name] == "09_confirmation"
    for profile in (profiles.CPU, profiles.GPU):  # cpu shows studies' rows
        assert confirmation.results_file() not in outputs.tables(profile)


def test_each_hypothesis_is_a_cell_and_contrast_of_6c_s_design():
    contrasts = {(arm, against) for arm, against, _ in tie_test.CONTRASTS}
    for h in confirmation.HYPOTHESES:
        assert h.measure in tie_test.MEASURES and h.clrs_law in tie_test.GRID_LAWS
        assert h.num_nodes in tie_test.GRID_SIZES and h.side in ("fewer", "more")
        assert (h.arm, h.against) in contrasts and h.arm in confirmation.ARMS
        assert h.against in confirmation.ARMS


def test_the_fresh_block_is_seeds_no_other_study_trains():
    for profile in profiles.PROFILES.values():
        elsewhere = max(
            profile.seeds,
            tie_test.tie_seeds(profile),
            *(s.seeds for _, s in profile.baselines),
        )
        assert elsewhere <= confirmation.FIRST_SEED
        block = confirmation.seed_list(profile)
        assert block[:1] in ((), (confirmation.FIRST_SEED,))
        assert len(block) == confirmation.confirm_seeds(profile)
    assert confirmation.confirm_seeds(profiles.STUDIES) == 24
    assert confirmation.confirm_seeds(profiles.SMOKE) == 2
    assert confirmation.confirm_seeds(profiles.CPU) == 0


def test_the_arms_are_6c_s_configurations_but_for_the_seeds():
    profile = profiles.STUDIES
    fresh = tie_test.arm_configs(
        profile, "bfs", PAIR, confirmation.seed_list(profile), confirmation.ARMS
    )
    explored = tie_test.arm_configs(
        profile, "bfs", PAIR, profile.seed_list(tie_test.tie_seeds(profile))
    )
    assert set(fresh) == set(confirmation.ARMS)
    for arm, runs in fresh.items():
        assert [c.seeds[0] for c in runs] == [1_000, 1_008, 1_016]
        for config in runs:
            same = dataclasses.replace(config, seeds=explored[arm][0].seeds)
            assert same == explored[arm][0]


def _rows(sides: dict[tuple[bool, int], int], seeds: int = 8) -> list[dict]:
    """Per grid cell, the twin ``d`` away from supervised on every seed."""
    rows = []
    for (law, size), d in sides.items():
        for seed in range(seeds):
            for arm, count in (("supervised", 10 + seed), (path_pointers.TWIN, None)):
                value = 10 + seed + d if count is None else count
                rows.append(
                    {"contender": arm, "seed": seed, "clrs_law": law}
                    | {"num_nodes": size, "wrong_tied": value, "forced_lost": 0}
                )
    return rows


def test_the_hypotheses_are_confirmed_by_data_that_go_their_way_only():
    """Seen failing with both hypotheses given the same side."""
    (low, high) = confirmation.HYPOTHESES
    their_way = _rows({(low.clrs_law, 32): -3, (high.clrs_law, 128): +3})
    judged = confirmation.tests(their_way)
    assert [r["verdict"] for r in judged] == ["confirmed", "confirmed"]
    assert [r["num_nodes"] for r in judged] == [32, 128]
    against = confirmation.tests(
        _rows({(low.clrs_law, 32): +3, (high.clrs_law, 128): -3})
    )
    assert [r["verdict"] for r in against] == ["not confirmed"] * 2
    assert all(r["p_other_way"] < 0.01 for r in against)


def test_the_rendered_table_sets_the_fresh_block_beside_6c_s_rows(tmp_path):
    """Seen failing with 6c's rows matched on measure and arm alone (another
    size's or law's row shown), and with the sentence on too few seeds left
    out."""
    (low, high) = confirmation.HYPOTHESES
    rows = _rows({(low.clrs_law, 32): -3, (high.clrs_law, 128): +3}, seeds=2)
    files.write_table(tmp_path / confirmation.results_file(), confirmation.tests(rows))
    explored = [
        {"measure": "wrong_tied", "clrs_law": law, "num_nodes": n}
        | {"arm": path_pointers.TWIN, "seeds": 24, "fewer_seeds": fewer}
        | {"p_fewer": p, "more_seeds": 24 - fewer, "p_more": 0.99}
        # the hypothesis's cell, then the other cells of its law and size
        for law, n, fewer, p in (
            (low.clrs_law, 32, 18, 0.0037),
            (low.clrs_law, 64, 5, 0.5),
            (high.clrs_law, 32, 7, 0.6),
        )
    ]
    files.write_table(tmp_path / tie_test.tests_file("bfs"), explored)
    text = readme_results.confirmation_table(tmp_path)
    assert "0 of 2 hypotheses confirmed" in text
    first, second = (line for line in text.splitlines() if "`wrong_tied`" in line)
    assert first.endswith("| 18/24, p 0.0037 |") and second.endswith("| – |")
    assert "At 2 seeds per arm the test cannot go below p = 0.25" in text


@pytest.mark.parametrize("profile", [profiles.SMOKE, profiles.STUDIES])
def test_a_profile_runs_the_confirmation_where_it_runs_6c_and_asks_for_seeds(
    profile,
):
    assert confirmation.runs_at(profile) == path_pointers.has_section(profile, "bfs")
    none = dataclasses.replace(profile.studies, confirm_seeds=0)
    assert not confirmation.runs_at(dataclasses.replace(profile, studies=none))
