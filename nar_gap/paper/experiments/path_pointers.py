"""Where a supervised BFS pointer goes wrong on long paths (beyond the paper).

Notebook 07's path case (:func:`~nar_gap.paper.experiments.causal_gap.
run_path_case`) asks whether the supervised recipe's misses on 16-node paths
come from where it attends; this section (6b) asks what its decoders read
instead, with :mod:`nar_gap.analysis.pointers`, for the pair of recipes the
generalisation study chose (supervised and plain, the recipe study's seeds)
and the compiled network, on the same path graphs, and how long after its
reach the batches the recipes trained on ask a node to keep its pointer against
the paths.  Then it asks whether the supervised recipe's decoders lack a memory
for lack of such traces: its twin (:func:`with_families`) trains with a
quarter of each batch's graphs paths, trees and grids
(``TrainConfig.train_families``), whose traces ask for long memories; the
paths of the test are then of a family and size it trained on.  Last, it
reads plain, supervised and the twin beyond the sizes they trained at
(:func:`transfer`: the generalisation study's families at
:func:`transfer_sizes`, and where wrong outputs point instead) and, on
grids, how long after a node's reach they keep which of its tied parents
BFS took (:func:`tie_memory`).

Counts, not intervals: the recipe study's 2 seeds at the cpu profile decide
no test across seeds; each seed's count is a row, and the table says its n.
One test is within a seed, over its edited cases
(:func:`~nar_gap.analysis.pointers.edit_reading`); one is across seeds,
whether hardening a node's neighbours' fed pointers brings its old pointer
nearer what teacher forcing names (:func:`as_forced_tests`), undecidable at
2 seeds, with the seeds a decision would need.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.analysis.models import Models, measure_against_compiled
from nar_gap.analysis.pointers import (
    ALGORITHMS,
    EDIT_AGE,
    Trace,
    age_counts,
    age_rows,
    model_ties_by_age,
    model_wrong_outputs,
    pointer_tables,
    tied_nodes,
)
from nar_gap.analysis.power import RESAMPLED_DRAWS, seeds_for_signed_rank
from nar_gap.analysis.verdicts import decided_together, paired_fewer
from nar_gap.compiler.compiled_model import CompiledModel
from nar_gap.model.model import Model
from nar_gap.paper.experiments import generalisation, recipes
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import metadata, train_once
from nar_gap.system import files
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.graphs import family_batch
from nar_gap.training.config import TrainConfig
from nar_gap.training.feed import drawn_batches

TRAINING_ROUNDS = 2  # the exposure table's training batches: 2 per training size
MIXED_FAMILIES = ("path", "tree", "grid")  # the twin's families, in turn
MIXED_SHARE = 0.25  # of each batch's graphs: 8 of CLRS's 32
TWIN = "supervised, families mixed in"  # the twin's contender name
TRANSFER_FACTORS = (1, 2, 4)  # the transfer table's sizes: training's largest, 2x, 4x


def with_families(config: TrainConfig) -> TrainConfig:
    """``config`` with :data:`MIXED_SHARE` of each batch from :data:`MIXED_FAMILIES`."""
    return dataclasses.replace(
        config, train_families=MIXED_FAMILIES, family_share=MIXED_SHARE
    )


def rows_file(algorithm: str) -> str:
    """Per model and seed: rollout, hint errors, outputs by pointer."""
    return f"path_pointers_{algorithm}.csv"


def edits_file(algorithm: str) -> str:
    """Per model, seed, edit and parity: the intervention's counts."""
    return f"path_pointers_edits_{algorithm}.csv"


def ages_file(algorithm: str) -> str:
    """Per age: node-steps in the training graphs and on the paths."""
    return f"path_pointers_ages_{algorithm}.csv"


def distances_file(algorithm: str) -> str:
    """Per model, seed, rollout and distance: old nodes' moves to a child."""
    return f"path_pointers_distances_{algorithm}.csv"


def transfer_file(algorithm: str) -> str:
    """Per model, seed, family and size: accuracy and faithfulness there."""
    return f"path_pointers_transfer_{algorithm}.csv"


def ties_file(algorithm: str) -> str:
    """Per model, seed, rollout, grid size and age: tied parents kept or lost."""
    return f"path_pointers_ties_{algorithm}.csv"


