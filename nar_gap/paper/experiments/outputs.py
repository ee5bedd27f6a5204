"""Which notebook writes which results file: one list, from the writers' names.

Each file's name is said once, by the module that writes it (``baselines.
validation_file`` and the like); this module says which notebook writes it,
for a profile and the algorithms each notebook's parameters cell lists
(:func:`~nar_gap.paper.experiments.catalogue.notebook_parameters`).  The
tests hold every committed table to it, and every committed sidecar's
``notebook`` to the notebook named here.
"""

from __future__ import annotations

from pathlib import Path

from nar_gap.paper.experiments import (
    ablations,
    baselines,
    catalogue,
    causal_gap,
    closing_gap,
    compilation,
    confirmation,
    faithfulness_study,
    generalisation,
    landscape_study,
    path_pointers,
    plateau,
    recipes,
    settings,
    size_sweep,
    stability,
    tie_test,
    transnar,
)
from nar_gap.paper.experiments.profiles import Profile

#: The paper-vs-ours table a compared notebook ends with (report.paper writes
#: it under this name: ``paper.comparison_file``).
COMPARISON_FILE = "paper_vs_ours_{}.csv"


def _algorithms(number: str, root: Path | None) -> list[str]:
    return list(catalogue.notebook_parameters(number, root).get("ALGORITHMS", []))


def _arms(profile: Profile, algorithms: list[str]) -> list[str]:
    """The baselines and their edge-information arms (``<a>_edge_info``)."""
    extra = [f"{a}_edge_info" for a in profile.edge_info_baselines if a in algorithms]
    return [*algorithms, *extra]


# notebook 08's tables of each algorithm it runs
_TRANSNAR_TABLES = (
    transnar.RESULTS_FILE,
    transnar.SUMMARY_FILE,
    transnar.READS_FILE,
    transnar.RULES_FILE,
)


def tables(profile: Profile, root: Path | None = None) -> dict[str, str]:
    """``{results file: notebook stem}`` of everything ``profile``'s notebooks write.

    Tables and array files; for the notebooks the profile runs
    (``Profile.notebooks``, or all).
    """
    stems = catalogue.stems()
    made: dict[str, list[str]] = {number: [] for number in stems}
    made["01"] += [
        compilation.EXACTNESS_FILE,
        compilation.MINIMAL_FILE,
        compilation.LOCALITY_FILE,
        size_sweep.TABLE,
        size_sweep.BREAKDOWN_TABLE,
        size_sweep.PRECISION_TABLE,
    ]
    baseline_algorithms = _algorithms("02", root)
    made["02"] += [baselines.BASELINES_FILE, settings.SETTINGS_FILE]
    made["02"] += [baselines.seeds_file(a) for a in baseline_algorithms]
    made["02"] += [
        baselines.validation_file(arm) for arm in _arms(profile, baseline_algorithms)
    ]
    made["02"] += [
        plateau.plateau_file(a, edge) for a, edge, _ in profile.studies.plateaus
    ]
    for arm in _arms(profile, _algorithms("03", root)):
        made["03"] += [
            faithfulness_study.seeds_file(arm),
            faithfulness_study.correlations_file(arm),
            faithfulness_study.summary_file(arm),
            faithfulness_study.reference_points_file(arm),
            faithfulness_study.arrays_file(arm),
        ]
    for a in profile.causal_gap_algorithms:
        made["03"] += causal_gap.files_of(a)
    for name in ablations.experiments(profile):
        made["04"] += [ablations.table_file(name), ablations.seeds_file(name)]
    for a in _algorithms("05", root):
        made["05"] += [stability.stability_file(a), stability.table16_file(a)]
    for a in _algorithms("06", root):
        made["06"] += landscape_study.files_of(a)
    for a in _algorithms("07", root):
        if a in profile.closing_gap_algorithms:
            made["07"] += [
                closing_gap.results_file(a),
                closing_gap.validation_file(a),
                closing_gap.over_time_file(a),
            ]
        if a in profile.studies.recipe_algorithms:
            made["07"] += [
                recipes.recipes_file(a),
                recipes.recipe_seeds_file(a),
                generalisation.results_file(a),
                generalisation.seeds_file(a),
            ]
            if profile.studies.drift_steps:
                made["07"] += [
                    recipes.drift_file(a),
                    recipes.drift_distribution_file(a),
                ]
            if causal_gap.has_path_case(profile, a):
                made["07"] += causal_gap.files_of(a, causal_gap.PATHS)
            if path_pointers.has_section(profile, a):
                made["07"] += path_pointers.files_of(a) + tie_test.files_of(a)
            if profile.studies.self_row_graphs and a in recipes.SELF_ROW_FLAGS:
                made["07"] += [recipes.self_rows_file(a)]
                made["07"] += [recipes.self_rows_positions_file(a)]
    made["08"].append(transnar.QUESTION_FILE)
    made["08"] += [
        name.format(a) for a in _algorithms("08", root) for name in _TRANSNAR_TABLES
    ]
    made["09"] += confirmation.files_of() if confirmation.runs_at(profile) else []
    for number in catalogue.numbers(catalogue.PAPER) + catalogue.numbers(
        catalogue.TRANSNAR
    ):
        made[number].append(COMPARISON_FILE.format(number))
    ran = profile.notebooks or tuple(stems)
    return {name: stems[n] for n in ran for name in made[n]}
