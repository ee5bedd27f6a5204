"""How far compiled models stay exact: a size sweep to the precision limit.

Compiled BFS and Bellman-Ford run against dm-clrs on every hint and output
for graphs of 16 to 4096 nodes in several families
(:mod:`nar_gap.tasks.families`), in float32 and float64, as SALSA-CLRS
sweeps sizes for trained models.  A compiled program has no size limit in
its code (no parameter or code path depends on N): what ends exactness is
finite precision, and each row records the two quantities that say where:

* ``gap_over_resolution`` (Bellman-Ford): the smallest score gap by which
  dm-clrs decided any parent in the trace, over the model's resolution (the
  smallest gap its Minimise criterion is guaranteed to decide).  Below 1 the
  model may choose the runner-up: a *near-tie* (reported, not an error).  It
  falls with N (more candidates per receiver, so closer scores) and with the
  distance range (the logit budget is spread over a wider range).
* ``error_over_tolerance`` (Bellman-Ford): the largest distance error over
  :mod:`~nar_gap.tasks.exactness`'s tolerance.  float32 adds one
  rounding per relaxation round, so long paths approach it; float64 stays
  ~1e10 below it.
* BFS compares ids: ``resolution_nodes`` (1024) sets its margins in full up
  to that size; past it the margins shrink as ``1024 / N``.

On dense graphs a near-tie can *split* a receiver's attention between the
tied candidates, and the stored pointer (the weighted mean of their ids)
names a third node: a near-tie (``NearTie.split``).  Before Bellman-Ford's
``Linked`` criterion that pointer became an edge of length 0 at the next
step (CLRS's processor attends along decoded pointers), and distances went
wrong: "Where exactness ends" in docs/compilation.md tells the case.

Notebook 01 runs it at its profile's sizes (:func:`sweep_profile`: to 256
nodes at ``cpu``, every family to 4096 at ``studies``).  Its run times are
wall-clock seconds on the machine that ran it, first call included (XLA
compiles each new shape).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from nar_gap.compiler import CompiledModel, compile_algorithm
from nar_gap.compiler.config import DTYPES
from nar_gap.compiler.precision import (  # here before; the old names still read
    PRECISION_DISTANCES,  # noqa: F401
    PRECISION_GAPS,  # noqa: F401
    near_tie_gadget,  # noqa: F401
    precision_limits,
    smallest_decisive_gap,
)
from nar_gap.paper import plots
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import metadata
from nar_gap.system import files
from nar_gap.tasks.exactness import (
    DISTANCE_RELATIVE_TOLERANCE,
    DISTANCE_TOLERANCE,
)
from nar_gap.tasks.families import FAMILIES, make_graph
from nar_gap.tasks.graphs import batch_from_graph

ALGORITHMS = ("bfs", "bellman_ford")
SIZES = tuple(2**k for k in range(4, 13))  # 16 ... 4096
SWEEP_FAMILIES = (
    "er_p0.5",
    "er_p0.1",
    "er_sparse",
    "power_law",
    "tree",
    "grid",
    "path",
)
# The cost of one run is (trace length) x N^2, twice: dm-clrs's probing loops
# over every node pair in Python at every step, and the network keeps every
# step's N x N attention.  Paths (N - 1 steps) and grids (~2 sqrt(N)) are
# therefore stopped earlier than the families of small diameter.
MAX_NODES = {"path": 512, "grid": 1024}
TABLE = "compiled_size_sweep.csv"
BREAKDOWN_TABLE = "compiled_size_sweep_breakdown.csv"  # :func:`breakdown`
FIGURE = "fig_compiled_size_sweep"


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """One graph: which family, size, algorithm."""

    family: str
    num_nodes: int
    algorithm: str
    seed: int = 0


def points(
    families: Sequence[str] = SWEEP_FAMILIES,
    sizes: Sequence[int] = SIZES,
    algorithms: Sequence[str] = ALGORITHMS,
    max_nodes: int | None = None,
) -> list[SweepPoint]:
    """Every (family, size, algorithm) the sweep runs, within the size limits."""
    return [
        SweepPoint(family, n, algorithm)
        for family in families
        for n in sizes
        if n <= min(MAX_NODES.get(family, n), max_nodes or n)
        for algorithm in algorithms
    ]


def _distance_error(run: Any) -> tuple[float, float]:
    """(largest |d - d_clrs| over the trace, that over its tolerance)."""
    truth = np.asarray(run.reference.hints["d"][:, 0], np.float64)
    found = np.asarray(run.hints["d"], np.float64)
    error = np.abs(found - truth)
    tolerance = DISTANCE_TOLERANCE + DISTANCE_RELATIVE_TOLERANCE * np.abs(truth)
    return float(error.max()), float((error / tolerance).max())


def run_point(
    point: SweepPoint, models: dict[tuple[str, str], CompiledModel]
) -> list[dict[str, Any]]:
    """One graph against dm-clrs, once per dtype: a row each.

    dm-clrs's trace is computed once, in float64; a float32 model rounds
    its inputs to float32 and is compared with the same float64 reference.
    """
    weights = make_graph(
        point.family,
        point.num_nodes,
        point.seed,
        weighted=point.algorithm == "bellman_ford",
    )
    started = time.perf_counter()
    batch = batch_from_graph(point.algorithm, weights, 0, float_dtype=np.float64)
    reference_s = time.perf_counter() - started
    gap = (
        smallest_decisive_gap(batch) if point.algorithm == "bellman_ford" else math.nan
    )
    rows = []
    for dtype in DTYPES:
        model = models[(point.algorithm, dtype)]
        started = time.perf_counter()
        run = model.run_batch(batch)
        model_s = time.perf_counter() - started
        row: dict[str, Any] = {
            "family": point.family,
            "algorithm": point.algorithm,
            "dtype": dtype,
            "num_nodes": point.num_nodes,
            "num_edges": int(np.count_nonzero(np.triu(weights, 1))),
            "seed": point.seed,
            "steps": int(batch.lengths[0]),
            "status": "error" if run.mismatches else "ties" if run.ties else "exact",
            "errors": len(run.mismatches),
            "ties": len(run.ties),
            "max_distance": run.compiler_config.max_distance,
            "resolution": run.resolution,
            "smallest_gap": gap,
            "gap_over_resolution": gap / run.resolution if run.resolution else math.nan,
            "max_distance_error": math.nan,
            "error_over_tolerance": math.nan,
            "reference_s": round(reference_s, 3),
            "model_s": round(model_s, 3),
            "first_error": str(run.mismatches[0]) if run.mismatches else "",
        }
        if point.algorithm == "bellman_ford":
            row["max_distance_error"], row["error_over_tolerance"] = _distance_error(
                run
            )
        rows.append(row)
    return rows


PRECISION_TABLE = "compiled_precision_limits.csv"


def breakdown(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per algorithm, dtype and family: where exactness ends.

    The largest size run, the largest exact size, and the smallest size with
    a near-tie or an error.
    """
    out = []
    keys = dict.fromkeys((r["algorithm"], r["dtype"], r["family"]) for r in rows)
    for algorithm, dtype, family in keys:
        mine = [
            r
            for r in rows
            if (r["algorithm"], r["dtype"], r["family"]) == (algorithm, dtype, family)
        ]
        sizes = sorted(int(r["num_nodes"]) for r in mine)

        def first(status: str, mine=mine) -> int | str:
            hit = [int(r["num_nodes"]) for r in mine if r["status"] == status]
            return min(hit) if hit else ""

        exact = [int(r["num_nodes"]) for r in mine if r["status"] == "exact"]
        out.append(
            {
                "algorithm": algorithm,
                "dtype": dtype,
                "family": family,
                "largest_run": sizes[-1],
                "largest_exact": max(exact) if exact else "",
                "first_ties": first("ties"),
                "first_error": first("error"),
            }
        )
    return out


