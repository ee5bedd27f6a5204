"""What faithfulness buys (issue 33): plain, supervised, compiled, out of distribution.

A model that executes the compiled mechanism should carry it wherever the
mechanism holds: to larger graphs, to other graph families, to edge weights
outside the training range (the compiled Bellman-Ford program is
scale-equivariant once its constants are fitted to the graph's range).  A
model that is only accurate need not.  This study measures its contenders
the same way:

* ``supervised``: the recipe that comes closest to the compiled mechanism,
  chosen from the recipe table by rule before anything here is measured
  (:func:`~nar_gap.paper.experiments.recipes.closest_pair`: most seeds at the
  bar, then the lowest internal distance; whether it meets the bar is the
  recipe table's to say);
* ``plain``: its unsupervised twin in the same table (the CLRS loss alone,
  same seeds, steps, data order, teacher forcing, curriculum and final-step
  selection);
* ``compiled``: the size-free compiled network as ``run`` executes it: for
  a graph beyond its distance range (``max_weight``, ``max_distance``) the
  program is compiled again for that range
  (:meth:`~nar_gap.compiler.compiled_model.CompiledModel.fitted`);
* ``compiled_fixed`` (programs that add up distances: Bellman-Ford): the
  same network with its default range's parameters on every graph, one
  parameter set like a trained model's.

Conditions (:func:`conditions`), each a batch of graphs with dm-clrs's
hints and outputs:

* ``size``: CLRS's test recipe (the sampler, seed and edge probability of
  ``CLRS30["test"]``) at N = 16, 64, 256 and 1024, its first
  :func:`graphs_at` graphs; N = 16 is the largest training size and the
  in-distribution point;
* ``family``: every graph family of the size sweep at N = 16, so the size
  stays in distribution and only the structure leaves it (grids, paths,
  trees, power-law graphs...);
* ``weight_scale`` (Bellman-Ford): the N = 16 test graphs with every edge
  weight multiplied by 0.1, 10 and 100 (training weights lie in [0, 1));
  dm-clrs recomputes each trace.

Per seed: accuracy (the CLRS score of the output) in every condition, and
sharpness (the loss rise at radius 0.1 in a filter-normalised plane, the
measure notebooks 06 and 07 use).  Stability under further training is the
drift table (:func:`nar_gap.paper.experiments.recipes.run_drift`), read beside
notebook 05's compiled model trained on.

The question, computed by :func:`verdict`: at equal accuracy in
distribution, does the supervised model generalise further than the plain
one?  Both recipes train the same seeds from the same initialisations on
the same data, so each seed gives a paired difference; its t-interval is
taken at a Bonferroni-adjusted level over the out-of-distribution
conditions it tests, so that "better somewhere" is not an artefact of
testing many.  It tests only conditions where plain is below its ceiling
(:func:`at_ceiling`): where plain already scores within
:data:`EQUAL_ACCURACY` of perfect on every seed, no gain that counts is
left to show, and such a condition could only ever say "no".  Each tested
condition's row gives the seeds a decision would need
(:func:`~nar_gap.analysis.verdicts.paired_side`, from the power analysis
of :mod:`nar_gap.analysis.power`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from nar_gap.analysis.landscape import model_sharpness
from nar_gap.analysis.models import (
    AGAINST_COMPILED,
    Models,
    measure_against_compiled,
)
from nar_gap.analysis.verdicts import (
    CONFIDENCE_LEVEL,
    Summary,
    bonferroni_level,
    measure_range,
    paired_by_seed,
    paired_side,
    t_interval,
)
from nar_gap.compiler import compile_algorithm
from nar_gap.compiler.compiled_model import CompiledModel
from nar_gap.paper import plots
from nar_gap.paper.experiments import recipes
from nar_gap.paper.experiments.closing_gap import SHARPNESS_RADIUS
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import metadata, run_dir
from nar_gap.paper.experiments.size_sweep import SWEEP_FAMILIES
from nar_gap.system import files
from nar_gap.tasks._clrs import clrs
from nar_gap.tasks.batch import Batch, concat_batches
from nar_gap.tasks.graphs import batch_from_graph, family_batch
from nar_gap.tasks.sampling import sample_batch
from nar_gap.training import train

CONTENDERS = ("plain", "supervised", "compiled", "compiled_fixed")
SIZES = (16, 64, 256, 1024)
IN_DISTRIBUTION = ("size", "16")
FAMILY_NODES = 16
WEIGHT_SCALES = (0.1, 10.0, 100.0)
# Accuracies this close (the paired difference's whole interval inside
# +-EQUAL_ACCURACY) count as equal in distribution.
EQUAL_ACCURACY = 0.01


def results_file(algorithm: str) -> str:
    """The summary table's name (one row per contender and condition)."""
    return f"generalisation_{algorithm}.csv"