def files_of(algorithm: str) -> list[str]:
    """The section's six tables for ``algorithm``."""
    names = (rows_file, edits_file, ages_file, distances_file, transfer_file)
    names += (ties_file,)
    return [name(algorithm) for name in names]


def transfer_sizes(profile: Profile) -> tuple[int, ...]:
    """The transfer table's sizes: :data:`TRANSFER_FACTORS` times training's largest.

    16, 32 and 64 nodes wherever training reaches 16 (``cpu`` and above); at
    ``smoke``, whose models train on 4 nodes, 4, 8 and 16, the same multiples.
    Fixed at 16, 32 and 64 they were 4x to 16x there, and 6c's grids reached
    128 nodes: notebook 07 at ``smoke``, as a job on finished runs, took about
    76 s then and 66 s now (two runs each, alternated, on one 2-core machine).
    """
    largest = max(profile.train_lengths)
    return tuple(factor * largest for factor in TRANSFER_FACTORS)


def has_section(profile: Profile, algorithm: str) -> bool:
    """Whether notebook 07 measures this section for ``algorithm`` at ``profile``.

    A BFS trace, and the generalisation study on path graphs
    (:func:`~nar_gap.paper.experiments.generalisation.studies_paths`).
    """
    return algorithm in ALGORITHMS and generalisation.studies_paths(profile, algorithm)


def measure(
    contenders: Sequence[tuple[str, str, Models]],
    compiled: Model,
    batch: Batch,
    training: Mapping[str, Sequence[Batch]],
    grids: Sequence[Batch],
) -> tuple[list[dict[str, Any]], ...]:
    """The first four tables (:func:`files_of`'s order) for each seed and ``compiled``.

    ``contenders``: ``(contender, recipe, models)``; ``training``: each
    training distribution's graphs by name, for the exposure table, which
    also counts their tied nodes (:func:`~nar_gap.analysis.pointers.
    tied_nodes`) against those of ``grids`` (``<name>_tied``,
    ``grids_tied``).
    """
    labelled = [
        (contender, recipe, int(seed), model)
        for contender, recipe, models in contenders
        for seed, model in zip(models.seeds, models.each(), strict=True)
    ]
    labelled.append(("compiled", "compiled", -1, compiled))
    rows, edits, distances = [], [], []
    shape = {"graphs": batch.batch_size, "num_nodes": batch.num_nodes}
    for contender, recipe, seed, model in labelled:
        who = {"contender": contender, "recipe": recipe, "seed": seed}
        read = pointer_tables(model, batch)
        rows.append({**who, **shape, **read.row})
        edits += [{**who, "age": EDIT_AGE, **r} for r in read.edits]
        distances += [{**who, "age": EDIT_AGE, **r} for r in read.distances]
    traces = {name: [Trace.of(b) for b in part] for name, part in training.items()}
    sources = {name: age_counts(t) for name, t in traces.items()}
    sources["paths"] = age_counts([Trace.of(batch)])
    sources |= {f"{name}_tied": age_counts(t, tied_nodes) for name, t in traces.items()}
    sources["grids_tied"] = age_counts(map(Trace.of, grids), tied_nodes)
    return rows, edits, age_rows(sources), distances


def transfer(
    contenders: Sequence[tuple[str, str, Models]],
    compiled: CompiledModel,
    families: Sequence[str],
    sizes: Sequence[int],
    *,
    graphs: int,
) -> list[dict[str, Any]]:
    """Each seed's accuracy and faithfulness on each family and size.

    Whether the twin's families carry beyond the sizes it trained at, and to
    the families it did not train on: the generalisation study's measures
    (:func:`~nar_gap.analysis.models.measure_against_compiled`: accuracy,
    and internal distance and argmax agreement against ``compiled`` fitted
    to the graphs) on
    ``graphs`` graphs of each family at each size, and where each seed's
    wrong outputs point instead (:func:`~nar_gap.analysis.pointers.
    model_wrong_outputs`: a tied parent, a child, elsewhere); ``twin_trained``
    marks the families the twin's batches hold (:data:`MIXED_FAMILIES`).
    """
    rows = []
    for family in families:
        for num_nodes in sizes:
            batch = family_batch(compiled.program.algorithm, family, num_nodes, graphs)
            where = {"family": family, "num_nodes": num_nodes, "graphs": graphs}
            where["twin_trained"] = family in MIXED_FAMILIES
            for contender, recipe, models in contenders:
                values = measure_against_compiled(models, batch, compiled)
                for k, seed in enumerate(models.seeds):
                    measured = {m: float(v[k]) for m, v in values.items()}
                    measured |= model_wrong_outputs(models.model(k), batch)
                    who = {"contender": contender, "recipe": recipe, "seed": int(seed)}
                    rows.append(who | where | measured)
    return rows


