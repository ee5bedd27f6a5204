"""Does mixing graph families into training protect BFS's tie memory (6c)?

Section 6b counts, per seed, the outputs that name the other of a node's
tied parents on grids larger than any training graph, for the supervised
recipe, its plain pair and the twin that trains with families mixed in.  6b
tests nothing across seeds, and none of its arms mixes families in without
supervision, so it cannot say whether the families protect the memory, nor
whether the supervision is what loses it.  This section asks both on a
two-by-two design, plain or supervised, without or with the families
(:data:`ARMS`; :data:`MIXED_PLAIN` is the new arm), each arm trained from
the same seeds (initialisation and data order) at :func:`tie_seeds` seeds,
and tests :data:`CONTRASTS` paired by seed on :data:`MEASURES`, on grids
drawn both ways :data:`GRID_LAWS` names, at each of :func:`grid_sizes`:
summed over sizes, a contrast that reverses between two sizes would hide.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.analysis.models import Models
from nar_gap.analysis.pointers import (
    paired_tie_counts,
    tie_count_rows,
    tie_count_table,
)
from nar_gap.analysis.power import (
    RESAMPLED_DRAWS,
    seeds_for_signed_rank,
    seeds_for_trend,
)
from nar_gap.analysis.stats import relative_excess
from nar_gap.analysis.verdicts import decided_together, ordered_trend, paired_fewer
from nar_gap.paper.experiments import generalisation, recipes
from nar_gap.paper.experiments.path_pointers import TWIN, transfer_sizes, with_families
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import metadata, train_once
from nar_gap.system import files
from nar_gap.tasks.graphs import grid_batches
from nar_gap.training.config import TrainConfig

MIXED_PLAIN = "plain, families mixed in"  # the control arm's contender name
ARMS = ("plain", "supervised", TWIN, MIXED_PLAIN)
# (arm, the arm it is paired with, what differs): does the arm hold fewer?
CONTRASTS = (
    (TWIN, "supervised", "families, under supervision"),
    (MIXED_PLAIN, "plain", "families, without supervision"),
    ("plain", "supervised", "no supervision, without families"),
)
# Per seed and grid size (pointers.model_tie_counts): outputs naming another
# tied parent running free (6b's wrong_tied), and tied nodes whose
# teacher-forced output names another, lost in the model's own memory.
MEASURES = ("wrong_tied", "forced_lost")
# 6b's grids have no self-loop, unlike every training graph, whose self-loops
# dm-clrs draws (p = 0.5 a node): the same grids with dm-clrs's law too
# (tasks.families.with_clrs_law), so the self-loop cue cannot decide a test.
GRID_LAWS = (False, True)  # clrs_law


def grid_sizes(profile: Profile) -> tuple[int, ...]:
    """Training's largest size (in distribution), 2x and 4x, then 8x.

    6b's grids (:func:`~.path_pointers.transfer_sizes`) and one twice its
    largest: where along the size each contrast sets in, or turns (16, 32,
    64 and 128 nodes at ``cpu``).
    """
    sizes = transfer_sizes(profile)
    return (*sizes, 2 * sizes[-1])


def seeds_file(algorithm: str) -> str:
    """Per arm, seed, grid law and size: ``pointers.model_tie_counts``."""
    return f"tie_test_seeds_{algorithm}.csv"


def tests_file(algorithm: str) -> str:
    """Per count, grid law, size and contrast: the paired test and its side."""
    return f"tie_test_{algorithm}.csv"


def trends_file(algorithm: str) -> str:
    """Per count, grid law and contrast: Page's test along the sizes."""
    return f"tie_trend_{algorithm}.csv"


def files_of(algorithm: str) -> list[str]:
    """The section's three tables for ``algorithm``."""
    return [seeds_file(algorithm), tests_file(algorithm), trends_file(algorithm)]


def tie_seeds(profile: Profile) -> int:
    """``studies.tie_seeds``, at least the recipe study's (whose runs it reads)."""
    return max(profile.studies.tie_seeds, profile.studies.recipe_seeds)


