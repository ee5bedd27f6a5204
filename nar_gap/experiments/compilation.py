"""Notebook 01: the compiled weights (Figures 6-7) and exactness against dm-clrs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.benchmark.sampling import sample_batch
from nar_gap.benchmark.specs import has_source
from nar_gap.compiler import DEFAULT_HIDDEN_SIZE, compile
from nar_gap.experiments import plots
from nar_gap.experiments.profiles import Profile
from nar_gap.experiments.runs import metadata
from nar_gap.model.model import parameter_count
from nar_gap.programs.locality import find_witness, graphs
from nar_gap.programs.registry import PROGRAMS
from nar_gap.system import files

# Which algorithms the locality table searches, and how: every graph on this
# many nodes, self loops included (512 directed, 64 symmetric matrices).
LOCALITY_ALGORITHMS = ("bfs", "bellman_ford", "bfs_seq", "dfs_light", "dfs")
LOCALITY_NODES = 3

EXAMPLE_EDGES = ((0, 1), (1, 3), (1, 4), (2, 5), (3, 5), (4, 5))  # clrs-semantics §2.1
# DFS's trace has 3N steps and its program is compiled per size: the
# exactness table checks it up to this many nodes (larger: tests, -m slow).
DFS_EXACTNESS_MAX_NODES = 64


def example_graph(num_nodes: int = 6) -> np.ndarray:
    """The walkthrough's small undirected graph (node 5 has two parents)."""
    weights = np.zeros((num_nodes, num_nodes))
    for u, v in EXAMPLE_EDGES:
        weights[u, v] = weights[v, u] = 1.0
    return weights


def compiled_figures(
    algorithms: Sequence[str], figures_dir: str | os.PathLike
) -> list[Path]:
    """The compiled models' weights (minimal size) and the example's attention.

    Numbered as the paper: Fig. 6 is compiled Bellman-Ford's processor,
    Fig. 7 its encoders and decoders; BFS's figures are unnumbered
    (``fig_compiled_bfs_weights``, ``fig_compiled_bfs_encoders_decoders``).
    """
    written = []
    for algorithm in algorithms:
        model = compile(algorithm, hidden_size=None)
        paper = algorithm == "bellman_ford"
        processor = "fig6_bellman_ford_weights" if paper else None
        ends = "fig7_bellman_ford_encoders_decoders" if paper else None
        figures = {
            processor
            or f"fig_compiled_{algorithm}_weights": plots.plot_compiled_weights(model),
            ends or f"fig_compiled_{algorithm}_encoders_decoders": (
                plots.plot_compiled_encoders_decoders(model)
            ),
            f"fig_compiled_{algorithm}_attention": plots.plot_attention_steps(
                model.run(
                    example_graph(), source=0 if has_source(algorithm) else None
                ).attention,
                f"compiled {algorithm}: attention on the example graph",
            ),
        }
        for stem, fig in figures.items():
            written += files.save_figure(fig, Path(figures_dir) / stem)
            plots.close(fig)
    return written


def exactness_table(
    profile: Profile,
    algorithms: Sequence[str],
    results_dir: str | os.PathLike,
    graphs: int = 4,
    edge_probabilities: Sequence[float] = (0.5, 0.1),
) -> list[dict[str, Any]]:
    """Compiled models (minimal and default size) against dm-clrs on sampled graphs.

    DFS's program is compiled for each size (its ``v`` needs ``N``), on the
    profile's sizes up to :data:`DFS_EXACTNESS_MAX_NODES`.
    """
    rows = []
    for algorithm in algorithms:
        sizes = profile.exactness_sizes
        if algorithm == "dfs":
            sizes = tuple(sorted({min(n, DFS_EXACTNESS_MAX_NODES) for n in sizes}))
        for hidden in (None, DEFAULT_HIDDEN_SIZE):
            for n in sizes:
                model = compile(algorithm, hidden_size=hidden, num_nodes=n)
                for p in edge_probabilities:
                    batch = sample_batch(algorithm, n, graphs, seed=n, p=(p,))
                    mismatches = model.check(batch)
                    rows.append(
                        {
                            "algorithm": algorithm,
                            "hidden_size": model.layout.hidden_size,
                            "parameters": parameter_count(model.params),
                            "num_nodes": n,
                            "edge_probability": p,
                            "graphs": graphs,
                            "mismatches": len(mismatches),
                            "exact": not mismatches,
                            "first_mismatch": str(mismatches[0]) if mismatches else "",
                        }
                    )
    files.write_table(
        Path(results_dir) / "compiled_exactness.csv", rows, metadata(profile)
    )
    return rows


def locality_table(
    profile: Profile,
    results_dir: str | os.PathLike,
    algorithms: Sequence[str] = LOCALITY_ALGORITHMS,
    num_nodes: int = LOCALITY_NODES,
) -> list[dict[str, Any]]:
    """Which algorithms a node's view cannot decide (issue 19).

    For every algorithm, :func:`~nar_gap.programs.locality.find_witness`
    three ways: a graph program at one GATv2 step per hint step and at every
    radius, and an exact network with its hints fed back hard, at one step
    per hint step.  A witness is a pair of graphs that no such model runs
    both of exactly; ``isolated`` says it holds at every number of steps.
    The same on every profile: it enumerates every graph of ``num_nodes``
    nodes.
    """
    searches = (("graph program", 1), ("graph program", None), ("hard feedback", 1))
    rows = []
    for algorithm in algorithms:
        searched = sum(1 for _ in graphs(algorithm, num_nodes, self_loops=True))
        for view_kind, steps in searches:
            witness = find_witness(
                algorithm,
                num_nodes,
                True,
                steps_per_hint=steps,
                feedback=view_kind == "hard feedback",
            )
            edges = witness.edge_lists() if witness else ("", "")
            rows.append(
                {
                    "algorithm": algorithm,
                    "compiled": algorithm in PROGRAMS,
                    "view": view_kind,
                    "steps_per_hint": "any" if steps is None else steps,
                    "num_nodes": num_nodes,
                    "graphs_searched": searched,
                    "witness": witness is not None,
                    "isolated": bool(witness and witness.isolated),
                    "node": witness.node if witness else "",
                    "hint": witness.hint if witness else "",
                    "probe": witness.probe if witness else "",
                    "value_1": str(witness.values[0]) if witness else "",
                    "value_2": str(witness.values[1]) if witness else "",
                    "graph_1": edges[0],
                    "graph_2": edges[1],
                    "source_1": "" if not witness else witness.sources[0],
                    "source_2": "" if not witness else witness.sources[1],
                }
            )
    files.write_table(
        Path(results_dir) / "locality_witnesses.csv", rows, metadata(profile)
    )
    return rows