def tie_memory(
    contenders: Sequence[tuple[str, str, Models]],
    compiled: CompiledModel,
    grids: Sequence[Batch],
) -> list[dict[str, Any]]:
    """Each seed's tied parents on ``grids``, kept or lost, by age, free and forced.

    A grid's node off its source's row and column has two parents one step
    nearer, and BFS takes the lowest id
    (:func:`~nar_gap.analysis.pointers.model_ties_by_age`); the transfer
    table's ``wrong_tied`` counts the outputs naming the other, and this
    table says how long after the node's reach they do, running free and
    teacher-forced, and by how much the output prefers the parent BFS took
    (``margin_mean``, :func:`~nar_gap.analysis.pointers.tie_margins`).
    ``compiled`` keeps every one: the control.
    """
    labelled = [
        (contender, recipe, int(seed), model)
        for contender, recipe, models in contenders
        for seed, model in zip(models.seeds, models.each(), strict=True)
    ]
    labelled.append(("compiled", "compiled", -1, compiled))
    rows = []
    for batch in grids:
        where = {"num_nodes": batch.num_nodes, "graphs": batch.batch_size}
        for contender, recipe, seed, model in labelled:
            who = {"contender": contender, "recipe": recipe, "seed": seed}
            for rollout, ages in model_ties_by_age(model, batch).items():
                rows += [
                    who
                    | where
                    | {"rollout": rollout, "age": age}
                    | {"tied_nodes": n, "other_tied": k, "margin_mean": margin}
                    for age, (n, k, margin) in ages.items()
                ]
    return rows


def as_forced_tests(
    rows: Sequence[Mapping[str, Any]], draws: int = RESAMPLED_DRAWS
) -> list[dict[str, Any]]:
    """Does hardening a node's neighbours' pointers make its own what forcing makes it?

    Per trained contender of the rows table (:func:`rows_file`; compiled, the
    control, at 1 either way, is left out), paired by seed: the share of old
    node-steps naming what teacher forcing names running free
    (``as_forced_free``) against that share with only each node's parent's
    and children's fed pointers hardened (``as_forced_free_hard_both``,
    :func:`~nar_gap.analysis.pointers.same_as_forced`).
    :func:`~nar_gap.analysis.verdicts.paired_fewer` (an exact Wilcoxon
    signed-rank test each way), the contenders decided together by Holm's
    step-down (:func:`~nar_gap.analysis.verdicts.decided_together`): ``side``
    is ``fewer`` where running free agrees with teacher forcing less often
    than with the neighbours hardened (their soft pointers are what keeps
    the node from teacher forcing's answer), ``more``, or ``undecided``, with
    the seeds a decision would need (``draws`` resampled sets per count).
    Seeds whose share is NaN (no node that old) are left out.
    """
    out, judgements, differences = [], [], []
    for contender in dict.fromkeys(str(r["contender"]) for r in rows):
        if contender == "compiled":
            continue
        mine = [r for r in rows if str(r["contender"]) == contender]
        free, both = (
            np.asarray([files.float_cell(r[f"as_forced_{name}"]) for r in mine])
            for name in ("free", "free_hard_both")
        )
        kept = np.isfinite(free) & np.isfinite(both)
        free, both = free[kept], both[kept]
        judgements.append(judged := paired_fewer(free, both))
        differences.append(both - free)
        out.append(
            {"contender": contender, "recipe": str(mine[0]["recipe"])}
            | {"seeds": int(kept.sum()), "closer_seeds": int(np.sum(both > free))}
            | {"farther_seeds": int(np.sum(both < free))}
            | {"median_free": float(np.median(free)) if kept.any() else np.nan}
            | {"median_both": float(np.median(both)) if kept.any() else np.nan}
            | {"p": judged.p}
        )
    count = functools.partial(seeds_for_signed_rank, draws=draws)
    decisions = decided_together(judgements, differences, count)
    return [row | decision for row, decision in zip(out, decisions, strict=True)]