def arm_configs(
    profile: Profile,
    algorithm: str,
    pair: tuple[str, str],
    seeds: Sequence[int],
    arms: Sequence[str] = ARMS,
) -> dict[str, list[TrainConfig]]:
    """Each of ``arms``' runs: ``seeds`` in blocks of the recipe study's size.

    ``pair``: ``(supervised, plain)`` recipe names.  From seed 0 (this
    section's :func:`tie_seeds` of them), the first runs of ``plain``,
    ``supervised`` and the twin are the recipe study's and 6b's (the same
    configurations, so the same run directories): read back.  Each further
    block is one run of as many seeds, so raising ``tie_seeds`` trains only
    the blocks it adds and reads the others back.  The seeds run on past the
    baseline's where asked (the recipes train from their own
    initialisation, not the baseline's runs), and may start anywhere: the
    confirmation (notebook 09) trains a block no study had seen.
    """
    supervised, plain = recipes.named(list(pair))
    total = len(seeds)
    block = max(1, profile.studies.recipe_seeds)
    whole = {
        arm: dataclasses.replace(
            recipes.recipe_config(profile, algorithm, recipe, total),
            seeds=tuple(int(s) for s in seeds),
        )
        for arm, recipe in (("plain", plain), ("supervised", supervised))
    }
    whole[TWIN] = with_families(whole["supervised"])
    whole[MIXED_PLAIN] = with_families(whole["plain"])
    blocks = [(a, min(a + block, total)) for a in range(0, total, block)]
    return {
        arm: [
            dataclasses.replace(whole[arm], seeds=whole[arm].seeds[a:b])
            for a, b in blocks
        ]
        for arm in arms
    }


def trained_arms(
    profile: Profile,
    algorithm: str,
    pair: tuple[str, str],
    seeds: Sequence[int],
    dirs: OutputDirs,
    arms: Sequence[str] = ARMS,
    progress: bool = True,
) -> dict[str, tuple[str, list[Models]]]:
    """Each of ``arms``: its recipe's name and its :func:`arm_configs` runs.

    Trained where not there, read back otherwise; the form
    ``pointers.tie_count_rows`` counts.
    """
    recipe_of = {"plain": pair[1], "supervised": pair[0]}
    recipe_of |= {TWIN: f"{pair[0]}+families", MIXED_PLAIN: f"{pair[1]}+families"}
    return {
        arm: (
            recipe_of[arm],
            [Models.from_run(train_once(c, dirs.runs, progress)) for c in runs],
        )
        for arm, runs in arm_configs(profile, algorithm, pair, seeds, arms).items()
    }


def tests(
    rows: Sequence[Mapping[str, Any]], draws: int = RESAMPLED_DRAWS
) -> list[dict[str, Any]]:
    """Each of :data:`CONTRASTS` on each measure, grid law and size, by seed.

    :func:`~nar_gap.analysis.verdicts.paired_fewer` (a Wilcoxon signed-rank
    test each way: a few seeds lose hundreds of ties and most a handful, so
    ranks, not a t-test), decided together by Holm's step-down over the
    table's tests (:func:`~nar_gap.analysis.verdicts.decided_together`):
    ``side`` is ``fewer``
    where the arm holds fewer, ``more``, or ``undecided``, with the seeds a
    decision would need at the Bonferroni level, Holm's strictest
    (:func:`~nar_gap.analysis.power.seeds_for_signed_rank`: the measured
    differences resampled, ``draws`` sets per count tried); the seed counts
    say how the pairs fell.  Sizes come from the rows.
    """
    sizes = sorted({int(r["num_nodes"]) for r in rows})
    keys = list(itertools.product(MEASURES, GRID_LAWS, sizes, CONTRASTS))
    out, judgements, differences = [], [], []
    for measure, law, size, (arm, other, differs) in keys:
        seeds, x, y = paired_tie_counts(rows, measure, law, size, arm, other)
        judgements.append(judged := paired_fewer(x, y))
        differences.append(y - x)
        out.append(
            {"measure": measure, "clrs_law": law, "num_nodes": size}
            | {"arm": arm, "against": other, "differs": differs}
            | {"seeds": len(seeds), "fewer_seeds": int(np.sum(x < y))}
            | {"more_seeds": int(np.sum(x > y)), "same_seeds": int(np.sum(x == y))}
            | {"median_arm": np.median(x) if seeds else np.nan}
            | {"median_against": np.median(y) if seeds else np.nan}
            | {"p_fewer": judged.p_fewer, "p_more": judged.p_more, "p": judged.p}
        )
    count = functools.partial(seeds_for_signed_rank, draws=draws)
    decisions = decided_together(judgements, differences, count)
    return [row | decision for row, decision in zip(out, decisions, strict=True)]


