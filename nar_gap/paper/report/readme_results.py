"""The rendered results: docs/results.md's section and the README's headline.

``nar-gap render [RESULTS_DIR] [--write PATH ...]`` (:mod:`nar_gap.cli`)
prints the results section, or writes into each ``PATH`` every rendered part
whose markers it holds: between ``<!-- results:start -->`` and ``<!--
results:end -->`` the tables of the committed profile (baselines,
faithfulness, ablations, stability, landscapes, and the paper against ours
(:mod:`.paper`) with the sentence its verdicts give), and between ``<!--
headline:start -->`` and ``<!-- headline:end -->`` how many of each
notebook's paper claims agree, disagree or stay open, counted from the
``paper_vs_ours_NN.csv`` files.  Nothing in either part is typed by hand;
tests check that ``docs/results.md`` and ``README.md`` hold exactly what this
renders, and ``./run_all.sh`` renders both again after a run of the committed
profile.  Another profile's committed folder (``results/gpu/``) renders the
parts of the notebooks that profile runs into its own page,
``docs/results-<profile>.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.analysis import verdicts
from nar_gap.analysis.pointers import AS_FORCED, EDIT_AGE, edit_reading
from nar_gap.analysis.verdicts import SIGNIFICANCE
from nar_gap.paper.experiments import (
    ablations,
    baselines,
    catalogue,
    closing_gap,
    compilation,
    confirmation,
    faithfulness_study,
    generalisation,
    landscape_study,
    path_pointers,
    profiles,
    recipes,
    size_sweep,
    stability,
    tie_test,
    transnar,
)
from nar_gap.paper.report import paper
from nar_gap.paper.transnar.summary import question_sentence
from nar_gap.system import files

START, END = "<!-- results:start -->", "<!-- results:end -->"
HEADLINE_START, HEADLINE_END = "<!-- headline:start -->", "<!-- headline:end -->"
COMPARED_NOTEBOOKS = catalogue.numbers(catalogue.PAPER)
ABLATION_FILES = (
    ("Table 11", ablations.EDGE_INFO_TABLE),
    ("Table 12", ablations.PRE_ATT_BIAS_TABLE),
    ("Table 13", ablations.LENGTH_LIMITED_TABLE),
    ("Table 14", ablations.NO_HINTS_TABLE),
    ("Table 17", ablations.SEQUENTIAL_TABLE),
    ("Table 15", ablations.MINIMAL_TABLE),
    ("D.1", ablations.REGULARISATION_TABLE),
)
ALGORITHMS = ("bfs", "bellman_ford")
# The faithfulness study also measures DFS against its compiled program, in
# results written since DFS has one (older results dirs lack its files).
OPTIONAL_FAITHFULNESS = ("dfs",)


def _faithfulness_algorithms(results: Path) -> tuple[str, ...]:
    extra = tuple(
        a
        for a in OPTIONAL_FAITHFULNESS
        if (results / faithfulness_study.summary_file(a)).exists()
    )
    return ALGORITHMS + extra


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub markdown table (``|`` inside a cell escaped)."""

    def cell(value: object) -> str:
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _fmt(text: str, digits: int = 3) -> str:
    """A number from a CSV cell, rounded; empty and non-numbers as they are."""
    if text.lstrip("-").isdigit():  # counts stay integers
        return text
    try:
        value = float(text)
    except (TypeError, ValueError):
        return text or "–"
    if math.isnan(value):
        return "–"
    if value != 0 and (abs(value) >= 1e4 or abs(value) < 1e-3):
        return f"{value:.2g}"
    return f"{value:.{digits}f}"


def _section(title: str, body: str) -> str:
    return f"**{title}**\n\n{body}\n"


def _compiled(results: Path) -> str:
    """Each compiled network once: width, parameters by part, exactness.

    One row per algorithm, variant and width of ``compiled_exactness.csv``
    (the paper variant at its smallest bias size), its checks summed over
    graph sizes; then ``compiled_minimal.csv`` where notebook 01 wrote it.
    """
    rows = files.read_table(results / compilation.EXACTNESS_FILE)
    if not rows or "variant" not in rows[0]:
        raise FileNotFoundError(0, "no variant column", compilation.EXACTNESS_FILE)
    networks: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for row in rows:
        key = (row["algorithm"], row["variant"], row["hidden_size"])
        networks.setdefault(key, []).append(row)
    body = []
    for (algorithm, variant, hidden), group in networks.items():
        first = min(group, key=lambda r: int(r["num_nodes"]))
        exact = sum(r["exact"] == "True" for r in group)
        sizes = sorted({int(r["num_nodes"]) for r in group})
        body.append(
            (
                algorithm,
                variant,
                hidden,
                first["parameters"],
                first["parameters_encoders"],
                first["parameters_processor"],
                f"{first['parameters_bias']} (N = {first['num_nodes']})"
                if variant == "paper"
                else first["parameters_bias"],
                first["parameters_decoders"],
                first["nonzero_parameters"],
                f"{exact} of {len(group)} (N = {', '.join(map(str, sizes))})",
            )
        )
    table = markdown_table(
        (
            "algorithm",
            "variant",
            "hidden",
            "parameters",
            "encoders",
            "processor",
            "bias",
            "decoders",
            "non-zero",
            "exact checks",
        ),
        body,
    )
    path = results / compilation.MINIMAL_FILE
    if not path.exists():
        return table
    minimal = markdown_table(
        (
            "algorithm",
            "variant",
            "hidden: compiled → searched",
            "non-zero: compiled → searched",
            "dimensions removed",
            "held out",
            "held-out unit-weight graphs (exact ties)",
        ),
        [
            (
                r["algorithm"],
                r["variant"],
                f"{r['hidden_size']} → {r['minimal_hidden_size']}",
                f"{r['nonzero_parameters']} → {r['minimal_nonzero_parameters']}",
                r["removed_dimensions"] or "none",
                ("exact" if r["held_out_exact"] == "True" else "not exact")
                + f" (N = {r['held_out_nodes']})",
                _held_out_ties(r),
            )
            for r in files.read_table(path)
        ],
    )
    search = f"The minimality search (`{compilation.MINIMAL_FILE}`)"
    return f"{table}\n\n{search}:\n\n{minimal}"


def _held_out_ties(row: dict[str, str]) -> str:
    """``exact (16 graphs, N = 8 16)``; a file from before the tie graphs: "-"."""
    if "held_out_ties_exact" not in row:
        return "-"
    verdict = "exact" if row["held_out_ties_exact"] == "True" else "not exact"
    return (
        f"{verdict} ({row['held_out_tie_graphs']} graphs, N = {row['tie_graph_nodes']})"
    )


def _baselines(results: Path) -> str:
    rows = files.read_table(results / baselines.BASELINES_FILE)
    return markdown_table(
        ("algorithm", "hidden", "steps", "seeds", "test N", "mean ± std (max)"),
        [
            (
                r["algorithm"],
                r["hidden_size"],
                r["steps"],
                r["seeds"],
                r["test_num_nodes"],
                r["performance"],
            )
            for r in rows
        ],
    )


FAITHFULNESS_COLUMNS = (
    ("mean_accuracy", "accuracy"),
    ("mean_internal", "internal (Eq. 24)"),
    ("closest_internal", "closest seed"),
    ("mean_internal_argmax", "internal, argmax"),
    ("mean_argmax_agreement", "argmax agreement"),
    ("mean_internal_forced", "internal, teacher-forced"),
    ("mean_external", "external (Eq. 25)"),
    ("mean_external_pre_output", "external, before the output"),
    ("mean_inter_solution", "between seeds"),
    ("num_clusters", "clusters (widest gap)"),
)


def _faithfulness(results: Path) -> str:
    names = list(_faithfulness_algorithms(results))
    names += [  # the like-for-like arms (notebook 03), after their algorithm
        f"{a}_edge_info"
        for a in names
        if (results / faithfulness_study.summary_file(f"{a}_edge_info")).exists()
    ]
    summaries = [
        files.read_table(results / faithfulness_study.summary_file(a))[0] for a in names
    ]
    columns = [
        (k, label)
        for k, label in FAITHFULNESS_COLUMNS
        if all(k in s for s in summaries)
    ]
    return markdown_table(
        ("algorithm", "seeds", "hidden", *(label for _, label in columns)),
        [
            (
                s["algorithm"]
                + (
                    " (edge information)"
                    if s.get("network") == "edge information"
                    else ""
                ),
                s["num_seeds"],
                s["hidden_size"],
                *(_fmt(s[k]) for k, _ in columns),
            )
            for s in summaries
        ],
    )


TABLE1_MEASURES = ("internal", "external", "external_pre_output")
TABLE1_SELECTIONS = ("first_best", "first_best_partial", "final")


def _table1(results: Path) -> str | None:
    """Table 1's Pearson r with its interval, under each selection rule."""
    rows = []
    for algorithm in _faithfulness_algorithms(results):
        path = results / faithfulness_study.correlations_file(algorithm)
        if not path.exists():
            return None
        table = files.read_table(path)
        found = {(r["selection"], r["measure"]): r for r in table}
        for measure in TABLE1_MEASURES:
            cells = []
            for selection in TABLE1_SELECTIONS:
                r = found.get((selection, measure))
                cells.append(
                    "-"
                    if r is None
                    else f"{_fmt(r['pearson_r'])} [{_fmt(r['pearson_ci_low'])}, "
                    f"{_fmt(r['pearson_ci_high'])}]"
                )
            n = next((r["n"] for (_, m), r in found.items() if m == measure), "")
            rows.append((algorithm, measure, n, *cells))
    return markdown_table(
        (
            "algorithm",
            "measure",
            "n",
            "r, CLRS's selection",
            "r, partial on the selected step",
            "r, final-step parameters",
        ),
        rows,
    )