def twin_sides(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Where the twin beats the supervised recipe's accuracy on every seed.

    Counts of cells where it is higher on every seed, lower on every seed,
    or neither, per group: ``"trained"`` (the twin's families) and
    ``"held_out"``.  A cell is a family at a size above the smallest of
    :func:`transfer`'s sizes (the largest the recipes trained at), paired by
    seed.
    """
    smallest = min(int(r["num_nodes"]) for r in rows)
    accuracy: dict[tuple[str, int, str], dict[int, float]] = {}
    trained: dict[tuple[str, int], bool] = {}
    for r in rows:
        cell = (str(r["family"]), int(r["num_nodes"]))
        trained[cell] = str(r["twin_trained"]) in ("True", "true", "1")
        by_seed = accuracy.setdefault((*cell, str(r["contender"])), {})
        by_seed[int(r["seed"])] = float(r["accuracy"])
    sides = {
        g: {"higher": 0, "lower": 0, "neither": 0} for g in ("trained", "held_out")
    }
    for cell, was_trained in trained.items():
        twin = accuracy.get((*cell, TWIN), {})
        supervised = accuracy.get((*cell, "supervised"), {})
        seeds = sorted(twin.keys() & supervised.keys())
        if cell[1] == smallest or not seeds:
            continue
        gaps = [twin[s] - supervised[s] for s in seeds]
        side = "higher" if min(gaps) > 0 else "lower" if max(gaps) < 0 else "neither"
        sides["trained" if was_trained else "held_out"][side] += 1
    return sides


def run_path_pointers(
    profile: Profile, algorithm: str, dirs: OutputDirs, progress: bool = True
) -> None:
    """Notebook 07's section: the chosen recipe pair's seeds, the twin, compiled.

    The recipes and the compiled network are the generalisation study's
    (:func:`~nar_gap.paper.experiments.generalisation.contenders`: runs read
    back); the supervised one's twin (:func:`with_families`) trains here at the
    same seeds and steps.  The training graphs are the batches the supervised
    recipe's first seed, and its twin's, drew in their first
    :data:`TRAINING_ROUNDS` rounds of the training sizes
    (:func:`~nar_gap.training.feed.drawn_batches`: their sizes, edge
    probabilities, ``pos`` and families; plain draws the supervised one's).
    Reading (``dirs.reading``): nothing to measure, the tables are there.
    """
    if dirs.reading:
        return
    pair = generalisation.chosen_recipes(dirs.results, algorithm)
    seeds = profile.studies.recipe_seeds
    found = generalisation.contenders(profile, algorithm, dirs, seeds, pair, progress)
    trained = [(c.name, c.recipe, c.models) for c in found[:2]]  # plain, supervised
    config = recipes.recipe_config(profile, algorithm, *recipes.named(pair[:1]), seeds)
    twin = with_families(config)
    models = Models.from_run(train_once(twin, dirs.runs, progress))
    trained.append((TWIN, f"{pair[0]}+families", models))
    graphs = profile.studies.family_graphs
    batch = family_batch(algorithm, "path", generalisation.FAMILY_NODES, graphs)
    steps = range(TRAINING_ROUNDS * len(config.train_lengths))
    training = {
        "training": drawn_batches(config, config.seeds[0], steps),
        "training_families": drawn_batches(twin, config.seeds[0], steps),
    }
    sizes = transfer_sizes(profile)
    grids = [family_batch(algorithm, "grid", n, graphs) for n in sizes]
    tables = measure(trained, found[0].compiled, batch, training, grids)
    families = generalisation.study_families(profile)
    tables += (transfer(trained, found[0].compiled, families, sizes, graphs=graphs),)
    tables += (tie_memory(trained, found[0].compiled, grids),)
    meta = metadata(
        profile,
        recipes=list(pair),
        seeds=seeds,
        edit_age=EDIT_AGE,
        training_steps=len(steps),
        training_seed=config.seeds[0],
        twin={"families": list(MIXED_FAMILIES), "share": MIXED_SHARE},
        transfer={"families": list(families), "sizes": list(sizes)},
    )
    for name, rows in zip(files_of(algorithm), tables, strict=True):
        files.write_table(Path(dirs.results) / name, rows, meta)
