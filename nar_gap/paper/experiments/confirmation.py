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
that added them precedes any count on :data:`FIRST_SEED`'s block), and
:func:`run_confirmation` answers them on fresh seeds of the two arms only,
one-sided in the stated direction, decided together by Holm's step-down
(:func:`~nar_gap.analysis.verdicts.confirmed_together`): a hypothesis is
``confirmed`` or ``not confirmed``, nothing else.  The grids
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

from nar_gap.analysis.models import Models
from nar_gap.analysis.pointers import paired_tie_counts, tie_count_rows
from nar_gap.analysis.verdicts import confirmed_together
from nar_gap.paper.experiments import generalisation, tie_test
from nar_gap.paper.experiments.path_pointers import TRANSFER_SIZES, TWIN, has_section
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


# Fixed from 6c at 24 seeds per arm (studies, `a7695af`) and committed
# (`c6360c2`) before any seed of the fresh block was counted: the two cells
# where the twin's contrast with supervised was strongest each way (wrong
# outputs among tied nodes running free; fewer at 2x without self-loops, 18
# of 24 seeds, more at 8x with them, 20 of 24; neither decided by 6c's Holm
# over 48 tests).
HYPOTHESES = (
    Hypothesis("wrong_tied", clrs_law=False, size_factor=2, side="fewer"),
    Hypothesis("wrong_tied", clrs_law=True, size_factor=8, side="more"),
)


def runs_at(profile: Profile) -> bool:
    """Whether ``profile`` asks for a fresh block and runs 6c (whose pair it trains)."""
    return bool(profile.studies.confirm_seeds) and (
        ALGORITHM in profile.studies.recipe_algorithms
        and has_section(profile, ALGORITHM)
    )


def confirm_seeds(profile: Profile) -> int:
    """``studies.confirm_seeds``: the fresh block's seeds per arm (0: none)."""
    return profile.studies.confirm_seeds


def seed_list(profile: Profile) -> tuple[int, ...]:
    """The fresh block: :func:`confirm_seeds` seeds from :data:`FIRST_SEED`."""
    return profile.seed_list(confirm_seeds(profile), first=FIRST_SEED)


def seeds_file(algorithm: str = ALGORITHM) -> str:
    """Per arm, seed and hypothesis's grid: ``pointers.model_tie_counts``."""
    return f"confirm_seeds_{algorithm}.csv"


def results_file(algorithm: str = ALGORITHM) -> str:
    """Per hypothesis: the fresh block's test and verdict (:func:`tests`)."""
    return f"confirm_{algorithm}.csv"


def files_of(algorithm: str = ALGORITHM) -> list[str]:
    """The study's two tables."""
    return [seeds_file(algorithm), results_file(algorithm)]


def tests(
    rows: Sequence[Mapping[str, Any]], hypotheses: Sequence[Hypothesis] = HYPOTHESES
) -> list[dict[str, Any]]:
    """Each hypothesis on ``rows`` (``pointers.tie_count_rows``), as stated.

    :func:`~nar_gap.analysis.verdicts.confirmed_together`: one-sided in the
    stated direction, Holm's step-down over the hypotheses; beside each,
    the medians.
    """
    pairs, out = [], []
    for h in hypotheses:
        seeds, *x_y = paired_tie_counts(
            rows, h.measure, h.clrs_law, h.num_nodes, h.arm, h.against
        )
        pairs.append(x_y)
        out.append(
            dataclasses.asdict(h)
            | {"num_nodes": h.num_nodes}
            | {
                f"median_{k}": np.median(v) if seeds else math.nan
                for k, v in zip(("arm", "against"), x_y, strict=True)
            }
        )
    judged = confirmed_together(pairs, [h.side for h in hypotheses])
    return [row | found for row, found in zip(out, judged, strict=True)]


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
    rows = tie_count_rows(arms, grids)
    meta = metadata(
        profile,
        recipes=list(pair),
        seeds=list(seed_list(profile)),
        hypotheses=[dataclasses.asdict(h) for h in HYPOTHESES],
    )
    for name, table in zip(files_of(), (rows, tests(rows)), strict=True):
        files.write_table(Path(dirs.results) / name, table, meta)
