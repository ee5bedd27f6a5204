"""Notebook 09: two of 6c's findings tested again, on seeds no study has seen.

Section 6c (notebook 07, :mod:`.tie_test`) explores: 48 paired tests and 12
trend tests on one block of seeds, and where the twin (the supervised recipe
with families mixed in) seemed to turn from fewer wrong outputs than
supervised at twice training's size to more at eight times, it was given
more seeds *because* those two tests' p was small.  A p-value computed on
the data that chose its question overstates the evidence (the winner's
curse), and adding seeds where p looked promising spends the level again.

This study separates choosing from testing.  :data:`HYPOTHESES` fixes each
question before its data exist (cell, measure and direction; the commit
that added them precedes the training of :data:`FIRST_SEED`'s block), and
:func:`run_confirmation` answers them on fresh seeds of the two arms only,
one-sided in the stated direction, decided together by Holm's step-down: a
hypothesis is ``confirmed`` or ``not confirmed``, nothing else.  The grids
are 6c's own (the same draws), so a failure to confirm speaks of the seeds,
not of the graphs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from nar_gap.analysis.models import Models
from nar_gap.analysis.verdicts import SIGNIFICANCE, holm, paired_fewer
from nar_gap.paper.experiments import generalisation, tie_test
from nar_gap.paper.experiments.path_pointers import TRANSFER_SIZES, TWIN
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import metadata, train_once
from nar_gap.system import files
from nar_gap.tasks.graphs import family_batch

ALGORITHM = "bfs"  # 6c's: BFS's tied parents
ARMS = (TWIN, "supervised")
# The fresh block's first seed: past every seed any profile trains elsewhere
# (the paper profile's 128 baselines, the studies' 24 tie-test seeds); a test
# keeps it so.
FIRST_SEED = 1_000
CONFIRMED, NOT_CONFIRMED = "confirmed", "not confirmed"


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """``arm`` holds ``side`` (``fewer`` or ``more``) ``measure`` than ``against``.

    On 6c's grids of ``size_factor`` times training's largest size, drawn
    without self-loops or by dm-clrs's law (``clrs_law``), paired by seed.
    """

    measure: str
    clrs_law: bool
    size_factor: int
    side: str
    arm: str = TWIN
    against: str = "supervised"

    @property
    def num_nodes(self) -> int:
        """The grids' size: ``size_factor`` times training's largest."""
        return self.size_factor * TRANSFER_SIZES[0]


# Fixed from 6c at 24 seeds per arm (studies, `a7695af`), before any seed of
# the fresh block was trained: the two cells where the twin's contrast with
# supervised was strongest each way (wrong outputs among tied nodes running
# free; fewer at 2x without self-loops, 18 of 24 seeds, more at 8x with
# them, 20 of 24; neither decided by 6c's Holm over 48 tests).
HYPOTHESES = (
    Hypothesis("wrong_tied", clrs_law=False, size_factor=2, side="fewer"),
    Hypothesis("wrong_tied", clrs_law=True, size_factor=8, side="more"),
)


def confirm_seeds(profile: Profile) -> int:
    """``studies.confirm_seeds``, at least the recipe study's (its run size)."""
    return max(profile.studies.confirm_seeds, profile.studies.recipe_seeds)


def seed_list(profile: Profile) -> tuple[int, ...]:
    """The fresh block: :func:`confirm_seeds` seeds from :data:`FIRST_SEED`."""
    return profile.seed_list(confirm_seeds(profile), first=FIRST_SEED)


def seeds_file(algorithm: str = ALGORITHM) -> str:
    """Per arm, seed and hypothesis's grid: ``pointers.model_tie_counts``."""
    return f"confirm_seeds_{algorithm}.csv"


def results_file(algorithm: str = ALGORITHM) -> str:
    """Per hypothesis: the fresh block's test and verdict beside 6c's."""
    return f"confirm_{algorithm}.csv"


def files_of(algorithm: str = ALGORITHM) -> list[str]:
    """The study's two tables."""
    return [seeds_file(algorithm), results_file(algorithm)]


def least_p(pairs: int) -> float:
    """The smallest one-sided signed-rank p ``pairs`` can give: all one way.

    ``0.5 ** pairs`` (the exact test): two seeds cannot go below 0.25, so a
    small profile's ``not confirmed`` says nothing of the models.
    """
    return 0.5**pairs if pairs > 0 else math.nan


def share_interval(
    on_side: int, off_side: int, level: float = 1 - SIGNIFICANCE
) -> tuple[float, float]:
    """Clopper-Pearson interval of the share of untied seeds on the stated side.

    The signed-rank test answers whether; this says how many seeds a reader
    should expect to go that way (NaN without an untied seed).
    """
    n = on_side + off_side
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(on_side, n).proportion_ci(level, method="exact")
    return float(ci.low), float(ci.high)


