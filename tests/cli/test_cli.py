"""The nar-gap command line: one-line errors with exit code 2, reproducible runs."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nar_gap
from nar_gap.cli import main
from nar_gap.tasks.graphs import batch_from_graph, read_edge_list

# Small enough to compile and run in seconds; shares nothing with test_train.
TINY = [
    "--seeds",
    "0",
    "1",
    "--steps",
    "3",
    "--hidden-size",
    "8",
    "--train-lengths",
    "5",
    "--test-num-nodes",
    "5",
    "--eval-every",
    "0",
    "--checkpoint-every",
    "0",
    "--quiet",
]


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "Traceback" not in err
    assert err.startswith("nar-gap")
    return err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "dijkstra", "--out", "X"], "dijkstra"),
        (["train", "bfs", "--out", "X", "--steps", "-3"], "steps must be >= 0"),
        (["train", "bfs", "--out", "X", "--hidden-size", "0"], "hidden_size"),
        (["train", "bfs", "--out", "X", "--seeds", "2", "2"], "seeds must be distinct"),
        (["train", "bfs", "--out", "X", "--shape-buckets", "8by8"], "16x12"),
        (["train", "bfs", "--out", "X", "--seeds", "many"], "--seeds"),
        (["train", "bfs", "--out", "X", "--hint-mode", "sometimes"], "--hint-mode"),
        (["train", "bfs"], "--out"),
        (["fly"], "fly"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    argv, expected, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    assert expected in _one_line_error(capsys)


def _train_parser():
    import argparse

    from nar_gap.cli import _build_parser

    commands = next(
        a for a in _build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    return commands.choices["train"]


def test_every_config_field_is_a_train_flag_of_its_name_and_documented():
    """Walks TrainConfig and NetworkConfig: a field added to either is a flag of
    its own name at once, with its documented line as help (seen failing on
    the hand-written parser: 28 fields had no flag of their name, 5 of them
    under another)."""
    from nar_gap.cli_flags import field_docs, flag
    from nar_gap.model.config import NetworkConfig
    from nar_gap.training import TrainConfig

    actions = {o: a for a in _train_parser()._actions for o in a.option_strings}
    missing, undocumented = [], []
    for config, own in ((TrainConfig, "network"), (NetworkConfig, "algorithm")):
        docs = field_docs(config)
        for field in dataclasses.fields(config):
            if field.name == own:
                continue
            if flag(field.name) not in actions:
                missing.append(field.name)
            elif not docs.get(field.name):
                undocumented.append(field.name)
    assert missing == [] and undocumented == []


def test_every_train_flag_reaches_the_config(tmp_path, monkeypatch):
    """A value other than the default for every field, through the real
    parser, arrives in the TrainConfig handed to training."""
    import nar_gap.training
    from nar_gap.training import TrainConfig

    given = {}
    monkeypatch.setattr(
        nar_gap.training,
        "train",
        lambda config, *_, **__: given.setdefault("c", config),
    )
    argv = ["train", "bfs", "--out", str(tmp_path / "r"), "--seeds", "3", "4"]
    argv += ["--learning-rate", "0.01", "--no-use-ln", "--hidden-size", "8"]
    argv += ["--num-heads", "2", "--shape-buckets", "8x8", "16x16"]
    argv += ["--selection", "final", "--seed-strategy", "map", "--optimizer", "sgd"]
    argv += ["--edge-probabilities", "0.3", "--time-buckets", "32", "64"]
    with pytest.raises(AttributeError):  # the fake returns a config, not a run
        main(argv)
    config = given["c"]
    assert isinstance(config, TrainConfig)
    assert config.seeds == (3, 4) and config.learning_rate == 0.01
    assert config.shape_buckets == ((8, 8), (16, 16)) and config.selection == "final"
    assert (config.seed_strategy, config.optimizer) == ("map", "sgd")
    assert config.edge_probabilities == (0.3,) and config.time_buckets == (32, 64)
    net = config.network
    assert (net.use_ln, net.hidden_size, net.num_heads) == (False, 8, 2)
    assert net.pre_att_bias_nodes == 16  # worked out from the training sizes


def test_unknown_algorithm_lists_the_known_ones(capsys, tmp_path):
    assert main(["train", "dijkstra", "--out", str(tmp_path / "run")]) == 2
    err = _one_line_error(capsys)
    assert "bellman_ford" in err and "bfs_seq" in err


def test_inconsistent_sizes_are_input_errors(capsys, tmp_path):
    argv = [
        "train",
        "bfs",
        "--out",
        str(tmp_path / "r"),
        "--hidden-size",
        "10",
        "--num-heads",
        "3",
    ]
    assert main(argv) == 2
    assert "num_heads" in _one_line_error(capsys)


def test_an_unwritable_output_is_an_input_error(capsys, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    assert main(["train", "bfs", "--out", str(blocker / "run"), *TINY]) == 2
    assert "cannot create output directory" in _one_line_error(capsys)


def test_train_writes_metrics_and_reruns_identically(tmp_path, capsys):
    first, second = tmp_path / "a", tmp_path / "b"
    assert main(["train", "bfs", "--out", str(first), *TINY]) == 0
    assert main(["train", "bfs", "--out", str(second), *TINY]) == 0
    assert "test score" in capsys.readouterr().out
    assert (first / "metrics.csv").read_text() == (second / "metrics.csv").read_text()
    assert (first / "seed_1" / "params.msgpack").exists()

    # A corrupt checkpoint on resume is a one-line error, and nothing is overwritten.
    checkpoint = first / "seed_0" / "checkpoint.msgpack"
    checkpoint.write_bytes(b"garbage")
    before = (first / "metrics.csv").read_text()
    assert main(["train", "bfs", "--out", str(first), *TINY]) == 2
    assert "corrupt" in _one_line_error(capsys)
    assert (first / "metrics.csv").read_text() == before


def test_python_dash_m_reports_errors_without_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "nar_gap", "train", "dijkstra", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert "dijkstra" in done.stderr


# ----------------------------------------------------- nar-gap compile / run

# Real graph files: name -> (algorithm, text, number of nodes).
GRAPHS = {
    "path": ("bfs", "# 0 - 1 - 2 - 3 - 4\n0 1\n1 2\n2 3\n3 4\n", 5),
    "tree_loop_isolated": (
        "bfs",
        "nodes 7   # node 6 is isolated\n0 1\n0 2\n1 3\n1 4\n2 5\n3 3  # self loop\n",
        7,
    ),
    "two_parts": ("bfs", "0 1\n1 2\n2 0\n3 4\n4 5\n", 6),
    "weighted": (
        "bellman_ford",
        "0 1 0.5\n0 2 1.0\n1 2 0.25\n2 3 0.75\n1 3 1\n3 4 0.1\n4 4 0.3\nnodes 6\n",
        6,
    ),
}


def _write(directory, name: str, text: str) -> str:
    path = directory / name
    path.write_text(text)
    return str(path)


def _run_json(capsys, argv) -> tuple[int, dict]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, json.loads(captured.out)


@pytest.fixture(scope="module")
def bfs_params(tmp_path_factory) -> str:
    """A minimal compiled BFS model, saved once for the module."""
    from nar_gap.compiler import compile_algorithm, save_compiled

    path = tmp_path_factory.mktemp("compiled") / "bfs.msgpack"
    save_compiled(compile_algorithm("bfs", None), path)
    return str(path)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_run_check_matches_dm_clrs_on_graph_files(name, tmp_path, capsys):
    algorithm, text, num_nodes = GRAPHS[name]
    graph = _write(tmp_path, f"{name}.txt", text)
    argv = ["run", algorithm, "--graph", graph, "--source", "0", "--check"]
    code, report = _run_json(capsys, argv)
    assert code == 0, report["mismatches"]
    assert report["exact"] is True and report["mismatches"] == []
    assert report["algorithm"] == algorithm
    assert report["num_nodes"] == num_nodes and report["source"] == 0

    reference = batch_from_graph(algorithm, read_edge_list(graph), 0)
    assert report["outputs"]["pi"] == reference.outputs["pi"][0].tolist()
    assert all(type(p) is int for p in report["outputs"]["pi"])
    hints = report["hints"]
    assert sorted(hints) == sorted(reference.hints)
    for probe, rows in hints.items():
        assert len(rows) == int(reference.lengths[0])
        assert all(len(row) == num_nodes for row in rows)
        want = float if probe == "d" else int
        assert all(type(v) is want for row in rows for v in row), probe
    assert hints["pi_h"][0] == list(range(num_nodes))  # CLRS: pi_h starts as i
    assert "attention" not in report


def test_compile_then_run_params_round_trip(tmp_path, capsys):
    import jax

    from nar_gap.compiler import load_compiled

    output = str(tmp_path / "bfs.msgpack")
    assert main(["compile", "bfs", "-o", output, "--hidden-size", "128"]) == 0
    summary = json.loads(capsys.readouterr().out)
    model = load_compiled(output)
    assert summary == {
        "algorithm": "bfs",
        "hidden_size": 128,
        "parameters": sum(leaf.size for leaf in jax.tree.leaves(model.params)),
        "file": output,
    }
    assert model.layout.hidden_size == 128

    graph = _write(tmp_path, "g.txt", GRAPHS["two_parts"][1])
    argv = ["run", "bfs", "--graph", graph, "--source", "3", "--check"]
    code, report = _run_json(capsys, [*argv, "--params", output, "--attention"])
    assert code == 0 and report["exact"] is True
    assert report["outputs"]["pi"] == [0, 1, 2, 3, 3, 4]
    steps = max(1, len(report["hints"]["pi_h"]) - 1)
    assert np.asarray(report["attention"]).shape == (steps, 6, 6)
    # The on-the-spot minimal model gives the same answer.
    code, minimal = _run_json(capsys, argv)
    assert code == 0 and minimal["outputs"] == report["outputs"]


def test_compile_minimal_and_options(tmp_path, capsys):
    """By default compile, like run, writes the smallest network that fits."""
    output = str(tmp_path / "bf.msgpack")
    argv = ["compile", "bellman_ford", "-o", output]
    assert main([*argv, "--max-weight", "2", "--max-distance", "4"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["algorithm"] == "bellman_ford" and summary["hidden_size"] < 128

    # The larger max_weight is honoured; the default model runs weight 2 too,
    # compiled again for the graph's range (no fixed cap), with the same trace.
    graph = _write(tmp_path, "g.txt", "0 1 2\n1 2 0.5\n")
    run = ["run", "bellman_ford", "--graph", graph, "--source", "0", "--check"]
    code, report = _run_json(capsys, [*run, "--params", output])
    assert code == 0 and report["exact"] is True
    assert report["hints"]["d"][-1] == [0.0, 2.0, 2.5]
    code, fitted = _run_json(capsys, run)
    assert code == 0 and fitted["exact"] is True
    assert fitted["hints"] == report["hints"]


def test_run_check_exits_1_on_perturbed_params(bfs_params, tmp_path, capsys):
    from nar_gap.compiler import load_compiled, save_compiled

    model = load_compiled(bfs_params)
    net = model.params["net"]
    head = dict(net["processor"]["head_0"])
    head["kernel"] = -head["kernel"]
    params = {"net": {**net, "processor": {**net["processor"], "head_0": head}}}
    perturbed = str(tmp_path / "perturbed.msgpack")
    save_compiled(dataclasses.replace(model, params=params), perturbed)

    graph = _write(tmp_path, "g.txt", GRAPHS["path"][1])
    argv = ["run", "bfs", "--graph", graph, "--source", "0", "--params", perturbed]
    code = main([*argv, "--check"])
    captured = capsys.readouterr()
    assert code == 1
    report = json.loads(captured.out)
    assert report["exact"] is False and report["mismatches"]
    summary = captured.err.strip()
    assert summary.count("\n") == 0 and "mismatch" in summary
    # Without --check the same run succeeds and says nothing about exactness.
    code, report = _run_json(capsys, argv)
    assert code == 0 and "exact" not in report


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "dijkstra", "--graph", "{path}", "--source", "0"], "bellman_ford"),
        (["compile", "dijkstra", "-o", "{out}"], "dijkstra"),
        (["run", "bfs", "--graph", "{malformed}", "--source", "0"], "line 2"),
        (["run", "bfs", "--graph", "{out_of_range}", "--source", "0"], "out of range"),
        (["run", "bfs", "--graph", "{path}", "--source", "5"], "source 5"),
        (["run", "bfs", "--graph", "{path}", "--source", "-1"], "source -1"),
        (["run", "bellman_ford", "--graph", "{negative}", "--source", "0"], "> 0"),
        (["run", "bfs", "--graph", "{empty}", "--source", "0"], "empty graph"),
        (["run", "bfs", "--graph", "{missing}", "--source", "0"], "no such file"),
        (
            [
                "run",
                "bfs",
                "--graph",
                "{path}",
                "--source",
                "0",
                "--params",
                "{missing}",
            ],
            "no such file",
        ),
        (
            [
                "run",
                "bfs",
                "--graph",
                "{path}",
                "--source",
                "0",
                "--params",
                "{garbage}",
            ],
            "corrupt",
        ),
        (
            [
                "run",
                "bellman_ford",
                "--graph",
                "{path}",
                "--source",
                "0",
                "--params",
                "{bfs_params}",
            ],
            "holds 'bfs'",
        ),
        (
            [
                "run",
                "bfs",
                "--graph",
                "{path}",
                "--source",
                "0",
                "--params",
                "{bfs_params}",
                "--hidden-size",
                "64",
            ],
            "hidden size",
        ),
        (["run", "bfs", "--graph", "{path}", "--source", "x"], "--source"),
        (["run", "bfs", "--graph", "{path}"], "needs a source"),
        (["run", "dfs", "--graph", "{path}", "--source", "0"], "takes no source"),
        (["run", "bfs", "--graph", "{arcs}", "--source", "0"], "undirected"),
        (["run", "dfs", "--graph", "{bad_arc}"], "'u -> v [w]'"),
        (["run", "bfs", "--source", "0"], "--graph"),
        (["compile", "bfs", "--hidden-size", "3", "-o", "{out}"], "hidden_size >= "),
        (["compile", "bfs", "--minimal", "-o", "{out}"], "--minimal"),
        (["compile", "bfs", "--max-weight", "-1", "-o", "{out}"], "max_weight"),
        (
            ["compile", "dfs", "--pre-att-bias-nodes", "8", "-o", "{out}"],
            "pre-attention-bias",
        ),
        (["compile", "bfs", "-o", "{blocked}"], "cannot create output directory"),
        (["compile", "bfs"], "--output"),
    ],
)
def test_bad_compile_and_run_input_exits_2_with_one_line(
    argv, expected, bfs_params, tmp_path, capsys
):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    files = {
        "path": _write(tmp_path, "path.txt", GRAPHS["path"][1]),
        "malformed": _write(tmp_path, "malformed.txt", "0 1\n1 2 3 4\n"),
        "out_of_range": _write(tmp_path, "range.txt", "nodes 3\n0 1\n2 3\n"),
        "negative": _write(tmp_path, "negative.txt", "0 1 -2\n"),
        "empty": _write(tmp_path, "empty.txt", "# nothing here\n"),
        "arcs": _write(tmp_path, "arcs.txt", "0 -> 1\n1 -> 2\n"),
        "bad_arc": _write(tmp_path, "bad_arc.txt", "0 -> 1\n1 ->\n"),
        "missing": str(tmp_path / "missing.txt"),
        "garbage": str(tmp_path / "garbage.msgpack"),
        "bfs_params": bfs_params,
        "out": str(tmp_path / "out.msgpack"),
        "blocked": str(blocker / "out.msgpack"),
    }
    (tmp_path / "garbage.msgpack").write_bytes(b"garbage")
    try:
        code = main([arg.format(**files) for arg in argv])
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    assert expected in _one_line_error(capsys)
    assert not (tmp_path / "out.msgpack").exists()


EXAMPLE_GRAPHS = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "graphs").glob("*.txt")
)


DIRECTED_GRAPHS = sorted(
    (Path(__file__).resolve().parents[2] / "examples" / "graphs" / "directed").glob(
        "*.txt"
    )
)


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford", "dfs"])
@pytest.mark.parametrize("graph", EXAMPLE_GRAPHS, ids=lambda p: p.stem)
def test_example_graphs_run_exactly(graph, algorithm, capsys):
    assert EXAMPLE_GRAPHS, "examples/graphs/*.txt are missing"
    source = [] if algorithm == "dfs" else ["--source", "0"]
    code = main(["run", algorithm, "--graph", str(graph), *source, "--check"])
    assert code == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["exact"] is True


@pytest.mark.parametrize("graph", DIRECTED_GRAPHS, ids=lambda p: p.stem)
def test_dfs_runs_and_checks_directed_graph_files(graph, capsys):
    """``nar-gap run dfs --graph G --check``: no source, arcs ``u -> v``."""
    assert DIRECTED_GRAPHS, "examples/graphs/directed/*.txt are missing"
    code, report = _run_json(capsys, ["run", "dfs", "--graph", str(graph), "--check"])
    assert code == 0, report["mismatches"]
    assert report["exact"] is True and report["source"] is None
    weights = read_edge_list(graph)
    assert not np.array_equal(weights, weights.T)  # the arcs are directed
    reference = batch_from_graph("dfs", weights)
    assert report["outputs"]["pi"] == reference.outputs["pi"][0].tolist()
    assert sorted(report["hints"]) == sorted(reference.hints)
    assert len(report["hints"]["time"]) == 3 * len(weights)  # T = 3N
    assert len(report["hints"]["color"][0][0]) == 3  # categorical classes


def test_bare_nar_gap_lists_its_commands(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for command in ("train", "compile", "run", "info"):
        assert command in out


def test_info_prints_the_version_once_and_the_self_check(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.count(nar_gap.__version__) == 1
    assert "self-check passed" in out


def test_a_rerun_says_what_it_did_and_which_settings_differ(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["train", "bfs", "--out", out, *TINY]) == 0
    capsys.readouterr()
    assert main(["train", "bfs", "--out", out, *TINY]) == 0
    assert "seeds 0-1: already at 3 steps, nothing to train" in capsys.readouterr().out
    fewer = [a if a != "3" else "2" for a in TINY]  # --steps 2 on a 3-step run
    assert main(["train", "bfs", "--out", out, *fewer]) == 0
    assert "past the 2 asked for; nothing to train" in capsys.readouterr().out
    more = [a if a != "3" else "4" for a in TINY]
    assert main(["train", "bfs", "--out", out, *more]) == 0
    assert "extending from 3 to 4 steps" in capsys.readouterr().out
    assert main(["train", "bfs", "--out", out, *TINY, "--hidden-size", "16"]) == 2
    assert "(hidden_size 8 -> 16)" in _one_line_error(capsys)


def test_the_validation_size_can_be_set(tmp_path, capsys):
    argv = ["train", "bfs", "--out", str(tmp_path / "b"), "--use-pre-att-bias"]
    argv += ["--train-lengths", "4", "--test-num-nodes", "8", "--steps", "1"]
    argv += ["--seeds", "0", "--hidden-size", "8", "--quiet"]
    assert main(argv) == 2
    assert "validation graphs (val_num_nodes) of 16" in _one_line_error(capsys)
    assert main([*argv, "--val-num-nodes", "8", "--eval-every", "0"]) == 0


def test_the_supervision_schedule_and_curriculum_reach_the_run(tmp_path, capsys):
    from nar_gap.training.run_dir import load_run_config

    out = tmp_path / "sched"
    argv = ["train", "bfs", "--out", str(out), "--train-lengths", "4", "7", "--quiet"]
    argv += ["--steps", "2", "--eval-every", "0", "--hidden-size", "8"]
    argv += ["--seeds", "0", "--val-num-nodes", "7", "--test-num-nodes", "7"]
    argv += ["--attention-weight", "1", "--supervision-until", "2"]
    assert main([*argv, "--curriculum-steps", "2"]) == 0
    config = load_run_config(out)
    assert (config.supervision_until, config.curriculum_steps) == (2, 2)
    capsys.readouterr()
    assert main([*argv, "--curriculum-steps", "-1"]) == 2
    assert "curriculum_steps must be >= 0" in _one_line_error(capsys)


def test_run_check_reports_near_ties_and_exits_0(tmp_path, capsys):
    """Node 3's two paths differ by 2e-6, below compiled Bellman-Ford's
    resolution: --check lists the tie with its gap and says exact."""
    text = "0 1 0.4\n1 3 0.3\n0 2 0.3\n2 3 0.399998\n"
    graph = _write(tmp_path, "near_tie.txt", text)
    argv = ["run", "bellman_ford", "--graph", graph, "--source", "0", "--check"]
    code, report = _run_json(capsys, argv)
    assert code == 0 and report["exact"] is True and report["mismatches"] == []
    assert report["ties"] and all("tie within" in t for t in report["ties"])
    constants = report["constants"]
    assert constants["dtype"] == "float32" and constants["max_distance"] == 8.0
    assert 2e-6 < constants["resolution"] < 1e-4
    # In float64 the resolution is ~11x finer, and the same gap is decided as
    # dm-clrs decides it (the resolution is a guarantee, not the limit).
    code, report = _run_json(capsys, [*argv, "--dtype", "float64"])
    assert code == 0 and report["exact"] is True and report["ties"] == []
    assert report["constants"]["resolution"] < constants["resolution"] / 10
    assert report["outputs"]["pi"][3] == 2


def test_a_float64_file_runs_in_float64_and_refuses_another_dtype(tmp_path, capsys):
    model = str(tmp_path / "bf64.msgpack")
    assert main(["compile", "bellman_ford", "--dtype", "float64", "-o", model]) == 0
    capsys.readouterr()
    graph = _write(tmp_path, "g.txt", "0 1 0.4\n1 2 0.3\n")
    argv = [
        "run",
        "bellman_ford",
        "--graph",
        graph,
        "--source",
        "0",
        "--check",
        "--params",
        model,
    ]
    code, report = _run_json(capsys, argv)
    assert code == 0 and report["constants"]["dtype"] == "float64"
    # 0.4 + 0.3 to float64 rounding (float32 would be ~1e-8 off).
    assert abs(report["hints"]["d"][-1][2] - (0.4 + 0.3)) < 1e-12
    assert main([*argv, "--dtype", "float32"]) == 2
    assert "runs in float64, not --dtype float32" in _one_line_error(capsys)


def test_the_run_help_names_every_compiled_program():
    from nar_gap.cli import RUN_ALGORITHMS_HELP
    from nar_gap.programs.registry import PROGRAMS

    named = set(RUN_ALGORITHMS_HELP.replace(" or ", ", ").split(", "))
    assert named == set(PROGRAMS)
