"""``nar-gap run`` within memory (issue 47): refused before it starts, in one line.

The run itself streams one step at a time (``tests/compiler/test_stepping.py``);
here the command: a run that would not fit is refused before dm-clrs's trace
or the network, and the estimate the refusal uses is held to a measured peak.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from nar_gap.cli import main as cli_main
from nar_gap.compiler import compile
from nar_gap.compiler.compiled_model import CompiledModel
from nar_gap.compiler.memory import steps_before_trace


def test_the_command_refuses_in_one_line(tmp_path, capsys, monkeypatch):
    def no_compute(*args, **kwargs):
        raise AssertionError("computed before refusing")

    monkeypatch.setattr(CompiledModel, "graph_batch", no_compute)
    graph = tmp_path / "path.txt"
    graph.write_text("nodes 300\n" + "".join(f"{k} -> {k + 1}\n" for k in range(299)))
    code = cli_main(["run", "dfs", "--graph", str(graph), "--max-memory", "100M"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("nar-gap: error: this run needs")
    assert "0.10 GiB is allowed" in err


@pytest.mark.slow  # about 10 s alone, 25 s on a busy 2-core machine
@pytest.mark.parametrize("num_nodes", [200])
def test_the_memory_estimate_is_within_twice_the_measured_peak(tmp_path, num_nodes):
    """``nar-gap run dfs`` in a fresh process: its peak resident memory
    (the kernel's ``ru_maxrss``) against the estimate the refusal uses."""
    rng = np.random.default_rng(num_nodes)
    arcs = [(u, int(v)) for u in range(num_nodes) for v in rng.choice(num_nodes, 3)]
    graph = tmp_path / "graph.txt"
    lines = [f"nodes {num_nodes}"] + [f"{u} -> {v}" for u, v in arcs if u != v]
    graph.write_text("\n".join(lines) + "\n")
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "nar_gap", "run", "dfs", "--graph", str(graph)],
        stdout=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    peak = usage.ru_maxrss * 1024
    model = compile("dfs", None)
    estimate = model.memory_needed(
        num_nodes, steps_before_trace("dfs", num_nodes), as_json=True
    )
    assert 0.5 <= estimate.total / peak <= 2.0, (estimate, peak)
    assert time.perf_counter() - started < 60