def sweep(
    results_dir: str | os.PathLike,
    figures_dir: str | os.PathLike,
    families: Sequence[str] = SWEEP_FAMILIES,
    sizes: Sequence[int] = SIZES,
    algorithms: Sequence[str] = ALGORITHMS,
    max_nodes: int | None = None,
    progress: bool = True,
    profile: Profile | None = None,
) -> list[dict[str, Any]]:
    """Run the sweep; write the table, its breakdown summary and the figure.

    ``profile``: the profile whose sizes these are, recorded in the sidecars.

    Rows are written after every graph (atomically), so an interrupted sweep
    keeps what it finished.
    """
    for family in families:
        if family not in FAMILIES:
            raise ValueError(
                f"unknown graph family {family!r}; known: {', '.join(FAMILIES)}"
            )
    models = {
        (algorithm, dtype): compile_algorithm(algorithm, None, dtype=dtype)
        for algorithm in algorithms
        for dtype in DTYPES
    }
    todo = points(families, sizes, algorithms, max_nodes)
    meta = {
        **({} if profile is None else metadata(profile)),
        "families": list(families),
        "sizes": list(sizes),
        "max_nodes": {f: MAX_NODES.get(f) for f in families},
        "source": 0,
        "hidden_size": {
            a: models[(a, "float32")].layout.hidden_size for a in algorithms
        },
    }
    results = Path(results_dir)
    rows: list[dict[str, Any]] = []
    for point in tqdm(todo, desc="size sweep", disable=not progress):
        rows += run_point(point, models)
        files.write_table(results / TABLE, rows, meta)
    files.write_table(results / BREAKDOWN_TABLE, breakdown(rows), meta)
    files.write_table(results / PRECISION_TABLE, precision_limits(), meta)
    fig = plots.plot_size_sweep(rows)
    files.save_figure(fig, Path(figures_dir) / FIGURE)
    plots.close(fig)
    return rows


def sweep_profile(
    profile: Profile, dirs: OutputDirs, progress: bool = True
) -> list[dict[str, Any]]:
    """Notebook 01's sweep at ``profile``'s sizes (``Profile.studies``); its rows.

    ``cpu`` sweeps to 256 nodes, ``studies`` and ``paper`` to 4096 (where
    float32 and float64 part), in ``dirs``.  Reading (``dirs.reading``): the
    rows as written.
    """
    if dirs.reading:
        return dirs.read_back(TABLE, typed=True)
    studies = profile.studies
    return sweep(
        dirs.results,
        dirs.figures,
        studies.size_sweep_families or SWEEP_FAMILIES,
        studies.size_sweep_sizes or SIZES,
        progress=progress,
        profile=profile,
    )
