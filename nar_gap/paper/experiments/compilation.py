"""Notebook 01: the compiled weights (Figures 6-7) and exactness against dm-clrs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from nar_gap.compiler import DEFAULT_HIDDEN_SIZE, compile_algorithm, minimal
from nar_gap.model.model import COMPONENTS, parameter_counts
from nar_gap.paper import plots
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import metadata
from nar_gap.programs.locality import find_witness, graphs
from nar_gap.programs.registry import PROGRAMS
from nar_gap.system import files
from nar_gap.tasks.sampling import sample_batch
from nar_gap.tasks.specs import has_source

# Which algorithms the locality table searches, and how: every graph on this
# many nodes, self loops included (512 directed, 64 symmetric matrices).
EXACTNESS_FILE = "compiled_exactness.csv"
MINIMAL_FILE = "compiled_minimal.csv"
LOCALITY_FILE = "locality_witnesses.csv"
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


# The paper's variant (App. C: the N x N pre-attention bias) exists for these
# programs' selections; it is compiled for each graph size.
PAPER_VARIANT_ALGORITHMS = ("bfs", "bellman_ford")
# The bias size of the paper-variant figures (the paper's training size).
FIGURE_BIAS_NODES = 16


def compiled_figure_stem(algorithm: str, what: str) -> str:
    """An unnumbered figure of a compiled model (``weights``, ``attention`` ...)."""
    return f"fig_compiled_{algorithm}_{what}"


def compiled_figure_stems(algorithm: str) -> list[str]:
    """The stems of ``algorithm``'s compiled figures, in the order drawn.

    Numbered as the paper: Fig. 6 is Bellman-Ford's processor and Fig. 7
    its encoders and decoders, in the paper's variant (hidden 4, the N x N
    bias, App. C.1).  The size-free models, BFS's paper variant and every
    attention figure are unnumbered (``fig_compiled_<a>_*``,
    ``fig_compiled_<a>_paper_*``).
    """
    stems = [
        compiled_figure_stem(algorithm, what)
        for what in ("weights", "encoders_decoders", "attention")
    ]
    if algorithm == "bellman_ford":
        stems += ["fig6_bellman_ford_weights", "fig7_bellman_ford_encoders_decoders"]
    elif algorithm in PAPER_VARIANT_ALGORITHMS:
        paper = compiled_figure_stem(algorithm, "paper")
        stems += [f"{paper}_weights", f"{paper}_encoders_decoders"]
    return stems


def _draw_compiled(algorithm: str) -> list:
    """:func:`compiled_figure_stems`' figures of ``algorithm``, in that order."""
    size_free = compile_algorithm(algorithm, hidden_size=None)
    attention = size_free.run(
        example_graph(),
        source=0 if has_source(algorithm) else None,
        keep_attention=True,
    ).attention
    figures = [
        plots.plot_compiled_weights(size_free),
        plots.plot_compiled_encoders_decoders(size_free),
        plots.plot_attention_steps(
            attention, f"compiled {algorithm}: attention on the example graph"
        ),
    ]
    if algorithm in PAPER_VARIANT_ALGORITHMS:
        paper = compile_algorithm(
            algorithm, hidden_size=None, pre_att_bias_nodes=FIGURE_BIAS_NODES
        )
        figures += [
            plots.plot_compiled_weights(paper),
            plots.plot_compiled_encoders_decoders(paper),
        ]
    return figures


def compiled_figures(algorithms: Sequence[str], dirs: OutputDirs) -> list[Path]:
    """The compiled models' weights (smallest width) and the example's attention.

    Reading (``dirs.reading``): the PNGs already there, drawn by the run
    that wrote the results (they are the compiler's; drawing them again
    took 15 s of the notebook's 32 s).
    """
    written = []
    for algorithm in algorithms:
        stems = compiled_figure_stems(algorithm)
        if dirs.reading:
            written += [dirs.figure_back(stem) for stem in stems]
            continue
        for stem, fig in zip(stems, _draw_compiled(algorithm), strict=True):
            written += files.save_figure(fig, Path(dirs.figures) / stem)
            plots.close(fig)
    return written


def exactness_variants(algorithm: str, num_nodes: int) -> list[tuple[str, dict]]:
    """``(variant, compile keywords)`` of every network the table checks.

    ``size_free``: the default programs at their smallest width and at the
    benchmark's 128.  ``paper``: the App. C variant at its smallest width,
    its bias built for ``num_nodes``.
    """
    variants = [
        ("size_free", {"hidden_size": None}),
        ("size_free", {"hidden_size": DEFAULT_HIDDEN_SIZE}),
    ]
    if algorithm in PAPER_VARIANT_ALGORITHMS:
        variants.append(
            ("paper", {"hidden_size": None, "pre_att_bias_nodes": num_nodes})
        )
    return variants