def seeds_file(algorithm: str) -> str:
    """The per-seed table's name."""
    return f"generalisation_seeds_{algorithm}.csv"


GRAPHS = 32
"""Test graphs per size condition, at every size.

Once fewer from N = 128 on (4 at N = 1 024, so that the node pairs per size
stayed within a factor of 4): the one condition where plain training falls
short, N = 1 024, then had too few graphs for any paired interval to
decide.  The cost grows as N^2 per graph; :func:`measures` keeps memory
flat by measuring in parts."""


def graphs_at(num_nodes: int) -> int:
    """How many test graphs of ``num_nodes`` nodes (:data:`GRAPHS` at every size)."""
    del num_nodes
    return GRAPHS


@dataclasses.dataclass(frozen=True)
class Condition:
    """One out-of-distribution setting: its kind, its value, its graphs."""

    kind: str
    value: str
    batch: Batch


def _test_seed() -> int:
    return int(clrs.CLRS30["test"]["seed"])


def _size_batch(algorithm: str, num_nodes: int) -> Batch:
    """The first :func:`graphs_at` graphs of CLRS's test recipe at ``num_nodes``."""
    return sample_batch(algorithm, num_nodes, graphs_at(num_nodes), _test_seed())


def _scaled_batch(algorithm: str, scale: float) -> Batch:
    """The N = 16 test graphs, every weight times ``scale``, traces recomputed."""
    base = _size_batch(algorithm, FAMILY_NODES)
    weights = np.asarray(base.inputs["A"], np.float64)
    sources = base.sources
    return concat_batches(
        [
            batch_from_graph(algorithm, w * scale, int(s))
            for w, s in zip(weights, sources, strict=True)
        ]
    )


def conditions(
    algorithm: str,
    sizes: Sequence[int] = SIZES,
    families: Sequence[str] = SWEEP_FAMILIES,
    scales: Sequence[float] = WEIGHT_SCALES,
    *,
    family_graphs: int,
) -> list[Condition]:
    """Every condition's graphs (``scales`` only for Bellman-Ford)."""
    out = [Condition("size", str(n), _size_batch(algorithm, n)) for n in sizes]
    out += [
        Condition("family", f, family_batch(algorithm, f, FAMILY_NODES, family_graphs))
        for f in families
    ]
    if algorithm == "bellman_ford":
        out += [
            Condition("weight_scale", f"{s:g}", _scaled_batch(algorithm, s))
            for s in scales
        ]
    return out


@dataclasses.dataclass(frozen=True)
class Contender:
    """One row group of the table: a name, the recipe behind it, its models."""

    name: str
    recipe: str
    models: Models
    compiled: CompiledModel
    refit: bool = False


def chosen_recipes(results: str | os.PathLike, algorithm: str) -> tuple[str, str]:
    """``(supervised, plain)``, by :func:`.recipes.closest_pair`.

    Raises:
      FileNotFoundError: the recipe study has not run for this profile.
    """
    path = Path(results) / recipes.recipes_file(algorithm)
    if not path.exists():
        raise FileNotFoundError(
            f"no {path.name} in {path.parent}: notebook 07's recipe study "
            f"for {algorithm} runs first (Profile.studies.recipe_algorithms)"
        )
    return recipes.closest_pair(files.read_table(path))


def contenders(
    profile: Profile,
    algorithm: str,
    dirs: OutputDirs,
    seeds: int,
    pair: tuple[str, str],
    progress: bool,
) -> list[Contender]:
    """``pair``'s recipes (supervised, plain; trained or read back) and compiled."""
    supervised, plain = pair
    compiled = compile_algorithm(algorithm, hidden_size=None)
    out = []
    for name, recipe_name in (("plain", plain), ("supervised", supervised)):
        recipe = recipes.named([recipe_name])[0]
        config = recipes.recipe_config(profile, algorithm, recipe, seeds)
        result = train(config, run_dir(config, dirs.runs), progress=progress)
        out.append(Contender(name, recipe.name, Models.from_run(result), compiled))
    own = Models.from_models([compiled], seeds=[-1], source="compiled")
    out.append(Contender("compiled", "compiled, range fitted", own, compiled, True))
    if compiled.program.measures_distances:
        out.append(
            Contender("compiled_fixed", "compiled, default range", own, compiled)
        )
    return out


