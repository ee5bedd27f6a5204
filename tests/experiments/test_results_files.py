"""Every results file is named by the module that writes it, as committed.

The readers (paper.py, readme_results.py, the notebooks) take the names from
the writers; the committed ``results/`` and ``figures/`` say what the names
are.  So the writers' names, for the cpu profile's algorithms and arms, are
exactly the committed files: a renamed writer, or a file nobody names, fails.
"""

from __future__ import annotations

from pathlib import Path

from nar_gap.experiments import (
    ablations,
    baselines,
    catalogue,
    closing_gap,
    compilation,
    faithfulness_study,
    generalisation,
    landscape_study,
    plateau,
    profiles,
    recipes,
    settings,
    size_sweep,
    stability,
    transnar,
)
from nar_gap.report import paper
from nar_gap.system import files

ROOT = Path(__file__).resolve().parents[2]
BFS_BF = ("bfs", "bellman_ford")
FAITHFULNESS_ARMS = ("bfs", "bellman_ford", "dfs", "bellman_ford_edge_info")
VALIDATION_ARMS = FAITHFULNESS_ARMS  # the baselines and the edge-information arm


def _named_tables() -> set[str]:
    names = {
        baselines.BASELINES_FILE,
        settings.SETTINGS_FILE,
        compilation.EXACTNESS_FILE,
        compilation.MINIMAL_FILE,
        compilation.LOCALITY_FILE,
        size_sweep.TABLE,
        size_sweep.BREAKDOWN_TABLE,
        size_sweep.PRECISION_TABLE,
        transnar.QUESTION_FILE,
        *(ablations.table_file(name) for name in ablations.experiments(profiles.CPU)),
        *(ablations.seeds_file(name) for name in ablations.experiments(profiles.CPU)),
        *(baselines.seeds_file(a) for a in baselines.BASELINE_ALGORITHMS),
        *(paper.comparison_file(n) for n in ("01", "02", "03", "04", "05", "06", "08")),
    }
    for arm in VALIDATION_ARMS:
        names.add(baselines.validation_file(arm))
    for arm in FAITHFULNESS_ARMS:
        names |= {
            faithfulness_study.seeds_file(arm),
            faithfulness_study.correlations_file(arm),
            faithfulness_study.summary_file(arm),
            faithfulness_study.reference_points_file(arm),
            faithfulness_study.arrays_file(arm),
        }
    for a in ("bfs", "bellman_ford", "dfs"):
        names |= {landscape_study.landscape_file(a), landscape_study.grids_file(a)}
    studies = profiles.CPU.studies
    names |= {plateau.plateau_file(a, e) for a, e, _ in studies.plateaus}
    for a in studies.recipe_algorithms:
        names |= {
            recipes.recipes_file(a),
            recipes.recipe_seeds_file(a),
            generalisation.results_file(a),
            generalisation.seeds_file(a),
        }
        if studies.drift_steps:
            names.add(recipes.drift_file(a))
    for a in BFS_BF:
        names |= {
            stability.stability_file(a),
            stability.table16_file(a),
            closing_gap.results_file(a),
            closing_gap.validation_file(a),
            closing_gap.over_time_file(a),
            transnar.RESULTS_FILE.format(a),
            transnar.SUMMARY_FILE.format(a),
            transnar.READS_FILE.format(a),
        }
    return names


def test_the_writers_name_exactly_the_committed_tables():
    committed = {
        p.name
        for p in (ROOT / "results").iterdir()
        if p.is_file() and not p.name.endswith(".json") and not p.name.startswith(".")
    }
    assert _named_tables() == committed


def _gpu_tables() -> set[str]:
    """What notebook 02 writes at the gpu profile: its arms and its verdicts."""
    return {
        baselines.BASELINES_FILE,
        settings.SETTINGS_FILE,
        paper.comparison_file("02"),
        *(baselines.seeds_file(a) for a in baselines.BASELINE_ALGORITHMS),
        *(baselines.validation_file(arm) for arm in VALIDATION_ARMS),
    }


def test_the_gpu_profile_s_committed_tables_are_notebook_02_s_from_a_gpu():
    """results/gpu/ holds what ran on a GPU, each table with its sidecar.

    Only notebook 02 finished there (benchmarks/results/gpu_h200_job_*); a
    table from another notebook, or one written on a CPU, fails.
    """
    folder = ROOT / profiles.committed_dirs("gpu").results
    tables = {p.name for p in folder.iterdir() if not p.name.endswith(".json")}
    assert tables == _gpu_tables()
    for name in tables:
        sidecar = files.read_json(folder / f"{name}.json")
        assert sidecar["profile"] == "gpu", name
        assert sidecar["backend"]["platform"] == "gpu", name


def test_the_writers_figure_stems_are_committed_figures():
    stems = {
        stem
        for a in ("bfs", "bellman_ford", "dfs")
        for stem in compilation.compiled_figure_stems(a)
    }
    stems.add(size_sweep.FIGURE)
    for arm in VALIDATION_ARMS:
        stems.add(baselines.validation_figure_stem(arm))
    for a in BFS_BF:
        stems |= {
            stability.figure_stem(a),
            closing_gap.figure_stem(a),
            transnar.FIGURE_STEM.format(a),
        }
    studies = profiles.CPU.studies
    for a in studies.recipe_algorithms:
        stems.add(generalisation.figure_stem(a))
        if studies.drift_steps:
            stems.add(recipes.drift_figure_stem(a))
    committed = {p.stem for p in (ROOT / "figures").iterdir() if p.is_file()}
    assert stems <= committed, sorted(stems - committed)


def _sidecar(path: Path) -> Path:
    """A table's or array's sidecar is ``<name>.json``; a figure's ``<stem>.json``."""
    if path.parent.name == "figures":
        return path.with_suffix(".json")
    return files.sidecar_path(path)


def test_every_committed_file_names_the_notebook_that_wrote_it():
    """Each table, array and figure of the cpu profile came from ./run_all.sh.

    Its sidecar names a notebook of the catalogue (the runner sets it; a
    file a side script wrote says None, or has no sidecar).  results/gpu/ is
    the gpu job's, checked by the test above.
    """
    known = set(catalogue.stems().values())
    unnamed = {}
    for folder in ("results", "figures"):
        for path in sorted((ROOT / folder).iterdir()):
            if not path.is_file() or path.suffix == ".json" or path.name[0] == ".":
                continue
            sidecar = _sidecar(path)
            said = (
                files.read_json(sidecar).get("notebook") if sidecar.is_file() else None
            )
            if said not in known:
                unnamed[f"{folder}/{path.name}"] = said
    assert not unnamed, unnamed
