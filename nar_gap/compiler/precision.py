"""Where a compiled Bellman-Ford stops deciding as dm-clrs does: finite precision.

dm-clrs picks each parent by the smallest ``d_j + A_ij``; the compiled
network decides the same choice with a Minimise criterion whose logits
resolve score gaps down to a *resolution* (the compiler's guarantee, which
falls as the fitted distance range grows).  :func:`smallest_decisive_gap`
reads off a trace the smallest gap dm-clrs actually decided by, and
:func:`precision_limits` measures, on a two-route gadget, the smallest gap
the compiled logits still decide, per dtype and distance scale.  The size
sweep (:mod:`nar_gap.paper.experiments.size_sweep`) writes both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from nar_gap.compiler.compiling import compile
from nar_gap.compiler.config import DTYPES
from nar_gap.tasks.batch import Batch


def smallest_decisive_gap(batch: Batch) -> float:
    """The smallest score gap by which dm-clrs chose any Bellman-Ford parent.

    At each round, receiver ``i``'s candidates are its reached neighbours
    and itself, scored ``d_j + A_ij`` on the round's start values; the
    decisive gap is the smallest positive difference from the best score
    (exact ties are the tie-breaking rule's, which the program follows).
    ``inf`` when no choice was contested.
    """
    d = np.asarray(batch.hints["d"][:, 0], np.float64)  # [T, N]
    reached = np.asarray(batch.hints["msk"][:, 0]) > 0.5
    weights = np.asarray(batch.inputs["A"][0], np.float64)
    linked = (weights != 0) | np.eye(weights.shape[0], dtype=bool)
    smallest = math.inf
    for t in range(1, d.shape[0]):
        candidate = linked & reached[t - 1][None, :]
        scores = np.where(candidate, d[t - 1][None, :] + weights, np.inf)
        best = scores.min(axis=1, keepdims=True)
        contested = candidate & np.isfinite(best)
        above = np.where(contested, scores - np.where(contested, best, 0.0), np.inf)
        above = np.where(above > 0, above, np.inf)
        smallest = min(smallest, float(above.min()))
    return smallest


# Distance scales of the precision table and the gaps it tries at each:
# four per decade from 1e-2 down to 1e-10.
PRECISION_DISTANCES = (0.0, 8.0, 64.0, 512.0, 4096.0)
PRECISION_GAPS = tuple(10.0 ** (-k / 4) for k in range(8, 41))


def near_tie_gadget(offset: float, gap: float) -> np.ndarray:
    """Two routes to node 4 that differ by ``gap``, at distance ``offset``.

    0 -(offset)- 1; 1 -0.4- 2 -0.3- 4 and 1 -0.3- 3 -(0.4 - gap)- 4, so
    dm-clrs makes 3 the parent of 4, where the lowest id (2) would win a
    tie.  An ``offset`` of 0 gives edge 0-1 the weight 1e-3.
    """
    weights = np.zeros((5, 5))
    for u, v, w in (
        (0, 1, offset or 1e-3),
        (1, 2, 0.4),
        (2, 4, 0.3),
        (1, 3, 0.3),
        (3, 4, 0.4 - gap),
    ):
        weights[u, v] = weights[v, u] = w
    return weights


def precision_limits(
    distances: Sequence[float] = PRECISION_DISTANCES,
    gaps: Sequence[float] = PRECISION_GAPS,
) -> list[dict[str, Any]]:
    """The smallest score gap compiled Bellman-Ford decides as dm-clrs does.

    Per dtype and distance scale, on :func:`near_tie_gadget`.  Each row
    states the resolution the compiler guarantees (the range is fitted to
    the graph, so it grows with the distance) and the smallest of ``gaps``
    from which every larger one was decided exactly (no mismatch, no
    near-tie).  The guarantee is conservative; the measured limit is what
    the logits actually resolve.
    """
    rows = []
    for dtype in DTYPES:
        model = compile("bellman_ford", None, dtype=dtype)
        for offset in distances:
            smallest, resolution, fitted = math.nan, math.nan, math.nan
            for gap in sorted(gaps, reverse=True):
                run = model.run(near_tie_gadget(offset, gap), 0)
                resolution = run.resolution
                fitted = run.compiler_config.max_distance
                if run.mismatches or run.ties or int(run.outputs["pi"][4]) != 3:
                    break
                smallest = gap
            rows.append(
                {
                    "dtype": dtype,
                    "distance": offset,
                    "max_distance": fitted,
                    "resolution": resolution,
                    "smallest_exact_gap": smallest,
                }
            )
    return rows