def seed_rows(
    contender: Contender,
    measured: Sequence[Condition],
    loss_batch: Batch,
) -> list[dict[str, Any]]:
    """Per seed: a row per condition and measure, and one for sharpness."""
    rows = []
    for condition in measured:
        values = measure_against_compiled(
            contender.models,
            condition.batch,
            contender.compiled,
            refit=contender.refit,
        )
        for k, seed in enumerate(contender.models.seeds):
            for measure in AGAINST_COMPILED:
                rows.append(
                    {
                        "contender": contender.name,
                        "recipe": contender.recipe,
                        "seed": int(seed),
                        "measure": measure,
                        "condition": condition.kind,
                        "value": condition.value,
                        "num_nodes": condition.batch.num_nodes,
                        "graphs": condition.batch.batch_size,
                        "result": float(values[measure][k]),
                    }
                )
    models = contender.models
    for k, seed in enumerate(models.seeds):
        model = models.model(k)
        rows.append(
            {
                "contender": contender.name,
                "recipe": contender.recipe,
                "seed": int(seed),
                "measure": "sharpness",
                "condition": "loss",
                "value": "radius 0.1",
                "num_nodes": loss_batch.num_nodes,
                "graphs": loss_batch.batch_size,
                "result": model_sharpness(model, loss_batch, k, SHARPNESS_RADIUS),
            }
        )
    return rows


def _key(row: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(row["measure"]), str(row["condition"]), str(row["value"]))


def _interval(
    values: np.ndarray, level: float, measure: str, difference: bool
) -> tuple[float, float]:
    """The t-interval of the mean, in ``measure``'s range (:func:`measure_range`)."""
    return t_interval(Summary.of(values), level, measure_range(measure, difference))


