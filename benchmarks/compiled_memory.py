"""Peak memory and time of ``nar-gap run dfs`` at the sizes users bring.

For each N (default 100, 300, 600) the script writes a directed graph of N
nodes (three random out-arcs per node, seed N) to a temporary folder in the
edge-list format ``nar-gap run --graph`` reads, runs ``nar-gap run dfs
--graph FILE`` in a child process, and reads that child's peak
resident memory from the kernel (``os.wait4``'s ``ru_maxrss``) and its wall
time.  Beside it, the memory the run was estimated to need before it started
(:meth:`~nar_gap.compiler.compiled_model.CompiledModel.memory_needed`, with
the JSON the command prints) and the estimate's ratio to the measured peak,
which the refusal of runs that would not fit relies on (within 2x).  DFS runs
``3N - 1`` steps, so the whole trace's attention (what a run kept before it
ran one step at a time) would grow as ``N^3``.  From the repository root:

    .venv/bin/python benchmarks/compiled_memory.py
    .venv/bin/python benchmarks/compiled_memory.py --sizes 100 300 --algorithm dfs
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from nar_gap.tasks.graphs import has_source

GIB = 2**30


def write_graph(path: Path, num_nodes: int, out_degree: int = 3) -> Path:
    """A directed graph: ``out_degree`` random arcs from each node (seed N)."""
    rng = np.random.default_rng(num_nodes)
    lines = [f"nodes {num_nodes}"]
    for u in range(num_nodes):
        for v in rng.choice(num_nodes, size=out_degree, replace=False):
            if u != v:
                lines.append(f"{u} -> {v}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def measure(command: list[str]) -> tuple[int, float, int]:
    """``(peak resident bytes, wall seconds, exit code)`` of a child process."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    return usage.ru_maxrss * 1024, seconds, child.returncode  # Linux: KiB


def estimate(algorithm: str, graph: Path) -> tuple[int, int]:
    """``(steps, estimated peak bytes)`` of ``nar-gap run`` on ``graph``."""
    import nar_gap
    from nar_gap.compiler.compiled_model import trace_steps
    from nar_gap.tasks.graphs import has_source, read_edge_list

    weights = read_edge_list(graph)
    model = nar_gap.compile(algorithm, None)
    source = 0 if has_source(algorithm) else None
    batch = model.graph_batch(weights, source)
    steps = trace_steps(batch)
    needed = model.fitted(batch).memory_needed(len(weights), steps, as_json=True)
    return steps, needed.total


def main(argv: list[str] | None = None) -> int:
    """Measure each size and print one line per size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 600])
    parser.add_argument("--algorithm", default="dfs")
    args = parser.parse_args(argv)
    print(f"{platform.node()}: {os.cpu_count()} cores, {platform.python_version()}")
    print(
        f"{'N':>5} {'steps':>6} {'peak GiB':>9} {'wall s':>7} {'estimate':>9} "
        f"{'ratio':>6} {'exit':>4}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for num_nodes in args.sizes:
            graph = write_graph(Path(folder) / f"graph_{num_nodes}.txt", num_nodes)
            command = [sys.executable, "-m", "nar_gap", "run", args.algorithm]
            command += ["--graph", str(graph)]
            if has_source(args.algorithm):
                command += ["--source", "0"]
            peak, seconds, code = measure(command)
            steps, needed = estimate(args.algorithm, graph)
            print(
                f"{num_nodes:>5} {steps:>6} {peak / GIB:>9.2f} {seconds:>7.1f} "
                f"{needed / GIB:>9.2f} {needed / peak:>6.2f} {code:>4}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
