"""Every results file is named by the module that writes it, as committed.

The readers (paper.py, readme_results.py, the notebooks) take the names from
the writers; the committed ``results/`` and ``figures/`` say what the names
are.  So the writers' names, for the cpu profile's algorithms and arms, are
exactly the committed files: a renamed writer, or a file nobody names, fails.
"""

from __future__ import annotations

from pathlib import Path

from nar_gap.paper.experiments import (
    baselines,
    catalogue,
    causal_gap,
    closing_gap,
    compilation,
    generalisation,
    outputs,
    profiles,
    recipes,
    size_sweep,
    stability,
    transnar,
)
from nar_gap.paper.report.claims import CLAIMS
from nar_gap.paper.report.paper import comparison_file
from nar_gap.system import files, provenance

ROOT = Path(__file__).resolve().parents[3]
BFS_BF = ("bfs", "bellman_ford")
FAITHFULNESS_ARMS = ("bfs", "bellman_ford", "dfs", "bellman_ford_edge_info")
VALIDATION_ARMS = FAITHFULNESS_ARMS  # the baselines and the edge-information arm


def test_the_writers_name_exactly_the_committed_tables():
    committed = {
        p.name
        for p in (ROOT / "results").iterdir()
        if p.is_file() and not p.name.endswith(".json") and not p.name.startswith(".")
    }
    assert set(outputs.tables(profiles.CPU)) == committed


def test_the_gpu_profile_s_committed_tables_are_its_job_s_from_a_gpu():
    """results/gpu/ holds the gpu job's tables, each naming its notebook and a GPU.

    The job (benchmarks/results/gpu_h200_job_*) runs the profile's notebooks,
    02 and 03; a table nobody writes at that profile, one written on a CPU,
    or a sidecar naming another notebook (or none) fails; the paper-vs-ours
    tables may be rendered from them on a CPU.  The causal-gap
    section came after the job at 39c2445: its tables are the only ones
    that may be missing until the profile runs again.
    """
    folder = ROOT / profiles.committed_dirs("gpu").results
    tables = {p.name for p in folder.iterdir() if not p.name.endswith(".json")}
    writers = outputs.tables(profiles.GPU)
    later = {
        name
        for algorithm in profiles.GPU.causal_gap_algorithms
        for name in causal_gap.files_of(algorithm)
    }
    assert set(writers) - later <= tables <= set(writers)
    # The paper-vs-ours tables are computed from the others, by the rules of
    # the checkout that renders the job's archive (run_all.sh --results-from):
    # on any machine, as long as its notebook wrote them at this profile.
    rendered = {comparison_file(c.notebook) for c in CLAIMS}
    for name in tables:
        sidecar = files.read_json(folder / f"{name}.json")
        assert sidecar["profile"] == "gpu", name
        assert sidecar["notebook"] == writers[name], name
        if name not in rendered:
            assert sidecar["backend"]["platform"] == "gpu", name


def test_the_gpu_profile_s_figures_are_drawn_from_its_gpu_tables():
    """figures/gpu/ holds PNGs that notebooks 02 and 03 drew from the gpu
    job's tables (reading its archive: ``run_all.sh --results-from``): each
    sidecar names its notebook and the tables it was drawn from, and each of
    those is a table that notebook writes at the gpu profile, computed on a
    GPU.  A figure with no sidecar, or drawn from a table a CPU computed,
    fails."""
    dirs = profiles.committed_dirs("gpu")
    writers = outputs.tables(profiles.GPU)
    pngs = sorted((ROOT / dirs.figures).glob("*.png"))
    assert len(pngs) >= 4 * 10  # four arms of notebook 03, validation of 02
    for png in pngs:
        sidecar = files.read_json(files.sidecar_path(png.with_suffix("")))
        assert sidecar["formats"] == ["png"], png.name
        assert sidecar["drawn_from"], png.name
        for name in sidecar["drawn_from"]:
            assert writers[name] == sidecar["notebook"], (png.name, name)
            table = files.read_json(files.sidecar_path(ROOT / dirs.results / name))
            assert table["backend"]["platform"] == "gpu", (png.name, name)


def test_the_studies_profile_s_committed_tables_are_its_notebooks():
    """results/studies/ holds tables the studies profile's notebooks write,
    each naming that notebook and the profile.  Its notebooks take hours on
    2 cores and run one at a time (``--only``), so a table of a notebook
    not yet run, or not run to its end, may be missing; none may be foreign.
    """
    folder = ROOT / profiles.committed_dirs("studies").results
    tables = {p.name for p in folder.iterdir() if not p.name.endswith(".json")}
    writers = outputs.tables(profiles.STUDIES)
    assert tables and tables <= set(writers), sorted(tables - set(writers))
    for name in tables:
        sidecar = files.read_json(folder / f"{name}.json")
        assert sidecar["profile"] == "studies", name
        assert sidecar["notebook"] == writers[name], name


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
        stems |= {stability.figure_stem(a), transnar.FIGURE_STEM.format(a)}
    for a in profiles.CPU.closing_gap_algorithms:
        stems.add(closing_gap.figure_stem(a))
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
        return files.sidecar_path(path.with_suffix(""))
    return files.sidecar_path(path)


def test_every_committed_file_names_the_notebook_that_wrote_it():
    """Each table, array and figure of the cpu profile came from ./run_all.sh.

    Its sidecar names the notebook :mod:`~nar_gap.paper.experiments.outputs`
    says writes it (a figure's: a notebook of the catalogue); the runner
    sets the name, and a file a side script wrote says None, or has no
    sidecar.  results/gpu/ is the gpu job's, checked by the test above.
    """
    writers = outputs.tables(profiles.CPU)
    known = set(catalogue.stems().values())
    wrong = {}
    for folder in ("results", "figures"):
        for path in sorted((ROOT / folder).iterdir()):
            if not path.is_file() or path.suffix == ".json" or path.name[0] == ".":
                continue
            sidecar = _sidecar(path)
            said = (
                files.read_json(sidecar).get("notebook") if sidecar.is_file() else None
            )
            expected = writers.get(path.name) if folder == "results" else said
            if said not in known or said != expected:
                wrong[f"{folder}/{path.name}"] = said
    assert not wrong, wrong


def test_every_committed_result_was_computed_by_nar_gap_s_own_build():
    """No committed sidecar records the tests' build (or any foreign XLA
    switch): those change every trained number's last bits, so a file
    computed under them is not the run its profile documents.  The runner
    refuses such a build for results/; this catches a file copied in from a
    run elsewhere (the studies and gpu tables are)."""
    foreign = {}
    for folder in ("results", "figures"):
        for sidecar in sorted((ROOT / folder).rglob("*.json")):
            host = files.read_json(sidecar).get("host")
            if isinstance(host, dict) and provenance.foreign_build_settings(host):
                foreign[str(sidecar.relative_to(ROOT))] = host
    assert not foreign, foreign