def exactness_table(
    profile: Profile,
    algorithms: Sequence[str],
    dirs: OutputDirs,
    graphs: int = 4,
    edge_probabilities: Sequence[float] = (0.5, 0.1),
) -> list[dict[str, Any]]:
    """Compiled models (each variant and size) against dm-clrs on sampled graphs.

    ``graphs`` per size and edge probability, or the profile's
    ``eval_graphs`` where it sets fewer (a dry run).

    Each row counts the network's parameters by component
    (:func:`~nar_gap.model.model.parameter_counts`).  DFS's program is
    compiled for each size (its ``v`` needs ``N``), on the profile's sizes
    up to :data:`DFS_EXACTNESS_MAX_NODES`.  Reading (``dirs.reading``): the
    rows of ``compiled_exactness.csv``, typed.
    """
    if dirs.reading:
        return dirs.read_back(EXACTNESS_FILE, typed=True)
    if profile.eval_graphs:
        graphs = min(graphs, profile.eval_graphs)
    rows = []
    for algorithm in algorithms:
        sizes = profile.exactness_sizes
        if algorithm == "dfs":
            sizes = tuple(sorted({min(n, DFS_EXACTNESS_MAX_NODES) for n in sizes}))
        for n in sizes:
            for variant, options in exactness_variants(algorithm, n):
                model = compile_algorithm(algorithm, num_nodes=n, **options)
                counts = parameter_counts(model.params)
                for p in edge_probabilities:
                    batch = sample_batch(algorithm, n, graphs, seed=n, p=(p,))
                    mismatches = model.check(batch)
                    rows.append(
                        {
                            "algorithm": algorithm,
                            "variant": variant,
                            "hidden_size": model.layout.hidden_size,
                            "parameters": counts["total"],
                            **{
                                f"parameters_{part}": counts[part]
                                for part in COMPONENTS
                            },
                            "nonzero_parameters": counts["nonzero"],
                            "num_nodes": n,
                            "edge_probability": p,
                            "graphs": graphs,
                            "mismatches": len(mismatches),
                            "exact": not mismatches,
                            "first_mismatch": str(mismatches[0]) if mismatches else "",
                        }
                    )
    files.write_table(Path(dirs.results) / EXACTNESS_FILE, rows, metadata(profile))
    return rows


# The minimality search's graphs: every removal is checked on CHECK_GRAPHS
# graphs per edge probability at MINIMAL_CHECK_NODES (the paper variant's
# bias size); the counterexample pool and the held-out graphs are as many
# again, from other seeds, at each size a variant runs (the paper variant
# its bias size only; DFS's pruned weights are for their own size).
MINIMAL_CHECK_NODES = 16
MINIMAL_CHECK_GRAPHS = 8
MINIMAL_EDGE_PROBABILITIES = (0.1, 0.5)
MINIMAL_OTHER_NODES = (16, 64)
COUNTEREXAMPLE_SEED, HELD_OUT_SEED = 500, 1000
# Seeds of the counterexample pool per size: each gives a batch per edge
# probability.  One was too few: BFS's paper variant, its 256 bias entries
# pruned against the graphs it had seen, failed the held-out graphs.
COUNTEREXAMPLE_SEEDS = 4
# Seeds of unit-weight graphs (every family, ids shuffled) in the pool: exact
# ties, which sampled graphs never have.
TIE_SEEDS = 4


def _minimal_batches(algorithm: str, n: int, seed: int) -> list:
    return [
        sample_batch(algorithm, n, MINIMAL_CHECK_GRAPHS, seed=seed, p=(p,))
        for p in MINIMAL_EDGE_PROBABILITIES
    ]


def _tie_sizes(variant: str, model) -> tuple[int, ...]:
    """Where exact ties are judged.

    The check size, and ``tie_nodes``: the size up to which the size-free
    compiler breaks every exact tie.
    """
    sizes = {MINIMAL_CHECK_NODES}
    if variant != "paper" and model.program.num_nodes is None:
        sizes.add(model.compiler_config.tie_nodes)
    return tuple(sorted(sizes))


def _other_sizes(variant: str, model) -> tuple[int, ...]:
    if variant == "paper" or model.program.num_nodes is not None:
        return (MINIMAL_CHECK_NODES,)
    return MINIMAL_OTHER_NODES


def _counterexample_pool(algorithm: str, sizes: Sequence[int]) -> list:
    """Sampled batches a removal must also keep exact: seeds per size, both p."""
    return [
        b
        for size in sizes
        for k in range(COUNTEREXAMPLE_SEEDS)
        for b in _minimal_batches(algorithm, size, COUNTEREXAMPLE_SEED + 10 * size + k)
    ]


