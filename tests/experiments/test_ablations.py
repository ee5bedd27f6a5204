"""Ablation tables at smoke size: what each holds, reproducibility.

Their columns, bounds and resume are checked on the tables notebook 04 writes
(``test_notebooks.py::test_04_ablation_tables``): the notebook trains every
smoke table once, and the checks read what it wrote.
"""

from __future__ import annotations

import pytest

from nar_gap import experiments
from nar_gap.experiments import ablations, profiles, runs
from nar_gap.experiments.profiles import OutputDirs

# In the notebooks' pytest-xdist group: the slow reproduction test trains into
# the same runs directory as notebook 04 and resumes what it trained.
pytestmark = pytest.mark.xdist_group("chain_ablations")

SMOKE = profiles.get("smoke")
EXPERIMENTS = ablations.experiments(SMOKE)


def test_every_paper_ablation_is_there():
    assert set(EXPERIMENTS) == {
        "table11_edge_info",
        "table12_pre_att_bias",
        "table13_length_limited",
        "table14_no_hints",
        "table17_sequential",
        "table15_minimal",
        "d1_regularisation",
    }
    flags = {
        v.label: v.config.network for v in EXPERIMENTS["table11_edge_info"].variants
    }
    assert flags["edge information"].use_edge_info
    assert not flags["no edge information"].use_edge_info
    for v in EXPERIMENTS["table14_no_hints"].variants:
        assert (v.config.network.hint_mode == "none") == v.label.endswith("no hints")
    for v in EXPERIMENTS["table15_minimal"].variants:
        assert v.config.network.hidden_size == 4
        assert len(v.config.seeds) == SMOKE.minimal_seeds


def test_the_per_algorithm_tables_have_every_row_outside_smoke():
    for name in ("cpu", "paper"):
        built = ablations.experiments(profiles.get(name))
        algorithms = {
            table: [v.config.network.algorithm for v in built[table].variants]
            for table in ("table14_no_hints", "table15_minimal", "d1_regularisation")
        }
        assert algorithms["table14_no_hints"] == [
            a for a in ("bfs", "dfs", "bellman_ford") for _ in range(2)
        ]
        assert algorithms["table15_minimal"] == ["bfs"] * 2 + ["bellman_ford"] * 2
        assert algorithms["d1_regularisation"] == ["bfs"] * 3 + ["bellman_ford"] * 3
    # smoke keeps BFS's rows only (CI's budget), built by the same code
    assert {
        v.config.network.algorithm
        for table in ("table14_no_hints", "table15_minimal", "d1_regularisation")
        for v in EXPERIMENTS[table].variants
    } == {"bfs"}


def test_baselines_have_sizes_of_their_own():
    cpu = profiles.get("cpu")
    for algorithm, seeds, steps in (("bfs", 16, 150), ("bellman_ford", 4, 400)):
        config = runs.baseline_config(cpu, algorithm)
        assert (len(config.seeds), config.steps) == (seeds, steps)
        assert config.network.hidden_size == 128
    ablation = EXPERIMENTS["table11_edge_info"].variants[0].config
    assert ablation.network.hidden_size == SMOKE.hidden_size
    paper = runs.baseline_config(profiles.get("paper"), "dfs")
    assert (len(paper.seeds), paper.steps, paper.network.hidden_size) == (
        128,
        10_000,
        128,
    )


def test_paper_profile_has_the_papers_sizes():
    paper = ablations.experiments(profiles.get("paper"))
    minimal = paper["table15_minimal"].variants[0].config
    assert len(minimal.seeds) == 1024 and minimal.steps == 10_000
    edge = paper["table11_edge_info"].variants[0].config
    assert edge.network.hidden_size == 128 and len(edge.seeds) == 128
    extended = paper["d1_regularisation"].variants[2].config
    assert extended.steps == 50_000  # appendix A


# Retraining a whole table in a fresh directory doubles its cost, so it runs with
# `./run_tests.sh -m slow` only.  In CI, reruns are tested to give the same
# numbers at every level below a table: training (test_train, test_cli), the
# faithfulness chain, stability and landscapes (their own reproducibility tests).
REPRODUCED_IN_CI = None


def _dirs(runs, out):
    return OutputDirs(runs=runs, results=out, figures=out)


@pytest.mark.parametrize(
    "name",
    [
        n if n == REPRODUCED_IN_CI else pytest.param(n, marks=pytest.mark.slow)
        for n in sorted(EXPERIMENTS)
    ],
)
def test_each_table_reproduces_in_a_fresh_directory(name, shared_runs, tmp_path):
    experiment = EXPERIMENTS[name]
    rows = experiments.run_ablations(
        SMOKE, _dirs(shared_runs, tmp_path), [name], False
    )[name]
    again = ablations.run_experiment(experiment, tmp_path / "again", progress=False)
    assert again == rows


def test_unknown_ablations_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown ablations \\['table99'\\]"):
        experiments.run_ablations(SMOKE, _dirs(tmp_path, tmp_path), ["table99"])


def test_bellman_ford_has_an_edge_information_arm_of_the_same_sizes():
    cpu = profiles.get("cpu")
    plain = runs.baseline_config(cpu, "bellman_ford")
    arm = runs.baseline_config(cpu, "bellman_ford", edge_info=True)
    assert arm.network.use_edge_info and not plain.network.use_edge_info
    assert (arm.seeds, arm.steps, arm.network.hidden_size) == (
        plain.seeds,
        plain.steps,
        plain.network.hidden_size,
    )
    assert runs.run_dir(arm, "runs") != runs.run_dir(plain, "runs")


def test_the_forks_size_locked_arms_train_and_test_at_one_size():
    """Tables 11 and 13 gain the fork's definitions, each at the size its
    weights are built for; smoke has none (a compile per arm in CI)."""
    for name in ("cpu", "paper"):
        built = ablations.experiments(profiles.get(name))
        variants = {
            v.label: v.config
            for table in ("table11_edge_info", "table13_length_limited")
            for v in built[table].variants
        }
        for label in (ablations.FORK_EDGE_INFO_ARM, ablations.FORK_BOTH_ARM):
            config = variants[label]
            assert config.network.edge_map == "fork" and config.network.size_locked
            assert config.train_lengths == (16,)
            assert config.val_num_nodes == config.test_num_nodes == 16
            assert config.network.fork_num_nodes == 16
        fork_decoder = variants[ablations.FORK_DECODER_CONTROL].network
        assert fork_decoder.simple_pointer_decoder == "fork"
        assert not fork_decoder.use_edge_info
        # Table 11's control is Table 13's unmodified row: one run
        assert runs.run_dir(
            variants[ablations.FORK_EDGE_INFO_CONTROL], "r"
        ) == runs.run_dir(variants["unmodified"], "r")
    smoke = {
        v.label
        for table in ("table11_edge_info", "table13_length_limited")
        for v in EXPERIMENTS[table].variants
    }
    assert not smoke & {ablations.FORK_EDGE_INFO_ARM, ablations.FORK_BOTH_ARM}