def explored(rows: Sequence[Mapping[str, Any]], h: Hypothesis) -> dict[str, Any]:
    """6c's row for ``h``'s cell (``tie_test.tests``): its seeds and p that way."""
    for r in rows:
        if (
            r["measure"] == h.measure
            and str(r["clrs_law"]) == str(h.clrs_law)
            and int(r["num_nodes"]) == h.num_nodes
            and r["arm"] == h.arm
            and r["against"] == h.against
        ):
            return {
                "explored_seeds": int(r["seeds"]),
                "explored_on_side": int(r[f"{h.side}_seeds"]),
                "explored_p": float(r[f"p_{h.side}"]),
            }
    return {"explored_seeds": 0, "explored_on_side": 0, "explored_p": math.nan}


def tests(
    rows: Sequence[Mapping[str, Any]],
    explored_rows: Sequence[Mapping[str, Any]] = (),
    hypotheses: Sequence[Hypothesis] = HYPOTHESES,
    significance: float = SIGNIFICANCE,
) -> list[dict[str, Any]]:
    """Each hypothesis on ``rows`` (:func:`.tie_test.seed_rows`), one-sided.

    The one-sided Wilcoxon signed-rank p in the stated direction
    (:func:`~nar_gap.analysis.verdicts.paired_fewer`'s, zero differences
    dropped), Holm's step-down over the hypotheses at ``significance``:
    ``confirmed`` where the adjusted p is below it.  Beside it, the p the
    other way (a fresh block that goes against the hypothesis shows there),
    the share of untied seeds on the stated side with its interval
    (:func:`share_interval`), :func:`least_p`, and 6c's row for the same
    cell (:func:`explored`; ``explored_rows`` from ``tie_test.tests_file``).
    """
    out = []
    for h in hypotheses:
        counts = tie_test.per_seed(rows, h.measure, h.clrs_law, h.num_nodes)
        a, b = counts.get(h.arm, {}), counts.get(h.against, {})
        seeds = sorted(a.keys() & b.keys())
        x, y = (np.asarray([t[s] for s in seeds], float) for t in (a, b))
        judged = paired_fewer(x, y)
        fewer, more = int(np.sum(x < y)), int(np.sum(x > y))
        on, off = (fewer, more) if h.side == "fewer" else (more, fewer)
        p, p_other = (
            (judged.p_fewer, judged.p_more)
            if h.side == "fewer"
            else (judged.p_more, judged.p_fewer)
        )
        low, high = share_interval(on, off)
        out.append(
            {"measure": h.measure, "clrs_law": h.clrs_law, "num_nodes": h.num_nodes}
            | {"arm": h.arm, "against": h.against, "side": h.side}
            | {"seeds": len(seeds), "on_side": on, "off_side": off}
            | {"same_seeds": len(seeds) - on - off}
            | {"share": on / (on + off) if on + off else math.nan}
            | {"share_low": low, "share_high": high}
            | {"median_arm": np.median(x) if seeds else math.nan}
            | {"median_against": np.median(y) if seeds else math.nan}
            | {"p": p, "p_other_way": p_other, "least_p": least_p(len(seeds))}
            | explored(explored_rows, h)
        )
    adjusted = holm([r["p"] for r in out])
    return [
        r
        | {"p_holm": float(q)}
        | {"verdict": CONFIRMED if q < significance else NOT_CONFIRMED}
        for r, q in zip(out, adjusted, strict=True)
    ]


def run_confirmation(profile: Profile, dirs: OutputDirs, progress: bool = True) -> None:
    """Notebook 09: train the fresh block's runs not there, count, test, write.

    The pair is the generalisation study's (as 6c's), each arm's runs
    :func:`.tie_test.arm_configs` over :func:`seed_list`, the grids 6c's for
    each hypothesis's cell (``generalisation.FAMILY_GRAPHS`` grids from the
    first).  Reading (``dirs.reading``): nothing to do.
    """
    if dirs.reading:
        return
    pair = generalisation.chosen_recipes(dirs.results, ALGORITHM)
    recipe_of = {"supervised": pair[0], TWIN: f"{pair[0]}+families"}
    configs = tie_test.arm_configs(profile, ALGORITHM, pair, seed_list(profile), ARMS)
    arms = {
        arm: (
            recipe_of[arm],
            [Models.from_run(train_once(c, dirs.runs, progress)) for c in runs],
        )
        for arm, runs in configs.items()
    }
    cells = sorted({(h.clrs_law, h.num_nodes) for h in HYPOTHESES})
    grids = [
        (
            law,
            family_batch(
                ALGORITHM, "grid", n, generalisation.FAMILY_GRAPHS, clrs_law=law
            ),
        )
        for law, n in cells
    ]
    rows = tie_test.seed_rows(arms, grids)
    explored_path = Path(dirs.results) / tie_test.tests_file(ALGORITHM)
    explored_rows = files.read_table(explored_path) if explored_path.exists() else []
    meta = metadata(
        profile,
        recipes=list(pair),
        seeds=list(seed_list(profile)),
        hypotheses=[dataclasses.asdict(h) for h in HYPOTHESES],
        explored_from=tie_test.tests_file(ALGORITHM),
    )
    for name, table in zip(files_of(), (rows, tests(rows, explored_rows)), strict=True):
        files.write_table(Path(dirs.results) / name, table, meta)