def _tie_pool(model, tie_sizes: Sequence[int]) -> tuple[list, int]:
    """``minimal.tie_batches`` at every size, and how many graphs they left out."""
    ties, left_out = [], 0
    for size in tie_sizes:
        seeds = range(COUNTEREXAMPLE_SEED, COUNTEREXAMPLE_SEED + TIE_SEEDS)
        made, lost = minimal.tie_batches(model, size, seeds)
        ties, left_out = ties + made, left_out + lost
    return ties, left_out


def _graph_count(batches: Sequence) -> int:
    return sum(int(b.node_mask.shape[0]) for b in batches)


def _minimal_row(
    algorithm: str, variant: str, options: dict[str, Any]
) -> dict[str, Any]:
    """One row of ``compiled_minimal.csv``: the search, then the held-out checks."""
    n = MINIMAL_CHECK_NODES
    model = compile_algorithm(algorithm, num_nodes=n, **options)
    sizes = _other_sizes(variant, model)
    pool = _counterexample_pool(algorithm, sizes)
    tie_sizes = _tie_sizes(variant, model)
    ties, left_out = _tie_pool(model, tie_sizes)
    check = _minimal_batches(algorithm, n, seed=n)
    found = minimal.search(model, check, counterexamples=pool + ties)
    held_out = {
        size: minimal.is_exact(
            found.model,
            found.model.params,
            _minimal_batches(algorithm, size, HELD_OUT_SEED + size),
        )
        for size in sizes
    }
    held_out_ties = [
        b
        for size in tie_sizes
        for b in minimal.tie_batches(model, size, [HELD_OUT_SEED])[0]
    ]
    return {
        "algorithm": algorithm,
        "variant": variant,
        **minimal.summary(found, model),
        "check_nodes": n,
        "check_graphs": _graph_count(check),
        "counterexample_nodes": " ".join(map(str, sizes)),
        "held_out_nodes": " ".join(map(str, sizes)),
        "held_out_exact": all(held_out.values()),
        "held_out_inexact_at": " ".join(str(s) for s, ok in held_out.items() if not ok),
        "tie_graph_nodes": " ".join(map(str, tie_sizes)),
        "tie_graphs": _graph_count(ties),
        "tie_graphs_left_out": left_out,
        "held_out_tie_graphs": _graph_count(held_out_ties),
        "held_out_ties_exact": minimal.is_exact(
            found.model, found.model.params, held_out_ties
        ),
    }


def minimal_table(
    profile: Profile,
    algorithms: Sequence[str],
    dirs: OutputDirs,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """``results/compiled_minimal.csv``: each program's smallest exact network.

    For every program and variant (the smallest compiled width: size-free,
    and the paper's for BFS and Bellman-Ford, its bias at
    :data:`MINIMAL_CHECK_NODES`),
    :func:`nar_gap.compiler.minimal.search` removes dimensions, then
    weights, re-checking exactness on the check graphs after each, and starts
    again with any batch of a counterexample pool the result fails; the
    result is then checked on held-out graphs (other seeds; larger sizes
    where the variant runs them).  Sampled CLRS weights are continuous, so
    no two sampled paths tie exactly, and a criterion that only breaks exact
    ties (Bellman-Ford's lowest id) was removed when the pool held sampled
    graphs alone, though a unit-weight grid of 8 nodes needs it.  So the pool
    and the held-out set also hold unit-weight graphs of every family
    (:func:`~nar_gap.compiler.minimal.tie_batches`).  The same graphs on
    every profile (it is a property of the compiler); the profile names the
    programs it searches
    (``minimal_search_algorithms``).  Reading (``dirs.reading``): the rows of
    ``compiled_minimal.csv``, typed.
    """
    if dirs.reading:
        return dirs.read_back(MINIMAL_FILE, typed=True)
    jobs = [
        (a, variant, options)
        for a in algorithms
        if a in profile.minimal_search_algorithms
        for variant, options in exactness_variants(a, MINIMAL_CHECK_NODES)
        if options["hidden_size"] is None
    ]
    rows = [
        _minimal_row(algorithm, variant, options)
        for algorithm, variant, options in tqdm(
            jobs, desc="minimality search", disable=not progress
        )
    ]
    files.write_table(Path(dirs.results) / MINIMAL_FILE, rows, metadata(profile))
    return rows


def locality_table(
    profile: Profile,
    dirs: OutputDirs,
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
    nodes.  Reading (``dirs.reading``): the rows of
    ``locality_witnesses.csv``, typed (the notebook compares
    ``steps_per_hint`` with 1 and tests ``witness``).
    """
    if dirs.reading:
        return dirs.read_back(LOCALITY_FILE, typed=True)
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
    files.write_table(Path(dirs.results) / LOCALITY_FILE, rows, metadata(profile))
    return rows
