"""The causal-gap answers go both ways on built effects, and the swaps and
probes on the compiled BFS give the answers known for it."""

from __future__ import annotations

import functools

import nar_gap
from nar_gap.analysis.verdicts import NO, YES
from nar_gap.paper.experiments import causal_gap
from nar_gap.tasks.batch import concat_batches
from nar_gap.tasks.families import path


def _seed_row(score, compiled_att, uniform, compiled_with):
    return {
        "score": score,
        "with_compiled_attention": compiled_att,
        "with_uniform_attention": uniform,
        "with_self_attention": uniform,
        "compiled_score": 1.0,
        "compiled_with_seed_attention": compiled_with,
    }


def _probe_row(model, variable, state, inputs, decoder, mlp=None):
    return {
        "model": model,
        "variable": variable,
        "step": "all",
        "probe_state": state,
        "probe_state_mlp": state if mlp is None else mlp,
        "probe_inputs": inputs,
        "decoder": decoder,
    }


def test_the_answers_say_which_part_moves_the_output_both_ways():
    """Seeds that keep their score under the compiled attention but not under
    uniform attention, and whose attention breaks the compiled network: no, yes,
    yes.  Seeds whose score falls under the compiled attention: yes."""
    jitter = (0.0, 0.001, -0.001, 0.002)
    keeps = [_seed_row(0.99, 0.99 + j, 0.3 + j, 0.1 + j) for j in jitter]
    falls = [_seed_row(0.99, 0.6 + j, 0.3 + j, 0.99 + j) for j in jitter]
    probe = [
        *(_probe_row("random init", "reach_h", 0.6, 0.6, 0.5) for _ in range(2)),
        *(_probe_row("trained", "reach_h", 0.9 + j, 0.95 + j, 0.7) for j in jitter),
    ]
    by_part = {r["part"]: r for r in causal_gap.answer_rows(keeps, probe)}
    assert by_part["attention"]["answer"] == NO
    assert by_part["attention (control)"]["answer"] == YES
    assert by_part["attention, in the compiled mechanism"]["answer"] == YES
    assert by_part["the values (reach_h)"]["answer"] == YES  # 0.9 against 0.6
    assert by_part["the decoder (reach_h)"]["answer"] == YES  # 0.95 against 0.7
    assert all(r["beyond_the_paper"] for r in by_part.values())
    other = {r["part"]: r for r in causal_gap.answer_rows(falls, probe)}
    assert other["attention"]["answer"] == YES
    assert other["attention, in the compiled mechanism"]["answer"] == NO
    assert "n = 4 seeds" in other["attention"]["evidence"]


@functools.cache
def _compiled_on_paths():
    model = nar_gap.compile("bfs", hidden_size=None)
    graphs = [
        nar_gap.data.batch_from_graph("bfs", path(6), source=s) for s in (0, 5, 2)
    ]
    return model, concat_batches(graphs)


def test_the_compiled_bfs_swapped_with_itself_changes_nothing_and_uniform_does():
    model, batch = _compiled_on_paths()
    seeds, steps = causal_gap.swap_rows([(0, model), (1, model)], model, batch, False)
    for row in seeds:
        assert row["score"] == row["with_compiled_attention"] == 1.0
        assert row["compiled_with_seed_attention"] == row["compiled_score"] == 1.0
        assert row["with_self_attention"] < 0.5
    assert {r["step"] for r in steps} == set(range(len(steps) // 2))
    assert all(r["with_compiled_attention"] == 1.0 for r in steps)
    answers = {r["part"]: r["answer"] for r in causal_gap.answer_rows(seeds, [])}
    assert answers["attention"] == NO
    assert answers["attention (control)"] == YES


def test_the_compiled_decoder_reads_every_counted_row_right():
    model, batch = _compiled_on_paths()
    rows = causal_gap.probe_table([("compiled", -1, model)], batch, batch, False)
    pooled = [r for r in rows if r["step"] == "all"]
    assert {r["variable"] for r in pooled} == {"reach_h", "pi_h"}
    assert all(r["decoder"] == 1.0 for r in rows)
    assert sum(r["rows"] for r in rows if r["step"] != "all") == sum(
        r["rows"] for r in pooled
    )


def test_a_probe_question_whose_floor_reads_the_variable_is_not_testable():
    """A random network that already reads reach_h at 0.995 leaves no room for a
    trained state to read it better: not "no", not testable."""
    seeds = [_seed_row(0.99, 0.99 + j, 0.3, 0.1) for j in (0.0, 0.001, 0.002)]
    probe = [
        _probe_row("random init", "reach_h", 0.995, 0.995, 0.5),
        *(_probe_row("trained", "reach_h", 1.0, 1.0, 1.0) for _ in range(3)),
    ]
    by_part = {r["part"]: r for r in causal_gap.answer_rows(seeds, probe)}
    assert by_part["the values (reach_h)"]["answer"] == causal_gap.NOT_TESTABLE
    assert "0.995" in by_part["the values (reach_h)"]["evidence"]
    assert by_part["the decoder (reach_h)"]["answer"] == NO


def test_a_probe_that_misses_the_compiled_network_s_variable_says_so():
    seeds = [_seed_row(0.99, 0.99 + j, 0.3, 0.1) for j in (0.0, 0.001, 0.002)]
    probe = [
        _probe_row("random init", "pi_h", 0.8, 0.8, 0.2),
        _probe_row("compiled", "pi_h", 0.63, 0.85, 1.0),
        *(_probe_row("trained", "pi_h", 0.94 + j, 0.93, 0.99) for j in (0, 0.01, 0.02)),
    ]
    by_part = {r["part"]: r for r in causal_gap.answer_rows(seeds, probe)}
    assert "compiled network's at 0.630" in by_part["the values (pi_h)"]["evidence"]
    assert "compiled network's at 0.850" in by_part["the decoder (pi_h)"]["evidence"]
    assert by_part["the values (pi_h)"]["answer"] == YES
    assert by_part["the decoder (pi_h)"]["answer"] == NO


def test_the_mlp_probe_is_asked_apart_and_can_find_what_the_linear_one_misses():
    """A state the linear probe reads at its floor but the MLP beyond it: the
    linear question says no, the MLP's yes; with the MLP at its floor too,
    both say no."""
    seeds = [_seed_row(0.99, 0.99 + j, 0.3, 0.1) for j in (0.0, 0.001, 0.002)]

    def answers(mlp_gain):
        probe = [
            _probe_row("random init", "pi_h", 0.6, 0.6, 0.2, mlp=0.6),
            *(
                _probe_row("trained", "pi_h", 0.5 + j, 0.9, 0.9, mlp=0.6 + mlp_gain + j)
                for j in (0, 0.01, 0.02)
            ),
        ]
        return {r["part"]: r["answer"] for r in causal_gap.answer_rows(seeds, probe)}

    nonlinear = answers(0.3)
    assert nonlinear["the values (pi_h)"] == NO
    assert nonlinear["the values (pi_h, MLP)"] == YES
    assert answers(-0.1)["the values (pi_h, MLP)"] == NO


def test_the_paper_profile_asks_the_causal_gap_of_every_studied_algorithm():
    """Issue 50 names DFS's variables (colour, parent, time) among the probes'
    targets; its section runs in the paper profile, sized for an accelerator
    (one rollout per step swapped, over traces of about 3N steps)."""
    from nar_gap.paper.experiments import profiles

    studied = ("bfs", "bellman_ford", "dfs")
    assert profiles.PAPER.causal_gap_algorithms == studied
    for profile in profiles.PROFILES.values():
        assert set(profile.causal_gap_algorithms) <= set(studied), profile.name
