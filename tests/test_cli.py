"""The nar-gap command line: one-line errors with exit code 2, reproducible runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nar_gap.cli import main

# Small enough to compile and run in seconds; shares nothing with test_train.
TINY = [
    "--seeds",
    "2",
    "--steps",
    "3",
    "--hidden-size",
    "8",
    "--lengths",
    "5",
    "--test-size",
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
        (["train", "bfs", "--out", "X", "--steps", "-3"], "--steps"),
        (["train", "bfs", "--out", "X", "--hidden-size", "0"], "--hidden-size"),
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
        "--heads",
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