def ood_keys(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """The out-of-distribution accuracy conditions: every one but N = 16."""
    keys = dict.fromkeys(_key(r) for r in rows if r["measure"] == "accuracy")
    return [k for k in keys if k[1:] != IN_DISTRIBUTION]


def at_ceiling(rows: Sequence[Mapping[str, Any]], key: tuple[str, str, str]) -> bool:
    """Whether plain already scores within :data:`EQUAL_ACCURACY` of perfect there.

    On every seed: no gain that counts (one larger than the equal-accuracy
    band) is left for supervision to show, so the condition cannot answer
    "does faithfulness buy generalisation" either way.
    """
    plain = [
        float(r["result"]) for r in rows if r["contender"] == "plain" and _key(r) == key
    ]
    return bool(plain) and min(plain) >= 1 - EQUAL_ACCURACY


def tested_keys(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """The out-of-distribution conditions the verdict tests: plain below ceiling."""
    return [k for k in ood_keys(rows) if not at_ceiling(rows, k)]


def adjusted_level(rows: Sequence[Mapping[str, Any]]) -> float:
    """Bonferroni over the tested conditions: 1 - 0.05 / m (m at least 1)."""
    return bonferroni_level(max(1, len(tested_keys(rows))), CONFIDENCE_LEVEL)


def summary_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per contender and condition: mean, 95 % t-interval, worst seed.

    Then per condition the paired difference ``supervised - plain`` over the
    seeds both have, with its t-interval (``level`` column): at
    :func:`adjusted_level` for the out-of-distribution accuracies the
    verdict tests together, at the plain level for the rest.
    """
    table = []
    adjusted = adjusted_level(rows)
    keys = list(dict.fromkeys(_key(r) for r in rows))
    for contender in dict.fromkeys(str(r["contender"]) for r in rows):
        for key in keys:
            mine = [r for r in rows if r["contender"] == contender and _key(r) == key]
            if not mine:
                continue
            values = np.asarray([float(r["result"]) for r in mine])
            low, high = _interval(values, CONFIDENCE_LEVEL, key[0], False)
            higher_is_worse = key[0] in ("sharpness", "internal")
            worst = values.max() if higher_is_worse else values.min()
            table.append(
                {
                    "contender": contender,
                    "recipe": mine[0]["recipe"],
                    "measure": key[0],
                    "condition": key[1],
                    "value": key[2],
                    "seeds": len(values),
                    "mean": float(values.mean()),
                    "low": low,
                    "high": high,
                    "worst": float(worst),
                    "level": CONFIDENCE_LEVEL,
                }
            )
    table += _difference_rows(rows, keys, adjusted)
    return table


def _difference_rows(
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[tuple[str, str, str]],
    adjusted: float,
) -> list[dict[str, Any]]:
    """Per condition, ``supervised - plain`` paired; tested or at ceiling; power.

    ``tested``: the verdict tests this condition (an out-of-distribution
    accuracy with plain below ceiling); ``plain_at_ceiling``: plain is within
    :data:`EQUAL_ACCURACY` of perfect on every seed; ``seeds_needed``: for
    a tested condition, the seeds at which its interval would exclude 0
    with 80 % power were the measured effect the true one.
    """
    outside, tested = set(ood_keys(rows)), set(tested_keys(rows))
    table = []
    for key in keys:
        diff = paired_difference(rows, key)
        if not diff.size:
            continue
        # Adjusted where the verdict tests many conditions; the verdict's
        # own level elsewhere (in distribution, sharpness, attention).
        level = adjusted if key in tested else CONFIDENCE_LEVEL
        low, high = _interval(diff, level, key[0], True)
        needed = paired_side(diff, level, EQUAL_ACCURACY)[1] if key in tested else None
        table.append(
            {
                "contender": "supervised - plain",
                "recipe": "",
                "measure": key[0],
                "condition": key[1],
                "value": key[2],
                "seeds": len(diff),
                "mean": float(diff.mean()),
                "low": low,
                "high": high,
                "worst": float(diff.min()),
                "level": level,
                "tested": key in tested,
                "plain_at_ceiling": key in outside and at_ceiling(rows, key),
                "seeds_needed": "" if needed is None else needed,
            }
        )
    return table


def paired_difference(
    rows: Sequence[Mapping[str, Any]], key: tuple[str, str, str]
) -> np.ndarray:
    """``supervised - plain`` per seed both were measured on, at ``key``."""

    def by_seed(name: str) -> dict[int, float]:
        return {
            int(r["seed"]): float(r["result"])
            for r in rows
            if r["contender"] == name and _key(r) == key
        }

    return paired_by_seed(by_seed("supervised"), by_seed("plain"))


def _sides(
    rows: Sequence[Mapping[str, Any]],
    tested: Sequence[tuple[str, str, str]],
    level: float,
) -> dict[str, list[str]]:
    """Each tested condition, said with its interval, under the side it is on."""
    found: dict[str, list[str]] = {
        side: [] for side in ("better", "worse", "the same", "undecided")
    }
    for key in tested:
        diff = paired_difference(rows, key)
        if diff.size < 2:
            continue
        low, high = _interval(diff, level, key[0], True)
        where = f"{key[1]} {key[2]} ({diff.mean():+.3f} [{low:+.3f}, {high:+.3f}]"
        side, needed = paired_side(diff, level, EQUAL_ACCURACY)
        if side == "undecided":
            where += f"; {needed or 'no number of'} seeds would decide it"
        found[side].append(where + ")")
    return found


def verdict(rows: Sequence[Mapping[str, Any]]) -> str:
    """Does the supervised model generalise further than the plain one?

    Asked only at equal accuracy in distribution: the N = 16 paired
    difference's 95 % interval must lie inside +-:data:`EQUAL_ACCURACY`.
    Then every out-of-distribution condition where plain is below its
    ceiling (:func:`tested_keys`; at ceiling no gain that counts is left to
    show, and such a condition is listed, not tested) has its paired
    interval, at the Bonferroni-adjusted level over those, say better (all
    above 0), worse (all below), the same (inside +-:data:`EQUAL_ACCURACY`)
    or undecided, the last with the seeds a decision would need
    (:func:`~nar_gap.analysis.verdicts.paired_side`).  Yes: better somewhere
    and worse nowhere; mixed: both; no: better nowhere and nothing
    undecided; inconclusive: better nowhere and something undecided; not
    testable: every condition at ceiling.
    """
    in_key = ("accuracy", *IN_DISTRIBUTION)
    inside = paired_difference(rows, in_key)
    if inside.size < 2:
        return "Not testable: fewer than two seeds with both recipes."
    low, high = _interval(inside, CONFIDENCE_LEVEL, in_key[0], True)
    said_in = (
        f"in distribution (N = 16) supervised - plain = {inside.mean():+.4f} "
        f"[{low:+.4f}, {high:+.4f}] (paired t, 95 %, n = {inside.size})"
    )
    if not (-EQUAL_ACCURACY <= low and high <= EQUAL_ACCURACY):
        return (
            f"Not at equal accuracy: {said_in} is not inside +-{EQUAL_ACCURACY:g}, "
            "so out-of-distribution differences cannot be credited to the mechanism."
        )
    tested = tested_keys(rows)
    ceiling = len(ood_keys(rows)) - len(tested)
    at_ceiling_said = (
        f"{ceiling} of {len(ood_keys(rows))} out-of-distribution conditions "
        f"have plain within {EQUAL_ACCURACY:g} of perfect on every seed and "
        "are not tested"
    )
    if not tested:
        return f"Not testable: {at_ceiling_said}, so none is left. {said_in}."
    level = adjusted_level(rows)
    found = _sides(rows, tested, level)
    better, worse = found["better"], found["worse"]
    if better:
        answer = "mixed" if worse else "yes"
    else:
        answer = "inconclusive" if found["undecided"] else "no"
    parts = [
        f"{answer.capitalize()}: at equal accuracy {said_in}, the supervised model "
        f"is more accurate in {len(better)} of {len(tested)} tested "
        f"out-of-distribution conditions and less accurate in {len(worse)} "
        f"(paired t-intervals at {100 * level:.2f} %, Bonferroni over "
        f"{len(tested)}); {at_ceiling_said}."
    ]
    for side, said in found.items():
        if said:
            parts.append(f"{side.capitalize()}: {'; '.join(said)}.")
    return " ".join(parts)


def run_generalisation(
    profile: Profile,
    algorithm: str,
    dirs: OutputDirs,
    seeds: int,
    progress: bool = True,
    measured: Sequence[Condition] | None = None,
    pair: tuple[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Measure every contender in every condition; write both tables.

    Files: ``results/generalisation_<a>.csv`` (:func:`summary_rows`, the
    verdict in its sidecar) and ``results/generalisation_seeds_<a>.csv``
    (one row per contender, seed, measure and condition), written after
    every contender.
    """
    pair = pair or chosen_recipes(dirs.results, algorithm)
    if measured is None:
        measured = conditions(algorithm, family_graphs=profile.studies.family_graphs)
    chosen = list(measured)
    loss_batch = sample_batch(
        algorithm, profile.val_num_nodes, profile.batch_size, seed=2
    )
    rows: list[dict[str, Any]] = []
    for contender in tqdm(
        contenders(profile, algorithm, dirs, seeds, pair, progress),
        desc=f"generalisation {algorithm}",
        disable=not progress,
    ):
        rows += seed_rows(contender, chosen, loss_batch)
        meta = metadata(
            profile,
            supervised=pair[0],
            plain=pair[1],
            verdict=verdict(rows),
        )
        files.write_table(dirs.results / seeds_file(algorithm), rows, meta)
        files.write_table(
            dirs.results / results_file(algorithm), summary_rows(rows), meta
        )
    write_figure(dirs.results, dirs.figures, algorithm)
    return rows


def figure_stem(algorithm: str) -> str:
    """The figure's file name, without its extension."""
    return f"fig_generalisation_{algorithm}"


def write_figure(
    results: str | os.PathLike, figures: str | os.PathLike, algorithm: str
) -> list[Path]:
    """:func:`~nar_gap.paper.plots.plot_generalisation` of the stored table."""
    table = files.read_table(Path(results) / results_file(algorithm))
    fig = plots.plot_generalisation(table, algorithm)
    written = files.save_figure(fig, Path(figures) / figure_stem(algorithm))
    plots.close(fig)
    return written


def study_families(profile: Profile) -> tuple[str, ...]:
    """The graph families the study measures at ``profile``."""
    return profile.studies.ood_families or SWEEP_FAMILIES


def studies_paths(profile: Profile, algorithm: str) -> bool:
    """Whether the study runs for ``algorithm`` on path graphs (07's path sections)."""
    studied = algorithm in profile.studies.recipe_algorithms
    return studied and "path" in study_families(profile)


def run_profile_generalisation(
    profile: Profile, algorithm: str, dirs: OutputDirs, progress: bool = True
) -> list[dict[str, Any]]:
    """Notebook 07's last study at ``profile``'s sizes; the per-seed rows.

    The seeds are the recipe study's (``Profile.studies.recipe_seeds``), and
    so are the two recipes it compares (:func:`chosen_recipes`), read back
    from their runs.  Reading (``dirs.reading``): the summary rows as written.
    """
    if dirs.reading:
        return dirs.read_back(results_file(algorithm), typed=True)
    studies = profile.studies
    measured = conditions(
        algorithm,
        studies.ood_sizes or SIZES,
        study_families(profile),
        family_graphs=studies.family_graphs,
    )
    return run_generalisation(
        profile, algorithm, dirs, studies.recipe_seeds, progress, measured
    )