def _reference_points(results: Path) -> str | None:
    algorithms = _faithfulness_algorithms(results)
    paths = [results / faithfulness_study.reference_points_file(a) for a in algorithms]
    if not all(p.exists() for p in paths):
        return None  # no notebook 03 in these results (a chain's, a partial run's)
    rows = []
    for algorithm, path in zip(algorithms, paths, strict=True):
        for r in files.read_table(path):
            rows.append(
                (
                    algorithm,
                    r["point"],
                    _fmt(r["internal"]),
                    _fmt(r["internal_argmax"]),
                    _fmt(r["argmax_agreement"]),
                )
            )
        trained_on = _compiled_after_training(results, algorithm)
        if trained_on is not None:
            rows.append(trained_on)
    return markdown_table(
        ("algorithm", "reference point", "internal", "internal, argmax", "agreement"),
        rows,
    )


def _compiled_after_training(results: Path, algorithm: str) -> tuple | None:
    """The last reference point: compiled, trained on (notebook 05's rows).

    The stability study measures on the same graphs with the same code
    (``faithfulness_batch``, ``measure_models``); it records Eq. 24 only.
    """
    path = results / stability.stability_file(algorithm)
    if not path.exists():
        return None
    rows = [r for r in files.read_table(path) if r["start"] == "compiled"]
    if not rows:
        return None
    last = max(int(r["step"]) for r in rows)
    internal = [float(r["internal"]) for r in rows if int(r["step"]) == last]
    return (
        algorithm,
        f"compiled, after {last} further Adam steps (notebook 05, "
        f"{len(internal)} data orders)",
        _fmt(str(float(np.mean(internal)))),
        "–",
        "–",
    )


def _ablations(results: Path) -> str:
    rows = []
    for table, name in ABLATION_FILES:
        for r in files.read_table(results / ablations.table_file(name)):
            rows.append(
                (
                    table,
                    r["variant"],
                    r["hidden_size"],
                    r["steps"],
                    r["seeds"],
                    r["performance"],
                    r["test_num_nodes"],
                )
            )
    return markdown_table(
        ("table", "variant", "hidden", "steps", "seeds", "test score", "test N"),
        rows,
    )


def _stability(results: Path) -> str:
    rows = []
    for algorithm in ALGORITHMS:
        for r in files.read_table(results / stability.table16_file(algorithm)):
            rows.append(
                (
                    algorithm,
                    r["start"],
                    r["step"],
                    r["performance"],
                    _fmt(r["internal_mean"]),
                    _fmt(r["param_drift_mean"]),
                )
            )
    return markdown_table(
        ("algorithm", "start", "step", "accuracy", "internal", "parameter drift"),
        rows,
    )


def _landscapes(results: Path) -> str:
    rows = []
    for algorithm in ALGORITHMS:
        for r in files.read_table(results / landscape_study.landscape_file(algorithm)):
            rows.append(
                (
                    algorithm,
                    r["centre"],
                    r["hidden_size"],
                    _fmt(r["centre_loss"]),
                    _fmt(r["sharpness_r0.1"]),
                    _fmt(r["sharpness_r0.5"]),
                    _fmt(r["max_grid_loss"]),
                )
            )
    return markdown_table(
        (
            "algorithm",
            "centre",
            "hidden",
            "loss",
            "rise at r = 0.1",
            "rise at r = 0.5",
            "largest on grid",
        ),
        rows,
    )


def _median_range(values: np.ndarray) -> str:
    """``median [min, max]`` of the values that are numbers, and how many are NaN."""
    known = values[~np.isnan(values)]
    text = (
        f"{np.median(known):.3g} [{known.min():.3g}, {known.max():.3g}]"
        if known.size
        else "–"
    )
    missing = values.size - known.size
    return text + (f"; NaN on {missing} of {values.size}" if missing else "")


def _landscape_planes(results: Path) -> str | None:
    """Per network of the sharpness test, its rises over the planes.

    The median and range over ``landscape_planes_<a>.csv``'s planes; None
    where no planes file was written (results of another profile).
    """
    rows = []
    for algorithm in ALGORITHMS:
        path = results / landscape_study.planes_file(algorithm)
        if not path.exists():
            continue
        networks = landscape_study.planes_by_network(files.read_table(path))
        for (centre, seed), planes in networks.items():
            first = planes[0]
            rises = [
                np.array(
                    [files.float_cell(p[f"sharpness_r{radius:g}"]) for p in planes]
                )
                for radius in landscape_study.SHARPNESS_RADII
            ]
            rows.append(
                (
                    algorithm,
                    centre,
                    first["exact"] or "–",
                    seed or "–",
                    _fmt(first["test_score"]) or "–",
                    first["solves_task"] or "–",
                    str(len(planes)),
                    *(_median_range(x) for x in rises),
                )
            )
    if not rows:
        return None
    return markdown_table(
        (
            "algorithm",
            "network",
            "exact",
            "seed",
            "test score",
            "solves the task",
            "planes",
            "rise at r = 0.1: median [range]",
            "rise at r = 0.5: median [range]",
        ),
        rows,
    )


CLOSING_GAP_ALGORITHMS = ("bfs", "bellman_ford")


def _closing_gap_table(path: Path) -> str:
    rows = files.read_table(path)
    sizes = [
        k.removeprefix("accuracy_n") for k in rows[0] if k.startswith("accuracy_n")
    ]
    table = markdown_table(
        (
            "variant",
            "seeds",
            "steps",
            "accuracy",
            "internal",
            "argmax agreement",
            "external",
            *(f"accuracy at N = {n}" for n in sizes),
            "rise at r = 0.1",
        ),
        [
            (
                r["variant"],
                r["seeds"],
                r["steps"],
                _fmt(r["accuracy"]),
                _fmt(r["internal"]),
                _fmt(r["argmax_agreement"]),
                _fmt(r["external"]),
                *(_fmt(r[f"accuracy_n{n}"]) for n in sizes),
                _fmt(r["sharpness"]),
            )
            for r in rows
        ],
    )
    answer = files.read_json(files.sidecar_path(path)).get("verdict", "")
    return f"{table}\n\n{answer}"


def _over_time(path: Path, measure: str, label: str, fmt: str) -> str:
    """One measure per variant along the trace, a column per position."""
    rows = [r for r in files.read_table(path) if r["measure"] == measure]
    positions = sorted({float(r["position"]) for r in rows})
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    cell = {(r["variant"], float(r["position"])): r["mean"] for r in rows}
    return markdown_table(
        (label, *(format(x, fmt) for x in positions)),
        [
            (v, *(_fmt(cell[(v, x)]) if (v, x) in cell else "–" for x in positions))
            for v in variants
        ],
    )


def _closing_gap(results: Path) -> str:
    parts = []
    for algorithm in CLOSING_GAP_ALGORITHMS:
        path = results / closing_gap.results_file(algorithm)
        if not path.is_file():  # Profile.closing_gap_algorithms left it out
            parts.append(f"*{algorithm}*: not trained at this profile.")
            continue
        table = _closing_gap_table(path)
        curves = results / closing_gap.over_time_file(algorithm)
        external = _over_time(
            curves, "external", "external, at this point of the trace", ".2f"
        )
        internal = _over_time(curves, "internal", "internal, at hint step", "g")
        parts.append(f"*{algorithm}*\n\n{table}\n\n{external}\n\n{internal}")
    return "\n\n".join(parts)


def _interval(r: dict[str, str], measure: str) -> str:
    """``measure``'s mean with its ``_low`` and ``_high`` columns."""
    low, high = r[f"{measure}_low"], r[f"{measure}_high"]
    return f"{_fmt(r[measure])} [{_fmt(low)}, {_fmt(high)}]"


def _recipes(results: Path, algorithm: str = "bfs") -> str:
    """Every recipe tried on ``algorithm``, its cost, its measures with intervals."""
    path = results / recipes.recipes_file(algorithm)
    rows = files.read_table(path)

    table = markdown_table(
        (
            "recipe",
            "edge information",
            "attention, state weight",
            "annealed by",
            "teacher forcing, curriculum",
            "steps",
            "seed-steps",
            "accuracy [95 % CI]",
            "internal [95 % CI]",
            "argmax agreement [95 % CI]",
            "worst seed's internal",
            "seeds at the bar",
            "held out: seeds at the attention bar",
            "validation at its plateau (slope rule)",
        ),
        [
            (
                r["recipe"],
                "yes" if r["edge_info"] == "True" else "–",
                f"{float(r['attention_weight']):g}, {float(r['state_weight']):g}",
                "–"
                if float(r["anneal"]) == 0
                else f"{float(r['anneal']):g} of the steps",
                f"{float(r['teacher_forcing']):g}, {float(r['curriculum']):g}",
                r["steps"],
                r["seed_steps"],
                _interval(r, "accuracy"),
                _interval(r, "internal"),
                _interval(r, "argmax_agreement"),
                _fmt(r["internal_worst"]),
                f"{r['seeds_meeting_bar']} of {r['seeds']}",
                f"{r['seeds_meeting_held_out_bar']} of {r['seeds']}"
                if r.get("seeds_meeting_held_out_bar")
                else "–",
                {"True": "yes", "False": "no"}.get(r.get("at_plateau", ""), "–"),
            )
            for r in rows
        ],
    )
    sidecar = files.read_json(files.sidecar_path(path))
    outlasting = " ".join(annealed_against_constant(rows))
    answer = f"{sidecar.get('verdict', '')} {outlasting}".rstrip()
    controls = _held_out_controls(rows, sidecar)
    return "\n\n".join(part for part in (table, answer, controls) if part)