def trends(
    rows: Sequence[Mapping[str, Any]], draws: int = RESAMPLED_DRAWS
) -> list[dict[str, Any]]:
    """Does each contrast change with the grid's size?  Page's test, by seed.

    Per count, grid law and contrast, each seed's relative excess
    (:func:`~nar_gap.analysis.stats.relative_excess`) of the arm over its
    pair at each size, sizes in order, tested for a trend along them
    (:func:`~nar_gap.analysis.verdicts.ordered_trend`: ranks within each
    seed, p by permuting them), the table's tests decided together by Holm's
    step-down (:func:`~nar_gap.analysis.verdicts.decided_together`), a family
    apart from :func:`tests`' (its own question): ``side`` is ``rises`` (the
    arm's share of the pair's count grows with size), ``falls`` or
    ``undecided``, with the seeds a decision would need at the Bonferroni
    level (:func:`~nar_gap.analysis.power.seeds_for_trend`, ``draws`` sets
    per count tried).
    One test across the sizes, where :func:`tests` spends one on each size.
    """
    sizes = sorted({int(r["num_nodes"]) for r in rows})
    keys = list(itertools.product(MEASURES, GRID_LAWS, CONTRASTS))
    out, judgements, excesses = [], [], []
    for measure, law, (arm, other, differs) in keys:
        at = [tie_count_table(rows, measure, law, size) for size in sizes]
        seeds = sorted(
            set.intersection(*(set(c.get(k, {})) for c in at for k in (arm, other)))
        )
        a, b = (
            np.asarray([[c[k][s] for c in at] for s in seeds], float).reshape(
                len(seeds), len(sizes)
            )
            for k in (arm, other)
        )
        excess = relative_excess(a, b)
        judgements.append(judged := ordered_trend(excess))
        excesses.append(excess)
        out.append(
            {"measure": measure, "clrs_law": law}
            | {"arm": arm, "against": other, "differs": differs, "seeds": len(seeds)}
            | {
                f"median_excess_{n}": np.median(excess[:, i]) if seeds else np.nan
                for i, n in enumerate(sizes)
            }
            | {"page_l": judged.statistic, "p_rises": judged.p_rises}
            | {"p_falls": judged.p_falls, "p": judged.p}
        )
    count = functools.partial(seeds_for_trend, draws=draws)
    decisions = decided_together(judgements, excesses, count)
    return [row | decision for row, decision in zip(out, decisions, strict=True)]


def run_tie_test(
    profile: Profile, algorithm: str, dirs: OutputDirs, progress: bool = True
) -> None:
    """Notebook 07's section 6c: train the runs not there, count, test, write.

    The pair is the generalisation study's (:func:`~.generalisation.
    chosen_recipes`), the grids 6b's (:func:`~.path_pointers.transfer_sizes`:
    training's largest size, 2x and 4x), so the first seeds' counts on them
    are 6b's own, and 8x (:func:`grid_sizes`), each also by dm-clrs's law
    (:data:`GRID_LAWS`).  Reading (``dirs.reading``): nothing to do.
    """
    if dirs.reading:
        return
    pair = generalisation.chosen_recipes(dirs.results, algorithm)
    seeds = profile.seed_list(tie_seeds(profile))
    arms = trained_arms(profile, algorithm, pair, seeds, dirs, progress=progress)
    sizes = grid_sizes(profile)
    cells = list(itertools.product(GRID_LAWS, sizes))
    grids = grid_batches(algorithm, cells, profile.studies.family_graphs)
    rows = tie_count_rows(arms, grids)
    meta = metadata(
        profile,
        recipes=list(pair),
        seeds=tie_seeds(profile),
        grid_sizes=list(sizes),
        grid_laws=list(GRID_LAWS),
        contrasts=[list(c) for c in CONTRASTS],
    )
    draws = profile.studies.count_draws or RESAMPLED_DRAWS
    tables = (rows, tests(rows, draws), trends(rows, draws))
    for name, table in zip(files_of(algorithm), tables, strict=True):
        files.write_table(Path(dirs.results) / name, table, meta)