def annealed_against_constant(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Does the mechanism outlast its supervision?  One sentence per pair.

    Pairs every annealed recipe with the recipe that differs from it in
    ``anneal`` alone (same weights, steps and the rest), read from the
    table's columns.
    """
    knobs = [f.name for f in dataclasses.fields(recipes.Recipe) if f.name != "name"]
    said = []
    for annealed in (r for r in rows if float(r["anneal"]) > 0):
        twins = [
            r
            for r in rows
            if float(r["anneal"]) == 0
            and all(str(r[k]) == str(annealed[k]) for k in knobs if k != "anneal")
        ]
        for twin in twins:
            said.append(
                f"{annealed['recipe']} (supervision annealed to zero by "
                f"{float(annealed['anneal']):g} of its steps) ends at internal "
                f"{float(annealed['internal']):.3f} and agreement "
                f"{float(annealed['argmax_agreement']):.3f}, against "
                f"{float(twin['internal']):.3f} and "
                f"{float(twin['argmax_agreement']):.3f} for {twin['recipe']}, "
                "the same recipe with the weight held to the end."
            )
    return said


def _self_rows(results: Path, algorithm: str = "bfs") -> str:
    """Reached receivers' leak by self-loop: by law, then under squeezed positions."""
    where = files.read_table(results / recipes.self_rows_file(algorithm))
    path = results / recipes.self_rows_positions_file(algorithm)
    laws = markdown_table(
        (
            "graphs",
            "law",
            "self-loop",
            "cells",
            "share of the distance",
            "leak [95 % CI]",
        ),
        [
            (
                r["family"],
                "dm-clrs's" if r["clrs_law"] == "True" else "ours",
                "yes" if r["self_loop"] == "True" else "no",
                r["cells"],
                _fmt(r["share"]),
                _interval(r, "leak"),
            )
            for r in where
            if r["compiled_attends"] == "itself" and r["flagged"] == "True"
        ],
    )
    cells: dict[tuple[str, ...], dict[str, str]] = {}
    for r in files.read_table(path):  # without a self-loop, or compiled: "all" only
        label = r["flagged_neighbours"]
        if label == "all" or (r["self_loop"] == "True" and r["model"] != "compiled"):
            graphs = f"{r['family']}, N = {r['nodes']}"
            key = (r["model"], graphs, r["self_loop"], label)
            moved = f"+{r['offset']}" if float(r["offset"]) else ""
            cells.setdefault(key, {})[f"x{r['squeeze']}{moved}"] = _interval(r, "leak")
    squeezes = list(dict.fromkeys(s for row in cells.values() for s in row))
    squeezed = markdown_table(
        (
            "model",
            "graphs (dm-clrs's law)",
            "self-loop",
            "reached neighbours",
            *(f"leak [95 % CI], positions {s}" for s in squeezes),
        ),
        [
            (model, graphs, "yes" if loop == "True" else "no", label)
            + tuple(row.get(s, "–") for s in squeezes)
            for (model, graphs, loop, label), row in cells.items()
        ],
    )
    return f"{laws}\n\n{squeezed}\n\n{recipes.stored_verdict(path)}"


def _held_out_controls(rows: Sequence[dict[str, str]], sidecar: dict) -> str:
    """Each recipe's internal distance on the bar's, held-out and control graphs.

    The controls change one thing each between the bar's graphs and the
    held-out ones (``recipes.CONTROLS``); empty for a table written before them.
    """
    if not rows or f"{recipes.CONTROLS[0].name}_internal" not in rows[0]:
        return ""
    sizes = sidecar.get("controls", {})
    bar_nodes = sidecar.get("test_num_nodes", "")

    def nodes(name: str) -> str:
        return str(sizes.get(name, {}).get("nodes", ""))

    size, density, structure, generator, law, dense = (c.name for c in recipes.CONTROLS)
    table = markdown_table(
        (
            "internal distance [95 % CI], free-running",
            f"the bar's graphs (dm-clrs, density 0.25, N = {bar_nodes})",
            f"{recipes.CONTROLS[0].says}, N = {nodes(size)}",
            f"{recipes.CONTROLS[1].says}, N = {nodes(density)}",
            f"held-out families, N = {recipes.HELD_OUT_NODES} (the held-out bar)",
            f"{recipes.CONTROLS[3].says} of density 0.25, N = {nodes(generator)}",
            f"{recipes.CONTROLS[3].says} by dm-clrs's law, N = {nodes(law)}",
            f"held-out families, N = {nodes(structure)}",
            f"{recipes.CONTROLS[5].says} by dm-clrs's law, density 0.25, "
            f"N = {nodes(dense)}",
        ),
        [
            (
                r["recipe"],
                *(
                    _interval(r, m)
                    for m in (
                        "internal",
                        f"{size}_internal",
                        f"{density}_internal",
                        "held_out_internal",
                        f"{generator}_internal",
                        f"{law}_internal",
                        f"{structure}_internal",
                        f"{dense}_internal",
                    )
                ),
            )
            for r in rows
        ],
    )
    return f"The held-out bar and its controls (`recipes.CONTROLS`):\n\n{table}"


_SUMMED = ("broken", "fixed", "wrong_unedited", "cases")
_SUMMED += ("hint_parent_unedited", "hint_parent", "hint_steps")


def _edit_sums(
    results: Path, algorithm: str
) -> dict[tuple[str, str, str], dict[str, int]]:
    """Section 6b's edit counts per (recipe, seed, edit), summed over parity."""
    edits: dict[tuple[str, str, str], dict[str, int]] = {}
    for r in files.read_table(results / path_pointers.edits_file(algorithm)):
        key = (r["recipe"], r["seed"], r["edit"])
        cell = edits.setdefault(key, dict.fromkeys(_SUMMED, 0))
        for name in _SUMMED:
            cell[name] += int(r[name])
    return edits


def _moved(c: dict[str, int]) -> str:
    """``broken/right · mended/wrong`` of one edit's summed counts."""
    right = c["cases"] - c["wrong_unedited"]
    return f"{c['broken']}/{right} · {c['fixed']}/{c['wrong_unedited']}"


def _named_parent(c: dict[str, int]) -> str:
    return f"{c['hint_parent_unedited']} → {c['hint_parent']} of {c['hint_steps']}"


def _reading(c: dict[str, int]) -> str:
    said, p = edit_reading(c["broken"], c["fixed"])
    return said if math.isnan(p) else f"{said} (p = {_fmt(str(p), 2)})"


def _path_pointer_columns(
    counts: Callable[[dict[str, str], str], dict[str, int]], as_forced: bool
) -> list[tuple[str, Callable[[dict[str, str]], str]]]:
    """:func:`path_pointers_table`'s columns: each header and its cell of a row.

    ``counts(row, edit)``: the row's summed edit counts; ``as_forced``:
    whether the rows hold the ``as_forced_<rollout>`` columns, shown then.
    """
    shares = (
        "old pi_h as forced: free · hard · both hardened",
        lambda r: " · ".join(_fmt(r[f"as_forced_{n}"]) for n in AS_FORCED),
    )
    return [
        ("model", lambda r: r["recipe"]),
        ("seed", lambda r: r["seed"] if r["seed"] != "-1" else "–"),
        (
            "output free (hard)",
            lambda r: f"{_fmt(r['output_free'])} ({_fmt(r['output_free_hard'])})",
        ),
        ("output forced", lambda r: _fmt(r["output_forced"])),
        (
            "fed pi_h on parent: median (< 0.5)",
            lambda r: (
                f"{_fmt(r['fed_parent_median'])} ({_fmt(r['fed_parent_below_half'])})"
            ),
        ),
        (
            "to a child, even / odd: free · forced",
            lambda r: (
                f"{r['to_child_even']} / {r['to_child_odd']} · "
                f"{r['forced_to_child_even']} / {r['forced_to_child_odd']}"
            ),
        ),
        *([shares] if as_forced else []),
        (
            "wrong outputs, parent points back",
            lambda r: (
                f"{r['wrong_parent_back']}/"
                f"{int(r['wrong_parent_back']) + int(r['wrong_parent_on'])}"
            ),
        ),
        ("both: broken · mended", lambda r: _moved(counts(r, "both"))),
        ("output under both", lambda r: _reading(counts(r, "both"))),
        ("pi_h names parent: true → both", lambda r: _named_parent(counts(r, "both"))),
        ("parent back: broken · mended", lambda r: _moved(counts(r, "parent_back"))),
        (
            "pi_h names parent: true → parent back",
            lambda r: _named_parent(counts(r, "parent_back")),
        ),
    ]


_AS_FORCED_SIDES = {
    "fewer": "decided: nearer with them hardened",
    "more": "decided: farther with them hardened",
}


def _as_forced_line(rows: Sequence[Mapping[str, str]]) -> str:
    """:func:`~nar_gap.paper.experiments.path_pointers.as_forced_tests`, said."""
    tests = path_pointers.as_forced_tests(rows)
    said = []
    for t in tests:
        side = _AS_FORCED_SIDES.get(t["side"], "undecided")
        needed = t["seeds_needed"]
        more = f"; {needed} seeds would decide" if needed else ""
        said.append(
            f"{t['recipe']}: nearer teacher forcing with them hardened on "
            f"{t['closer_seeds']} of {t['seeds']} seeds and farther on "
            f"{t['farther_seeds']}; {side} (p = {_fmt(str(t['p']))}, Holm "
            f"{_fmt(str(t['p_holm']))}{more})"
        )
    return (
        "Running free against only each node's neighbours' fed pointers "
        "hardened, paired by seed (an exact two-sided Wilcoxon signed-rank "
        f"test, Holm over the {len(tests)} trained models; "
        f"`path_pointers.as_forced_tests`): {'; '.join(said)}."
    )


def path_pointers_table(results: Path, algorithm: str = "bfs") -> str:
    """Notebook 07's section 6b: a Markdown row per model and seed; flips by distance.

    Rollouts, moves to a child both ways, outputs by pointer, what each
    edit broke and mended in the outputs with :func:`~nar_gap.analysis.
    pointers.edit_reading`'s test of ``both``, and what it did to the
    node's own ``pi_h``; then the moves to a child by distance; read from
    the section's four tables.
    """
    rows = files.read_table(results / path_pointers.rows_file(algorithm))
    edits = _edit_sums(results, algorithm)

    def counts(r: dict[str, str], edit: str) -> dict[str, int]:
        return edits.get((r["recipe"], r["seed"], edit), dict.fromkeys(_SUMMED, 0))

    as_forced = all(f"as_forced_{n}" in r for r in rows for n in AS_FORCED)
    columns = _path_pointer_columns(counts, as_forced)  # none shown, none said
    table = markdown_table(
        tuple(header for header, _ in columns),
        [tuple(cell(r) for _, cell in columns) for r in rows],
    )
    as_forced_legend = (
        "`old pi_h as forced`: the share of "
        f"those node-steps ({EDIT_AGE} or more steps after the reach) whose "
        "pointer is the one the model names teacher-forced, running free with "
        "soft feedback, with hard, and with only each node's parent's and "
        "children's fed pointers hardened (`pointers.same_as_forced`). "
        f"{_as_forced_line(rows)} "
        if as_forced
        else ""
    )
    exposure = _exposure(results, algorithm)
    return (
        f"{table}\n\n`fed pi_h on parent`: the mass old nodes' soft pointers, "
        f"fed back running free from {EDIT_AGE} steps after the reach on, put on "
        "the parent: the median, and the share below 0.5 "
        f"(`pointers.fed_parent_mass`). {as_forced_legend}"
        "`broken · mended`: answers right on "
        "the true trace and wrong "
        f"once the pointers around the node are edited, from {EDIT_AGE} steps "
        "after its reach on (teacher-forced), of those right; and wrong turned "
        "right, of those wrong. `output under both`: which neighbour the output "
        "names, by a two-sided exact McNemar test of the cases `both` moved "
        "(`nar_gap.analysis.pointers.edit_reading`). `pi_h names parent`: the "
        "node's own pointer predictions, at the steps that read an edited hint, "
        "naming its parent on the true trace and under the edit (notebook 07, "
        f"section 6b). {exposure}\n\n{_distances(results, algorithm)}\n\n"
        f"{_transfer(results, algorithm)}\n\n{_ties(results, algorithm)}"
    ).rstrip()


def _transfer(results: Path, algorithm: str) -> str:
    """Accuracy per family and size, each recipe's seeds side by side."""
    rows = files.read_table(results / path_pointers.transfer_file(algorithm))
    recipes: dict[str, None] = {}
    cells: dict[tuple[str, int], dict[str, list[str]]] = {}
    trained: dict[tuple[str, int], str] = {}
    for r in rows:
        cell = (r["family"], int(r["num_nodes"]))
        recipes[r["recipe"]] = None
        cells.setdefault(cell, {}).setdefault(r["recipe"], []).append(
            _fmt(r["accuracy"])
        )
        trained[cell] = "yes" if r["twin_trained"] == "True" else "–"
    table = markdown_table(
        ("family", "N", "twin trained on it", *recipes),
        [
            (family, n, trained[(family, n)])
            + tuple(" / ".join(cells[(family, n)].get(k, ["–"])) for k in recipes)
            for family, n in cells
        ],
    )
    sides = path_pointers.twin_sides(rows)

    def said(group: str) -> str:
        c = sides[group]
        return f"{c['higher']} higher, {c['lower']} lower, {c['neither']} neither"

    sizes = sorted({n for _, n in cells})
    return (
        f"{table}\n\nAccuracy (CLRS score of the output `pi`) of each seed, "
        f"in seed order, on {rows[0]['graphs']} graphs of each family at each "
        f"size; internal distance and argmax agreement against the compiled "
        f"network are in `{path_pointers.transfer_file(algorithm)}`. The twin "
        f"against the supervised recipe, on every seed (cells above "
        f"N = {sizes[0]}, `path_pointers.twin_sides`): on the families it "
        f"trained on {said('trained')}; on the others {said('held_out')}.\n\n"
        f"{_wrong_by_kind(rows, sizes[0])}\n\n"
        f"Each seed's wrong outputs on the graphs above N = {sizes[0]}, by where "
        "they point instead (`pointers.wrong_outputs`): `tied`, another "
        "neighbour one step nearer the source, a parent BFS could have chosen "
        "(dm-clrs's takes the lowest id); `child`, a neighbour one step "
        "farther; `other`, any other node; of the reached nodes."
    )


def _ties(results: Path, algorithm: str) -> str:
    """Tied parents lost on grids, by age, over the grid sizes; their margins."""
    rows = files.read_table(results / path_pointers.ties_file(algorithm))
    table = _by_rollout(rows, ("age", "age "), _hits("other_tied", "tied_nodes"))
    margins = _by_rollout(rows, ("age", "age "), _mean_margin)
    sizes = ", ".join(sorted({r["num_nodes"] for r in rows}, key=int))
    return (
        f"{table}\n\nOn grids of {sizes} nodes ({rows[0]['graphs']} each), the "
        "nodes with two or more parents one step nearer the source (BFS takes "
        "the lowest id), by their age at the end of the trace (steps since "
        "their reach): those whose output names another of them, of those "
        f"tied (`{path_pointers.ties_file(algorithm)}`, "
        "`pointers.ties_by_age`). Teacher-forced (`forced`) every step reads "
        f"the true trace, which names the right parent.\n\n{margins}\n\n"
        "The same nodes' mean margin: the output's score of the parent BFS "
        "took less the highest score among the other tied parents "
        "(`margin_mean`, `pointers.tie_margins`; negative where another "
        "outscores it), over the grid sizes."
    )


def _self_loops(clrs_law: str) -> str:
    """6c's grid kind as its tables name it: dm-clrs's self-loops, or none."""
    return "dm-clrs's" if clrs_law == "True" else "none"


def _tie_cell(rows: Sequence[Mapping[str, str]]) -> str:
    """One arm on one law's grids of one size: sums, seeds losing any, margin."""
    if not rows:
        return "–"
    lost = sum(int(r["forced_lost"]) > 0 for r in rows)
    margin = float(np.median([float(r["forced_margin_min"]) for r in rows]))
    wrong_tied = sum(int(r["wrong_tied"]) for r in rows)
    forced_lost = sum(int(r["forced_lost"]) for r in rows)
    return f"{wrong_tied} · {forced_lost} ({lost}/{len(rows)}; {margin:+.2f})"


def tie_test_table(results: Path, algorithm: str = "bfs") -> str:
    """Notebook 07's section 6c: each arm's counts by grid size, then the tests."""
    rows = files.read_table(results / tie_test.seeds_file(algorithm))
    cells: dict[tuple[str, int], dict[str, list]] = {}
    for r in rows:
        key = (_self_loops(r["clrs_law"]), int(r["num_nodes"]))
        cells.setdefault(key, {}).setdefault(r["contender"], []).append(r)
    arms = [a for a in tie_test.ARMS if any(a in c for c in cells.values())]
    by_size = markdown_table(
        ("self-loops", "nodes", *arms),
        [
            (*key, *(_tie_cell(c.get(a, [])) for a in arms))
            for key, c in sorted(cells.items(), key=lambda kc: (kc[0][0] != "none", kc))
        ],
    )
    tests = files.read_table(results / tie_test.tests_file(algorithm))
    judged = markdown_table(
        (
            "count",
            "self-loops",
            "nodes",
            "arm",
            "against",
            "fewer · more · same",
            "medians",
            "p fewer",
            "p more",
            "p Holm",
            "side",
            "seeds needed",
        ),
        [
            (
                t["measure"],
                _self_loops(t["clrs_law"]),
                t["num_nodes"],
                t["arm"],
                t["against"],
                f"{t['fewer_seeds']} · {t['more_seeds']} · {t['same_seeds']}",
                f"{_fmt(t['median_arm'], 1)} vs {_fmt(t['median_against'], 1)}",
                _fmt(t["p_fewer"], 4),
                _fmt(t["p_more"], 4),
                _fmt(t["p_holm"], 4),
                t["side"],
                t["seeds_needed"] or "–",
            )
            for t in tests
        ],
    )
    return (
        f"{by_size}\n\nPer arm, on grids of each size ({rows[0]['graphs']} "
        "each; the smallest is training's largest), without self-loops (6b's) "
        "and with dm-clrs's (each node's with probability 0.5, as in every "
        "training graph; `families.with_clrs_law`), summed over seeds: outputs "
        "naming another tied parent running free (`wrong_tied`) · tied nodes "
        "whose output names another tied parent teacher-forced (`forced_lost`), "
        "and in brackets the seeds that lose any teacher-forced and the median "
        "over seeds of the lowest teacher-forced mean margin over ages (per "
        f"seed in `{tie_test.seeds_file(algorithm)}`).\n\n{judged}\n\n"
        "Each contrast paired by seed on one law's grids of one size: the seeds "
        "where the arm has fewer, more or the same, the medians, an exact "
        "one-sided Wilcoxon signed-rank test each way (`verdicts.paired_fewer`), "
        "and the "
        "two-sided p adjusted by Holm's step-down over the table's tests "
        f"(`verdicts.holm`): a side where it is below {SIGNIFICANCE:g}, else "
        "the seeds a decision would need at the Bonferroni level, were the "
        "seeds to come to differ as these did (`power.seeds_for_signed_rank`; "
        f"– where out of reach) (`{tie_test.tests_file(algorithm)}`).\n\n"
        f"{_tie_trends(results, algorithm)}"
    )


def _signed(text: str) -> str:
    """A CSV cell as a signed number to two places, – where empty (NaN)."""
    return f"{float(text):+.2f}" if text else "–"


def _tie_trends(results: Path, algorithm: str) -> str:
    """Section 6c's second question: does each contrast change with size?"""
    trends = files.read_table(results / tie_test.trends_file(algorithm))
    sizes = [k.removeprefix("median_excess_") for k in trends[0] if "excess_" in k]
    return markdown_table(
        (
            "count",
            "self-loops",
            "arm",
            "against",
            f"relative excess at {' · '.join(sizes)} nodes",
            "p rises",
            "p falls",
            "p Holm",
            "side",
            "seeds needed",
        ),
        [
            (
                t["measure"],
                _self_loops(t["clrs_law"]),
                t["arm"],
                t["against"],
                " · ".join(_signed(t[f"median_excess_{n}"]) for n in sizes),
                _fmt(t["p_rises"], 4),
                _fmt(t["p_falls"], 4),
                _fmt(t["p_holm"], 4),
                t["side"],
                t["seeds_needed"] or "–",
            )
            for t in trends
        ],
    ) + (
        "\n\nEach contrast along the sizes, paired by seed: per seed and size "
        "the arm's relative excess over its pair, (arm − pair) / (arm + pair), 0 "
        "where both are 0 (`stats.relative_excess`: the counts grow with the "
        "grid, so a steady share more would grow in raw counts too), its median "
        "over seeds at each size, and Page's test of a trend along the sizes "
        "(`verdicts.ordered_trend`: ranks within each seed, p by permuting them, "
        "each way), the two-sided p adjusted by Holm's step-down over these "
        f"tests, a family apart: `rises` or `falls` where it is below "
        f"{SIGNIFICANCE:g}, else the seeds a decision would need at the "
        "Bonferroni level (`power.seeds_for_trend`; – where out of reach or "
        "nothing varies). A trend says the contrast changes with size (sets "
        "in, fades or turns), not where its sign changes; the tests above say "
        f"where it is decided (`{tie_test.trends_file(algorithm)}`)."
    )


def _explored(rows: Sequence[Mapping[str, str]], h: Mapping[str, str]) -> str:
    """6c's row for a hypothesis's cell: seeds and p its way, 6c's Holm, side.

    What 6c's own Holm over its tests decided of the cell, so a reader sees
    which cells the exploration had decided itself, with every test it ran
    counted against it, and which it only leaned on.  Only on 6c's own draws
    (``first_grid`` 0): on fresh draws 6c counted nothing.
    """
    if int(h["first_grid"]):
        return "–"
    for r in rows:
        if all(r[k] == h[k] for k in ("measure", "clrs_law", "num_nodes", "arm")):
            side = h["side"]
            return (
                f"{r[f'{side}_seeds']}/{r['seeds']}, p {_fmt(r[f'p_{side}'], 4)}; "
                f"Holm {_fmt(r['p_holm'], 4)}: {r['side']}"
            )
    return "–"


def confirmation_table(results: Path) -> str:
    """Notebook 09: each hypothesis on its round's block, beside 6c's row for it."""
    rows = files.read_table(results / confirmation.results_file())
    explored_path = results / tie_test.tests_file(confirmation.ALGORITHM)
    explored = files.read_table(explored_path) if explored_path.exists() else []
    table = markdown_table(
        (
            "round",
            "hypothesis",
            "grids",
            "fresh seeds on · off · same",
            "share on its side (95 %)",
            "medians",
            "Hodges-Lehmann",
            "p",
            "p other way",
            "p sign test",
            "least p",
            "p Holm",
            "verdict",
            "6c: on its side, p; Holm: its side",
        ),
        [
            (
                r["round"],
                _hypothesis(r),
                _grids(r),
                f"{r['on_side']} · {r['off_side']} · {r['same_seeds']}",
                f"{_fmt(r['share'], 2)} [{_fmt(r['share_low'], 2)}, "
                f"{_fmt(r['share_high'], 2)}]",
                f"{_fmt(r['median_arm'], 1)} vs {_fmt(r['median_against'], 1)}",
                _fmt(r["hodges_lehmann"], 1),
                _fmt(r["p"], 4),
                _fmt(r["p_other_way"], 4),
                _fmt(r["p_sign"], 4),
                _fmt(r["least_p"], 4),
                _fmt(r["p_holm"], 4),
                r["verdict"],
                _explored(explored, r),
            )
            for r in rows
        ],
    )
    confirmed = sum(r["verdict"] == verdicts.CONFIRMED for r in rows)
    return (
        f"{table}\n\n{confirmed} of {len(rows)} hypotheses confirmed. Each was "
        "fixed in code before any of its seeds was counted "
        "(`confirmation.HYPOTHESES`), a round at a time, and is tested on its "
        "round's block of seeds, which no other study trains (from "
        f"`confirmation.first_seed`, {confirmation.BLOCK_STRIDE} times the "
        "round), one-sided the way it says, by an exact Wilcoxon signed-rank "
        "test paired by seed (`stats.signed_rank_p`), Holm's step-down over "
        "its round's hypotheses at "
        f"{SIGNIFICANCE:g} (`verdicts.confirmed_together`); the share is of "
        "the seeds not tied, with its Clopper-Pearson interval and the sign "
        "test's one-sided p (the count alone, shown, not judged); "
        "Hodges-Lehmann is the signed-rank test's own estimate of the "
        "difference, arm minus against (the median of the paired differences' "
        "Walsh averages); least p is "
        "what the seeds would give all on the stated side; the last column is "
        "6c's row for the same cell, on the seeds that chose the hypothesis "
        f"(`{confirmation.results_file()}`).{_powerless(rows)}"
        f"{_across_rounds(rows)}{_by_ranks(rows)}{_turns(rows)}"
        f"{_checks(results, rows)}"
    )


def _checks(results: Path, rows: Sequence[Mapping[str, str]]) -> str:
    """Notebook 09's checks (``confirmation.checks``), each beside its hypothesis.

    Exploratory: chosen after the verdicts, so said as a check, not a
    confirmation ('' where this profile wrote none).
    """
    path = results / confirmation.checks_file()
    checked = files.read_table(path) if path.exists() else []
    if not checked:
        return ""
    names = [f.name for f in dataclasses.fields(confirmation.Hypothesis)]
    names.remove("source_kept")
    judged = {tuple(r[k] for k in names): r for r in rows}
    pairs = [(judged[tuple(c[k] for k in names)], c) for c in checked]
    table = markdown_table(
        ("round", "hypothesis", "each source", "seeds on · off · same", "medians")
        + ("Hodges-Lehmann", "p", "p Holm", "verdict"),
        [
            (
                r["round"],
                _hypothesis(r),
                "kept at its node" if r["source_kept"] == "True" else "drawn by index",
                f"{r['on_side']} · {r['off_side']} · {r['same_seeds']}",
                f"{_fmt(r['median_arm'], 1)} vs {_fmt(r['median_against'], 1)}",
                _fmt(r["hodges_lehmann"], 1),
                _fmt(r["p"], 4),
                _fmt(r["p_holm"], 4),
                r["verdict"],
            )
            for pair in pairs
            for r in pair
        ],
    )
    kept = sum(h["verdict"] == c["verdict"] for h, c in pairs)
    return (
        "\n\n**A check, chosen after the verdicts (exploratory).** Where a "
        "hypothesis reads a numbering's cost, its shuffled draws drew each "
        "source by its index, so the source sits at another lattice node than "
        "on the same draw numbered row by row, and a model's cost carries where "
        "its source went beside the numbering. Each check asks the hypothesis "
        "again on the same models and lattices with every source kept at its "
        "node (`tasks.graphs.family_batch`'s `source_kept`), so that a model's "
        "two counts differ by the numbering alone; the same test and Holm "
        "family (the round's checks). Chosen after the verdicts, a check "
        f"confirms nothing: {kept} of {len(pairs)} hypotheses keep their "
        "verdict with each source kept"
        + ("; for those, where the source sat did not decide it" if kept else "")
        + f" (`{confirmation.checks_file()}`).\n\n{table}"
    )


def _hypothesis(r: Mapping[str, str]) -> str:
    """What a hypothesis says, as the table names it."""
    measure = f"`{r['measure']}`"
    if r["rows_minus_shuffled"] == "True":
        measure += " (ids row by row minus shuffled)"
    return f"{r['arm']} {r['side']} {measure} than {r['against']}"


def _grids(r: Mapping[str, str]) -> str:
    """A hypothesis's grids: size, law and draws."""
    draws = (r["first_grid"], r["shuffled_ids"], r["rows_minus_shuffled"])
    return (
        f"{r['num_nodes']} nodes, self-loops {_self_loops(r['clrs_law'])}, "
        f"{_draws(*draws)}"
    )


def _draws(first_grid: str, shuffled_ids: str, rows_minus_shuffled: str) -> str:
    """Which grid draws a hypothesis counts on, as the table names them."""
    first = int(first_grid)
    said = "6c's draws" if not first else f"fresh draws from graph {first}"
    if rows_minus_shuffled == "True":
        return said + ", ids row by row and shuffled"
    return said + (", ids shuffled" if shuffled_ids == "True" else "")


def _powerless(rows: Sequence[Mapping[str, str]]) -> str:
    """Each round whose seeds cannot reach Holm's strictest level, said so."""
    said = []
    for r in dict.fromkeys(row["round"] for row in rows):
        own = [row for row in rows if row["round"] == r]
        floor, level = max(float(x["least_p"]) for x in own), SIGNIFICANCE / len(own)
        if floor >= level:
            said.append(
                f" At {own[0]['seeds']} seeds per arm round {r}'s test cannot go "
                f"below p = {floor:.4g}, above Holm's strictest level there "
                f"({level:g}): this profile's `not confirmed` says nothing of "
                "the models."
            )
    return "".join(said)


def _across_rounds(rows: Sequence[Mapping[str, str]]) -> str:
    """What the rounds' confirmations are worth together: each at its share."""
    across = [confirmation.row_across_rounds(r) for r in rows]
    held = sum(p < SIGNIFICANCE for p in across)
    dropped = [
        f"round {r['round']}'s {r['side']} at {r['num_nodes']} nodes ({p:.3g})"
        for r, p in zip(rows, across, strict=True)
        if r["verdict"] == verdicts.CONFIRMED and p >= SIGNIFICANCE
    ]
    closed = confirmation.CLOSED_ROUNDS
    return (
        f" Each round holds its own family at {SIGNIFICANCE:g}; judged across the "
        f"rounds, each holds a share of {SIGNIFICANCE:g} fixed before its data "
        f"(`analysis.rounds.level_share`): rounds 1 to {closed}, the first block, "
        f"1/{closed} each (Bonferroni over its rounds), and round r from "
        f"{closed + 1} on one half to the power r − {closed}, so that no later "
        "round changes an earlier verdict (each block holds at most the level, "
        "the two together at most twice it). So judged (each round's Holm p "
        f"divided by its share), {held} of {len(rows)} stay confirmed"
        + (f"; not {', '.join(dropped)}" if dropped else "")
        + "."
    )


def _by_ranks(rows: Sequence[Mapping[str, str]]) -> str:
    """Confirmed hypotheses whose share's interval reaches one half, said so."""
    said = [
        f" Round {r['round']}'s {r['side']} at {r['num_nodes']} nodes is confirmed "
        "while its share's interval reaches 0.5 (from "
        f"{float(r['share_low']):.3f}): the count of seeds on its side alone "
        "does not rule out an even split at 95 % (sign test, one-sided p "
        f"{float(r['p_sign']):.3g}); the signed-rank test also weighs how far "
        "each seed went (Hodges-Lehmann difference "
        f"{float(r['hodges_lehmann']):+.3g})."
        for r in rows
        if r["verdict"] == verdicts.CONFIRMED and float(r["share_low"]) <= 0.5
    ]
    return "".join(said)


def _turns(rows: Sequence[Mapping[str, str]]) -> str:
    """``confirmation.turns``, in words: each contrast tested both ways in one kind.

    Each turn that holds is judged across the rounds as well, as
    :func:`_across_rounds` judges each hypothesis.
    """
    said = []
    for t in confirmation.turns(rows):
        kind = "dm-clrs's self-loops" if t["clrs_law"] == "True" else "no self-loops"
        draws = (t["first_grid"], t["shuffled_ids"], t["rows_minus_shuffled"])
        kind += f" ({_draws(*draws)})"
        verb = "holds" if t["turned"] else "was tested for"
        where = (
            f"On grids with {kind}, {t['arm']} {verb} fewer `{t['measure']}` than "
            f"{t['against']} at {_nodes(t['fewer_at'])} and more at "
            f"{_nodes(t['more_at'])}"
        )
        said.append(
            f" {where}: each part confirmed at the level, so the contrast turns "
            "within these grids, at the level (an intersection-union "
            "test: it asks every part to hold, so it needs no correction)."
            if t["turned"]
            else f" {where}: not every part confirmed, so a turn within these "
            "grids is not shown."
        )
        if t["turned"]:
            said.append(
                " Judged across the rounds (each part's Holm p divided by its "
                f"round's share, the largest {t['p_across']:.3g}) it "
                + ("holds too." if t["p_across"] < SIGNIFICANCE else "is not shown.")
            )
    return "".join(said)


def _nodes(sizes: Sequence[int]) -> str:
    return " and ".join(str(n) for n in sizes) + " nodes"


def _mean_margin(rows: Sequence[Mapping[str, str]]) -> str:
    """The tie table's ``margin_mean`` over ``rows``, weighted by their tied nodes."""
    tied = [int(r["tied_nodes"]) for r in rows]
    total = sum(float(r["margin_mean"]) * n for r, n in zip(rows, tied, strict=True))
    return f"{total / sum(tied):+.2f}"


def _wrong_by_kind(rows: Sequence[Mapping[str, str]], smallest: int) -> str:
    """Each recipe and seed's wrong outputs above ``smallest`` nodes, by kind."""
    sums: dict[tuple[str, str], dict[str, list[int]]] = {}
    kinds = ("wrong_tied", "wrong_child", "wrong_other", "nodes")
    for r in rows:
        if int(r["num_nodes"]) == smallest:
            continue
        group = "trained" if r["twin_trained"] == "True" else "held_out"
        cell = sums.setdefault((r["recipe"], r["seed"]), {})
        counts = cell.setdefault(group, [0] * len(kinds))
        for i, kind in enumerate(kinds):
            counts[i] += int(r[kind])

    def said(counts: list[int] | None) -> str:
        if counts is None:
            return "–"
        tied, child, other, nodes = counts
        return f"{tied} · {child} · {other} of {nodes}"

    return markdown_table(
        ("model", "seed", "twin's families: tied · child · other", "the others"),
        [
            (recipe, seed, said(c.get("trained")), said(c.get("held_out")))
            for (recipe, seed), c in sums.items()
        ],
    )


def _exposure(results: Path, algorithm: str) -> str:
    """How many node-steps are old in training, in the twin's and on the paths."""
    rows = files.read_table(results / path_pointers.ages_file(algorithm))
    ages = {int(r["age"]): r for r in rows}
    at = ages.get(EDIT_AGE)
    if not at:
        return ""

    def old(source: str) -> str:
        counts = [(int(r["age"]), int(r[f"{source}_node_steps"])) for r in rows]
        above = sum(n for age, n in counts if age >= EDIT_AGE)
        return f"{above} of {sum(n for _, n in counts)}"

    return (
        f"Node-steps {EDIT_AGE} or more steps after the node's "
        f"reach: {_fmt(at['training_share_at_least'])} of the training "
        f"batches', {_fmt(at['training_families_share_at_least'])} of the "
        f"twin's (`+families`: {_twin_mix()}), "
        f"{_fmt(at['paths_share_at_least'])} of the paths' "
        f"(`{path_pointers.ages_file(algorithm)}`). Of the node-steps of nodes "
        f"with tied parents (`pointers.tied_nodes`), those {EDIT_AGE} or more "
        f"steps after the reach: {old('training_tied')} in the training "
        f"batches, {old('training_families_tied')} in the twin's, "
        f"{old('grids_tied')} on the tie table's grids."
    )


def _twin_mix() -> str:
    """What section 6b's twin mixes into its batches, in words."""
    families = ", ".join(path_pointers.MIXED_FAMILIES)
    return f"{path_pointers.MIXED_SHARE:g} of each batch's graphs {families}"


def _by_rollout(
    rows: Sequence[Mapping[str, str]],
    column: tuple[str, str],
    cell: Callable[[Sequence[Mapping[str, str]]], str],
) -> str:
    """A row per model, seed and rollout; a cell per value of a column.

    ``column``: the CSV column and its header prefix; ``cell``: what the rows
    that share a cell say (the tie table's grid sizes are several).
    """
    name, prefix = column
    by: dict[tuple[str, str, str], dict[int, list[Mapping[str, str]]]] = {}
    for r in rows:
        cells = by.setdefault((r["recipe"], r["seed"], r["rollout"]), {})
        cells.setdefault(int(r[name]), []).append(r)
    values = sorted({v for cells in by.values() for v in cells})
    return markdown_table(
        ("model", "seed", "rollout", *(f"{prefix}{v}" for v in values)),
        [
            (recipe, seed if seed != "-1" else "–", rollout)
            + tuple(cell(c[v]) if v in c else "–" for v in values)
            for (recipe, seed, rollout), c in by.items()
        ],
    )


def _hits(hits: str, total: str) -> Callable[[Sequence[Mapping[str, str]]], str]:
    """A cell of :func:`_by_rollout`: ``hits/total``, each column summed."""

    def cell(rows: Sequence[Mapping[str, str]]) -> str:
        return f"{sum(int(r[hits]) for r in rows)}/{sum(int(r[total]) for r in rows)}"

    return cell


def _distances(results: Path, algorithm: str) -> str:
    """Old nodes' pointers naming a child (:data:`EDIT_AGE` or more steps on).

    The legend names the rollouts the table holds, in the order of
    :data:`_ROLLOUT_LEGENDS`.
    """
    rows = files.read_table(results / path_pointers.distances_file(algorithm))
    table = _by_rollout(rows, ("distance", "d = "), _hits("to_child", "node_steps"))
    held = {r["rollout"] for r in rows}
    legend = "".join(
        text for names, text in _ROLLOUT_LEGENDS if any(n in held for n in names)
    )
    return (
        f"{table}\n\nBy distance `d` from the source: of a node's `pi_h` "
        f"predictions {EDIT_AGE} or more steps after its reach, those naming a "
        f"child (`{path_pointers.distances_file(algorithm)}`). {legend}"
    ).rstrip()


_ROLLOUT_LEGENDS = (
    (("free_hard",), "`free_hard`: running free with each fed pointer's argmax; "),
    (
        ("free_hard_even", "free_hard_odd"),
        "`free_hard_even`, `free_hard_odd`: with the fed pointers of the nodes "
        "already reached at even (odd) distances hardened, the rest soft "
        "(`pointers.free_hardened_by_parity`). ",
    ),
    (
        ("free_hard_parent", "free_hard_child", "free_hard_both"),
        "`free_hard_parent`, `free_hard_child`, `free_hard_both`: one rollout "
        "per counted node, with only its parent's, its children's or both fed "
        f"pointers hardened from its first prediction {EDIT_AGE} steps old, "
        "its own predictions counted (`pointers.free_hardened_by_role`): the "
        "node-steps of `free`. ",
    ),
    (
        ("forced_source_moved",),
        "`forced_source_moved`: teacher-forced with the input `s` on the "
        "farthest node, the trace unchanged (`pointers.source_moved`); the "
        "compiled program reads `s` at every step, so its row there is no "
        "control.",
    ),
)
"""Each group of :func:`_distances`'s rollouts and what its legend says."""


def _drift(results: Path, algorithm: str = "bfs") -> str:
    """The chosen recipe and its control trained on without supervision."""
    rows = files.read_table(results / recipes.drift_file(algorithm))
    table = markdown_table(
        (
            "recipe",
            "steps without supervision",
            "accuracy",
            "internal",
            "worst seed's internal",
            "argmax agreement",
            "parameter drift [95 % CI]",
            "seeds at the bar",
        ),
        [
            (
                r["recipe"],
                str(r["steps_unsupervised"]),
                _fmt(str(r["accuracy"])),
                _fmt(str(r["internal"])),
                _fmt(str(r["internal_worst"])),
                _fmt(str(r["argmax_agreement"])),
                f"{_fmt(str(r['param_drift']))} [{_fmt(str(r['param_drift_low']))}, "
                f"{_fmt(str(r['param_drift_high']))}]",
                f"{r['seeds_meeting_bar']} of {r['seeds']}",
            )
            for r in recipes.drift_table(rows)
        ],
    )
    spread = results / recipes.drift_distribution_file(algorithm)
    paired = recipes.stored_verdict(spread) if spread.exists() else ""
    return f"{table}\n\n{recipes.drift_summary(rows)} {paired}".rstrip()


def _generalisation(results: Path, algorithm: str) -> str:
    """Accuracy per condition and contender, the paired difference, the attention.

    Then sharpness, then the verdict.
    """
    path = results / generalisation.results_file(algorithm)
    table = files.read_table(path)
    by_key = {
        (r["contender"], r["measure"], r["condition"], r["value"]): r for r in table
    }

    def cell(contender: str, measure: str, where: tuple[str, str], spread=True):
        row = by_key.get((contender, measure, *where))
        if row is None:
            return "–"
        if not spread or not row["low"]:
            return _fmt(row["mean"])
        return f"{_fmt(row['mean'])} [{_fmt(row['low'])}, {_fmt(row['high'])}]"

    def paired(where: tuple[str, str]) -> str:
        row = by_key.get(("supervised - plain", "accuracy", *where))
        if row is None:
            return "–"
        level = float(row["level"])
        said = f"{cell('supervised - plain', 'accuracy', where)} at {level:.3f}"
        if row.get("plain_at_ceiling") == "True":
            return f"{said} (plain at ceiling: not tested)"
        needed = row.get("seeds_needed", "")
        return f"{said}; {needed} seeds would decide" if needed else said

    conditions = list(
        dict.fromkeys(
            (r["condition"], r["value"]) for r in table if r["measure"] == "accuracy"
        )
    )
    recipe = {r["contender"]: r["recipe"] for r in table}
    plain, supervised = recipe.get("plain", ""), recipe.get("supervised", "")
    fixed = "compiled_fixed" in recipe  # a program with a distance range
    accuracy = markdown_table(
        (
            "condition",
            f"accuracy, plain ({plain})",
            f"accuracy, supervised ({supervised})",
            "accuracy, compiled (range fitted)",
            *(["accuracy, compiled (default range)"] if fixed else []),
            "supervised - plain, paired [interval]",
            "internal, plain / supervised",
            "argmax agreement, plain / supervised",
        ),
        [
            (
                f"{kind} {value}",
                cell("plain", "accuracy", (kind, value)),
                cell("supervised", "accuracy", (kind, value)),
                cell("compiled", "accuracy", (kind, value)),
                *([cell("compiled_fixed", "accuracy", (kind, value))] if fixed else []),
                paired((kind, value)),
                f"{cell('plain', 'internal', (kind, value), False)} / "
                f"{cell('supervised', 'internal', (kind, value), False)}",
                f"{cell('plain', 'argmax_agreement', (kind, value), False)} / "
                f"{cell('supervised', 'argmax_agreement', (kind, value), False)}",
            )
            for kind, value in conditions
        ],
    )
    loss = ("loss", "radius 0.1")
    sharp = markdown_table(
        ("sharpness (loss rise, radius 0.1)", "plain", "supervised", "compiled"),
        [
            (
                "mean [95 % CI]",
                cell("plain", "sharpness", loss),
                cell("supervised", "sharpness", loss),
                cell("compiled", "sharpness", loss),
            )
        ],
    )
    return f"{accuracy}\n\n{sharp}\n\n{recipes.stored_verdict(path)}"


RENDERED_PROFILE = "cpu"
"""The profile of the committed ``results/`` these pages render."""


def _paper(results: Path) -> str:
    parts = []
    for notebook in COMPARED_NOTEBOOKS:
        rows = paper.comparison(notebook, results, RENDERED_PROFILE)
        table = markdown_table(
            (
                "notebook",
                "where",
                "the paper",
                "its numbers",
                "ours",
                "verdict",
                "protocol",
                "evidence",
                "decidable at",
            ),
            [
                (
                    notebook,
                    r["where"],
                    r["claim"],
                    r["paper"],
                    r["ours"],
                    r["verdict"],
                    r["protocol"],
                    r["evidence"],
                    r["decidable_at"] or "decided",
                )
                for r in rows
            ],
        )
        parts.append(f"{table}\n\n{paper.verdict_sentence(rows)}")
    return "\n\n".join(parts)


def _transnar(results: Path) -> str:
    """Notebook 08: CLRS score by model and size, the answer, TransNAR's trend."""
    parts = []
    for algorithm in ("bfs", "bellman_ford"):
        summary = files.read_table(results / transnar.SUMMARY_FILE.format(algorithm))
        sizes = list(dict.fromkeys(int(r["num_nodes"]) for r in summary))
        models = list(dict.fromkeys(r["model"] for r in summary))
        cells = {(r["model"], int(r["num_nodes"])): r for r in summary}

        def cell(model: str, size: int, cells: dict = cells) -> str:
            row = cells.get((model, size))
            if row is None:
                return "–"
            return (
                f"{_fmt(row['clrs_mean'])} ± {_fmt(row['clrs_std'])} "
                f"({_fmt(row['shape_mean'])})"
            )

        header = [
            f"{algorithm}: CLRS score, mean ± std over seeds (shape score)",
            *(
                f"N = {n}" + ("" if cells[models[0], n]["in_distribution"] == "True"
                              else " (out)")
                for n in sizes
            ),
        ]  # fmt: skip
        parts.append(
            markdown_table(header, [(m, *(cell(m, n) for n in sizes)) for m in models])
        )
    question = files.read_table(results / transnar.QUESTION_FILE)
    rows = paper.comparison("08", results, RENDERED_PROFILE)
    trend = markdown_table(
        ("TransNAR's finding", "ours", "verdict", "evidence", "decidable at"),
        [
            (
                r["claim"],
                r["ours"],
                r["verdict"],
                r["evidence"],
                r["decidable_at"] or "decided",
            )
            for r in rows
        ],
    )
    return "\n\n".join(
        [
            *parts,
            question_sentence(question),
            trend,
            paper.verdict_sentence(rows),
        ]
    )


def _sweep_cell(row: dict[str, str]) -> str:
    """Where one family stops being exact, in words."""
    if row["first_error"]:
        exact = row["largest_exact"] or "none"
        return f"error from {row['first_error']} (exact to {exact})"
    if row["first_ties"]:
        return f"near-ties from {row['first_ties']}, no error to {row['largest_run']}"
    return f"exact to {row['largest_run']}"


def _size_sweep(results: Path) -> str:
    rows = files.read_table(results / size_sweep.BREAKDOWN_TABLE)
    columns = [(a, d) for a in ("bfs", "bellman_ford") for d in ("float32", "float64")]
    cells = {(r["family"], r["algorithm"], r["dtype"]): _sweep_cell(r) for r in rows}
    families = list(dict.fromkeys(r["family"] for r in rows))
    breakdown = markdown_table(
        ("family", *(f"{a}, {d}" for a, d in columns)),
        [(f, *(cells.get((f, a, d), "–") for a, d in columns)) for f in families],
    )
    limits = files.read_table(results / size_sweep.PRECISION_TABLE)
    precision = markdown_table(
        (
            "dtype",
            "distances up to",
            "fitted range",
            "guaranteed resolution",
            "smallest gap decided",
        ),
        [
            (
                r["dtype"],
                _fmt(r["distance"], 0),
                _fmt(r["max_distance"], 0),
                f"{float(r['resolution']):.1e}",
                f"{float(r['smallest_exact_gap']):.1e}",
            )
            for r in limits
        ],
    )
    return f"{breakdown}\n\n{precision}"


def _or_missing(render_part, results: Path) -> str:
    """A part, or a line naming the file it needs (a notebook not run yet)."""
    try:
        return render_part(results)
    except FileNotFoundError as error:
        return f"(no `{Path(error.filename).name}` yet: run what writes it)"


_STUDY_ALGORITHMS = {"bfs": "BFS", "bellman_ford": "Bellman-Ford"}


def _study_parts(results: Path) -> tuple[tuple[str, Callable[[Path], str]], ...]:
    """Notebook 07's recipe, drift and generalisation parts, per algorithm studied.

    A profile studies the recipes on the algorithms its ``studies`` name
    (``cpu`` and ``studies``: both; ``smoke``: BFS), so an algorithm without a
    recipe table gets one line saying so, not three missing-file notes.
    """
    parts: tuple[tuple[str, Callable[[Path], str]], ...] = ()
    for algorithm, name in _STUDY_ALGORITHMS.items():
        if not (results / recipes.recipes_file(algorithm)).exists():
            parts += (
                (
                    f"Recipes, drift and generalisation, {name} (notebook 07)",
                    lambda _, name=name, algorithm=algorithm: (
                        f"No `{recipes.recipes_file(algorithm)}` here: "
                        f"`./run_all.sh --profile studies` trains {name}'s recipes."
                    ),
                ),
            )
            continue
        parts += (
            (
                f"Recipes that reach the bar, {name} (notebook 07)",
                functools.partial(_recipes, algorithm=algorithm),
            ),
            (
                f"Trained on without supervision, {name} (notebook 07)",
                functools.partial(_drift, algorithm=algorithm),
            ),
            (
                f"What faithfulness buys out of distribution, {name} (notebook 07)",
                functools.partial(_generalisation, algorithm=algorithm),
            ),
        )
        if (results / path_pointers.rows_file(algorithm)).exists():
            parts += (
                (
                    f"Which pointers the decoders read on paths, {name} (notebook 07)",
                    functools.partial(path_pointers_table, algorithm=algorithm),
                ),
            )
        if (results / tie_test.tests_file(algorithm)).exists():
            parts += (
                (
                    f"Does mixing families protect the tie memory, {name} "
                    "(notebook 07)",
                    functools.partial(tie_test_table, algorithm=algorithm),
                ),
            )
        if (results / recipes.self_rows_file(algorithm)).exists():
            parts += (
                (
                    f"Where self-loops move the faithful recipe, {name} (notebook 07)",
                    functools.partial(_self_rows, algorithm=algorithm),
                ),
            )
    return parts


def render(results_dir: str | os.PathLike) -> str:
    """The whole results section, from ``results_dir``'s files.

    A folder of a profile that runs some notebooks only
    (``Profile.notebooks``: ``results/gpu/``, ``results/studies/``) renders
    the parts of those it holds tables of, and names in one line those it
    does not (a profile's notebooks can be run one at a time: ``--only``);
    the default profile's every part, a missing file said in one line.
    """
    results = _results_folder(results_dir)
    profile = _profile_of(results)
    runs = profiles.PROFILES[profile].notebooks if profile in profiles.PROFILES else ()
    where = profiles.committed_dirs(profile).results if runs else Path("results")
    rendered = f"Rendered from `{where.as_posix()}/` (profile `{profile}`)"
    sections = [f"{rendered} by `nar-gap render`.\n"]
    held = _notebooks_held(results)
    ran = tuple(n for n in runs if n in held)
    if len(ran) < len(runs):
        absent = [n for n in runs if n not in held]
        which = f"notebook{'s' if len(absent) > 1 else ''} {', '.join(absent)}"
        sections.append(f"No tables here from {which} of this profile: not run.\n")
    for notebook, title, part in _parts(results):
        if not runs or notebook in ran:
            sections.append(_section(title, _or_missing(part, results)))
    return "\n".join(sections).rstrip("\n")


def _results_folder(results_dir: str | os.PathLike) -> Path:
    """``results_dir``, refused in one line unless it holds a results table.

    Rendered, a mistyped or empty folder gave every part's "no ... yet"
    line, and written (``--write``), put them in place of a page's section.
    """
    results = Path(results_dir)
    if not results.is_dir():
        raise ValueError(f"{results}: no such results folder")
    if next(results.glob("*.csv.json"), None) is None:
        raise ValueError(
            f"{results} holds no results table (a CSV with its JSON sidecar): "
            "nothing to render"
        )
    return results


def _notebooks_held(results: Path) -> set[str]:
    """The notebooks (``"02"``) whose tables are in ``results``, by their sidecars."""
    named = (files.read_json(s).get("notebook") for s in results.glob("*.csv.json"))
    return {str(name)[:2] for name in named if name}


def _profile_of(results: Path) -> str:
    """The profile that wrote ``results`` (its baselines' sidecar, else any)."""
    sidecar = files.sidecar_path(results / baselines.BASELINES_FILE)
    found = [sidecar] if sidecar.exists() else sorted(results.glob("*.csv.json"))
    return str(files.read_json(found[0]).get("profile", "?")) if found else "?"


def _parts(results: Path) -> list[tuple[str, str, Callable[[Path], str]]]:
    """``(notebook, title, part)`` of every section, in the page's order."""
    parts = [
        ("01", "Compiled networks (notebook 01)", _compiled),
        ("02", "Baselines (notebook 02)", _baselines),
        ("03", "Faithfulness (notebook 03)", _faithfulness),
    ]
    correlations = _table1(results)
    if correlations is not None:
        title = "Table 1: correlation with accuracy (notebook 03)"
        parts.append(("03", title, lambda _: correlations))
    points = _reference_points(results)
    if points is not None:
        parts.append(("03", "Reference points (notebook 03)", lambda _: points))
    parts += [
        ("04", "Ablations (notebook 04)", _ablations),
        ("05", "Stability, Table 16 (notebook 05)", _stability),
        ("06", "Loss landscapes, D.11 (notebook 06)", _landscapes),
    ]
    planes = _landscape_planes(results)
    if planes is not None:
        title = "The sharpness test's planes, D.11 (notebook 06)"
        parts.append(("06", title, lambda _: planes))
    parts += [
        ("", "The paper and ours (end of notebooks 01-06)", _paper),
        ("07", "Closing the gap (notebook 07)", _closing_gap),
        ("08", "TransNAR on CLRS-Text (notebook 08)", _transnar),
    ]
    parts += [("07", title, part) for title, part in _study_parts(results)]
    if (results / confirmation.results_file()).exists():
        title = "A confirmation of 6c on fresh seeds (notebook 09)"
        parts.append(("09", title, confirmation_table))
    title = "The compiled models against dm-clrs by size (notebook 01)"
    return [*parts, ("01", title, _size_sweep)]


def headline(results_dir: str | os.PathLike) -> str:
    """Each notebook's paper claims counted by verdict, per profile, and all of them.

    Read from the ``paper_vs_ours_NN.csv`` files the notebooks wrote, not
    judged again, so the README's first table says what the notebooks' last
    tables say.  A profile that ran some notebooks only (the gpu profile's
    results in ``results/gpu/``) has rows for those, under the default
    profile's row of the same notebook.
    """
    pattern = paper.comparison_file("*")
    prefix = Path(paper.comparison_file("")).stem
    counted: dict[str, dict[str, dict[str, int]]] = {}
    for profile, folder in profiles.committed_results(Path(results_dir)):
        for table in sorted(folder.glob(pattern)):
            notebook = table.stem.removeprefix(prefix)
            found = paper.counts(files.read_table(table))
            counted.setdefault(profile, {})[notebook] = found
    if profiles.DEFAULT_PROFILE not in counted:
        return f"(no `{pattern}` yet: run the notebooks)"
    rows = []
    for notebook in sorted({n for by in counted.values() for n in by}):
        for profile, by_notebook in counted.items():
            if notebook in by_notebook:
                found = by_notebook[notebook]
                rows.append((notebook, profile, sum(found.values()), *found.values()))
    for profile, by_notebook in counted.items():
        total = {v: sum(f[v] for f in by_notebook.values()) for v in paper.VERDICTS}
        rows.append(("all", profile, sum(total.values()), *total.values()))
    header = ("notebook", "profile", "paper claims", *paper.VERDICTS)
    others = [p for p in counted if p != profiles.DEFAULT_PROFILE]
    where = _listed(
        [f"`results/{pattern}`", *(f"`results/{p}/{pattern}`" for p in others)]
    )
    note = (
        f"; the {_listed(others)} rows count only the notebooks that profile ran"
        if others
        else ""
    )
    return f"Rendered from {where} by `nar-gap render`{note}.\n\n" + markdown_table(
        header, rows
    )


def replace_section(text: str, section: str, start: str = START, end: str = END) -> str:
    """``text`` with what lies between the markers replaced by ``section``."""
    if start not in text or end not in text:
        raise ValueError(f"no {start} ... {end} markers")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{section}\n{end}{tail}"


def write_rendered(path: str | os.PathLike, results_dir: str | os.PathLike) -> None:
    """Render into ``path`` every part whose markers it holds (at least one)."""
    _results_folder(results_dir)  # before the page is read or written
    page = Path(path)
    text = original = page.read_text()
    parts = (
        (START, END, render),
        (HEADLINE_START, HEADLINE_END, headline),
    )
    held = [(s, e, part) for s, e, part in parts if s in text and e in text]
    if not held:
        raise ValueError(f"{page} has no rendered-section markers ({START}, ...)")
    for start, end, part in held:
        text = replace_section(text, part(results_dir), start, end)
    if text != original:
        files.write_text_atomic(page, text)


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``: a list in a sentence."""
    return " and ".join(filter(None, [", ".join(items[:-1]), *items[-1:]]))
