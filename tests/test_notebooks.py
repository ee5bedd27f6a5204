"""The notebooks: their own source (edited as notebooks, committed without
outputs, a ``parameters`` cell first), run top to bottom through papermill at the
smoke profile, checking what they write.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nar_gap.experiments import ablations, profiles
from nar_gap.experiments.faithfulness_study import FORCED_MEASURES, GAP_MEASURES
from nar_gap.system.files import read_table

# This file and test_ablations.py run in one pytest-xdist worker (--dist
# loadgroup): notebook 04 resumes the runs the ablation tests trained, and the
# six notebooks execute once per session.
pytestmark = pytest.mark.xdist_group("shared_runs")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXPECTED = [
    "01_compile",
    "02_baselines",
    "03_faithfulness",
    "04_ablations",
    "05_stability",
    "06_loss_landscapes",
    "07_closing_the_gap",
]


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def test_xdist_loadgroup_keeps_a_group_on_one_worker(tmp_path):
    """The installed pytest and pytest-xdist honour xdist_group: with pytest
    9.2.0 the group silently fell apart (pytest-dev/pytest-xdist#1386) and the
    six notebooks executed on both workers."""
    (tmp_path / "test_group.py").write_text(
        "import pytest\n"
        "pytestmark = pytest.mark.xdist_group('one')\n"
        "@pytest.mark.parametrize('i', range(6))\n"
        "def test_member(i):\n"
        "    pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2"]
        + ["--dist", "loadgroup", "-v", "-c", "/dev/null", "test_group.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    lines = [line for line in done.stdout.splitlines() if "PASSED" in line]
    assert len(lines) == 6, done.stdout[-2000:]
    assert len({line.split()[0] for line in lines}) == 1, lines  # one worker
    assert all(line.rstrip().endswith("@one") for line in lines), lines


def test_the_notebooks_are_there_in_run_order():
    assert [p.stem for p in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebooks_have_no_outputs_and_a_parameters_cell(path):
    _check_structure(path)


def _check_structure(path: Path) -> None:
    cells = _cells(path)
    code = [c for c in cells if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    tagged = [c for c in code if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1 and tagged[0] is code[0], "first code cell is `parameters`"
    source = "".join(tagged[0]["source"])
    compile(source, path.name, "exec")  # literals only: no imports, no calls
    assert "import" not in source and "(" not in source


# What a typed-in result looks like in prose: a number with two or more
# decimals, a percentage, or a sentence about what the paper finds.  Findings
# are the paper-vs-ours tables' job (nar_gap.experiments.paper), computed.
TYPED_RESULT = re.compile(
    r"the paper finds|the paper:|\d\.\d{2,}|\d+(?:\.\d+)? ?%|\bfinds? (?:no|none)\b",
    re.I,
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_notebook_types_in_a_result(path):
    for cell in _cells(path):
        if cell["cell_type"] == "markdown":
            found = TYPED_RESULT.search("".join(cell["source"]))
            assert found is None, f"{path.name}: typed-in result {found.group()!r}"


def test_the_typed_result_check_catches_the_old_prose():
    old = "The paper finds none for BFS (r = −0.055 internal, −0.124 external)."
    assert TYPED_RESULT.search(old)
    assert TYPED_RESULT.search("BFS reaches 99 % at N = 64")
    assert not TYPED_RESULT.search("radius 0.1 and 0.5, temperatures 0.5 and 0.1")


def test_a_notebook_saved_by_jupyterlab_passes_the_same_checks(tmp_path):
    """JupyterLab saves through jupyter_server's contents manager: an edited
    notebook saved that way (outputs cleared) is what a user commits."""
    import nbformat
    from jupyter_server.services.contents.filemanager import FileContentsManager

    notebook = nbformat.read(NOTEBOOKS[0], as_version=4)
    notebook.cells.insert(1, nbformat.v4.new_markdown_cell("A student's note."))
    manager = FileContentsManager(root_dir=str(tmp_path))
    manager.save({"type": "notebook", "format": "json", "content": notebook}, "n.ipynb")
    saved = tmp_path / "n.ipynb"
    _check_structure(saved)
    assert "A student's note." in saved.read_text()


# --------------------------------------------------------------------------- #
# Executed at the smoke profile, in order, sharing one runs directory with the
# module tests (runs are content-addressed: what they trained is resumed).
# --------------------------------------------------------------------------- #


class ExecutedNotebooks:
    """The seven notebooks at the smoke profile, each executed when a test first
    asks for it, after every notebook before it (run order: 03 reads the runs
    02 trained).  Executing on demand bounds a test's setup by the notebooks it
    reads: executing all seven in one fixture took 903 s on a slow CI machine,
    past pytest-timeout's 900 s, and failed all fifteen tests at once."""

    def __init__(self, runs: Path, out: Path):
        self.runs, self.out = runs, out
        self.results, self.figures = out / "results", out / "figures"
        self.failures: dict[str, str | None] = {}

    def _execute(self, path: Path) -> None:
        from nar_gap.experiments.notebook_runner import execute

        try:
            execute(
                path,
                self.out / path.name,
                parameters={
                    "PROFILE": "smoke",
                    "RUNS_DIR": str(self.runs),
                    "RESULTS_DIR": str(self.results),
                    "FIGURES_DIR": str(self.figures),
                },
                cwd=path.parent,
            )
            self.failures[path.stem] = None
        except Exception as error:  # keep going: each notebook's test reports its own
            self.failures[path.stem] = f"{type(error).__name__}: {error}"[:2000]

    def ran(self, name: str) -> tuple[Path, Path]:
        """``name`` and the notebooks before it executed; its results and figures."""
        for path in NOTEBOOKS[: EXPECTED.index(name) + 1]:
            if path.stem not in self.failures:
                self._execute(path)
        assert self.failures[name] is None, self.failures[name]
        return self.results, self.figures

    def copies(self) -> list[Path]:
        return sorted(self.out.glob("[0-9][0-9]_*.ipynb"))


# Session scope: under pytest-xdist the worker may run ablation tests between
# these, and a module-scoped fixture would then execute the notebooks again.
@pytest.fixture(scope="session")
def executed(shared_runs, tmp_path_factory) -> ExecutedNotebooks:
    return ExecutedNotebooks(shared_runs, tmp_path_factory.mktemp("notebooks"))


def _numbers(row: dict, keys: list[str]) -> list[float]:
    return [float(row[k]) for k in keys]


def test_01_compile_is_exact_and_draws_the_weights(executed):
    results, figures = executed.ran("01_compile")
    rows = read_table(results / "compiled_exactness.csv")
    assert rows and all(r["exact"] == "True" for r in rows), rows
    assert {r["algorithm"] for r in rows} == {"bfs", "bellman_ford", "dfs"}
    # numbered as the paper: Bellman-Ford's processor (6), its ends (7)
    assert (figures / "fig6_bellman_ford_weights.png").exists()
    assert (figures / "fig7_bellman_ford_encoders_decoders.pdf").exists()
    assert (figures / "fig_compiled_bfs_weights.png").exists()
    assert (figures / "fig_compiled_bfs_encoders_decoders.png").exists()
    assert (figures / "fig_compiled_dfs_attention.png").exists()
    witnesses = read_table(results / "locality_witnesses.csv")
    found = {
        (r["algorithm"], r["view"], r["steps_per_hint"])
        for r in witnesses
        if r["witness"] == "True"
    }
    expected = {("dfs", "graph program", "any"), ("dfs_light", "hard feedback", "1")}
    assert expected <= found
    assert ("dfs", "hard feedback", "1") not in found
    assert not {a for a, _, _ in found} & {"bfs", "bellman_ford"}


def test_02_baselines_table(executed):
    results, figures = executed.ran("02_baselines")
    for algorithm in ("bfs", "dfs", "bellman_ford"):
        history = read_table(results / f"validation_{algorithm}.csv")
        assert {int(r["seed"]) for r in history} == set(range(profiles.SMOKE.seeds))
        assert (figures / f"fig_validation_{algorithm}.png").exists()
    rows = read_table(results / "table10_baselines.csv")
    assert [r["algorithm"] for r in rows] == ["bfs", "dfs", "bellman_ford"]
    for row in rows:
        low, mean, high = _numbers(row, ["min", "mean", "max"])
        assert 0 <= low <= mean <= high <= 1
        assert (
            json.loads((results / "table10_baselines.csv.json").read_text())["profile"]
            == "smoke"
        )


def test_03_faithfulness_tables_and_figures(executed):
    results, figures = executed.ran("03_faithfulness")
    for algorithm in ("bfs", "bellman_ford", "dfs"):
        summary = read_table(results / f"faithfulness_summary_{algorithm}.csv")[0]
        assert float(summary["reference_internal"]) < 1e-6
        assert float(summary["reference_external"]) == 1.0
        assert 0 <= float(summary["closest_internal"]) <= 1
        assert int(summary["num_clusters"]) >= 1
        table = read_table(results / f"table1_correlations_{algorithm}.csv")
        assert [r["measure"] for r in table] == [
            *GAP_MEASURES,
            *FORCED_MEASURES,
            "external",
        ]
        points = read_table(results / f"faithfulness_reference_points_{algorithm}.csv")
        assert points[0]["point"] == "compiled"
        for number in (1, 2, 3, 4, 5, 10, 11):
            assert list(figures.glob(f"fig{number}_{algorithm}_*.png")), number


ABLATION_COLUMNS = [
    "experiment",
    "variant",
    "algorithm",
    "hidden_size",
    "steps",
    "seeds",
    "performance",
    "mean",
    "std",
    "max",
    "min",
    "test_num_nodes",
]


def test_04_ablation_tables(executed):
    results, _ = executed.ran("04_ablations")
    for name, experiment in ablations.experiments(profiles.get("smoke")).items():
        rows = read_table(results / f"{name}.csv")
        assert list(rows[0]) == ABLATION_COLUMNS, name
        assert [r["variant"] for r in rows] == [v.label for v in experiment.variants]
        for row in rows:
            low, mean, high = _numbers(row, ["min", "mean", "max"])
            assert 0 <= low <= mean <= high <= 1, (name, row)
            assert float(row["std"]) >= 0 and int(row["seeds"]) >= 1
            assert row["performance"].startswith(f"{mean:.3f} ± ")


def test_04_a_rerun_resumes_the_notebooks_runs_to_the_same_rows(executed, shared_runs):
    """Runs are content-addressed: the notebook's finished runs are resumed,
    not trained again, and give the rows it wrote.  One table in CI (every
    table shares the mechanism; test_train checks resume run by run)."""
    results, _ = executed.ran("04_ablations")
    name = "table14_no_hints"
    experiment = ablations.experiments(profiles.get("smoke"))[name]
    again = ablations.run_experiment(experiment, shared_runs, progress=False)
    written = read_table(results / f"{name}.csv")
    assert [{k: str(v) for k, v in row.items()} for row in again] == written


@pytest.mark.parametrize("number", ["03", "04", "05", "06"])
def test_each_study_notebook_ends_with_the_paper_against_ours(executed, number):
    name = next(p.stem for p in NOTEBOOKS if p.stem.startswith(number))
    results, _ = executed.ran(name)
    rows = read_table(results / f"paper_vs_ours_{number}.csv")
    assert rows and all(
        r["verdict"] in {"agree", "disagree", "not comparable"} for r in rows
    ), rows


def test_the_readme_section_renders_from_a_full_run(executed):
    """The six notebooks write every file the README's results section reads."""
    from nar_gap.experiments import readme_results

    results, _ = executed.ran(EXPECTED[-1])
    section = readme_results.render(results)
    # The size sweep is its own 30-minute job, not a notebook: only its files
    # may be missing here.
    missing = re.findall(r"\(no `([^`]+)` yet", section)
    assert missing and all(name.startswith("compiled_") for name in missing), section
    assert "Reference points (notebook 03)" in section


def test_05_stability_tables(executed):
    results, figures = executed.ran("05_stability")
    for algorithm in ("bfs", "bellman_ford"):
        rows = read_table(results / f"table16_stability_{algorithm}.csv")
        first = rows[0]
        assert first["start"] == "compiled" and int(first["step"]) == 0
        assert float(first["accuracy_mean"]) == 1.0
        assert (figures / f"fig_stability_{algorithm}.png").exists()


def test_06_landscape_tables(executed):
    results, figures = executed.ran("06_loss_landscapes")
    for algorithm in ("bfs", "bellman_ford"):
        rows = read_table(results / f"landscape_{algorithm}.csv")
        assert [r["centre"] for r in rows] == ["compiled", "learned", "initial"]
        assert float(rows[0]["centre_loss"]) < 1e-4
        assert (figures / f"fig_landscape_{algorithm}_compiled.png").exists()
    # DFS has no graph program: its planes go through learned and initial only
    rows = read_table(results / "landscape_dfs.csv")
    assert [r["centre"] for r in rows] == ["learned", "initial"]
    assert (figures / "fig_landscape_dfs_learned.png").exists()


@pytest.mark.parametrize("algorithm", ["bfs", "bellman_ford"])
def test_07_closing_the_gap_table(executed, algorithm):
    from nar_gap.experiments import closing_gap

    results, figures = executed.ran("07_closing_the_gap")
    rows = read_table(results / f"closing_gap_{algorithm}.csv")
    assert [r["variant"] for r in rows] == ["compiled", *closing_gap.VARIANTS]
    compiled = rows[0]
    assert float(compiled["internal"]) == 0.0
    assert float(compiled["argmax_agreement"]) == 1.0
    assert float(compiled["accuracy"]) == 1.0
    for row in rows:
        for size in profiles.SMOKE.generalisation_sizes:
            assert 0.0 <= float(row[f"accuracy_n{size}"]) <= 1.0
        assert float(row["sharpness"]) == float(row["sharpness"])  # not NaN
    steps = {r["variant"]: int(r["steps"]) for r in rows}
    assert steps["long"] == steps["plain"] * profiles.SMOKE.closing_gap_long_factor
    curves = read_table(results / f"closing_gap_validation_{algorithm}.csv")
    assert {r["variant"] for r in curves} == set(closing_gap.VARIANTS)
    # long is plain continued: its curve holds plain's validations, then its own
    long_steps = {int(r["step"]) for r in curves if r["variant"] == "long"}
    plain_steps = {int(r["step"]) for r in curves if r["variant"] == "plain"}
    assert plain_steps < long_steps and max(long_steps) == steps["long"]
    over_time = read_table(results / f"closing_gap_over_time_{algorithm}.csv")
    assert {r["variant"] for r in over_time} == {"compiled", *closing_gap.VARIANTS}
    for row in over_time:
        assert {row["measure"], row["clock"]} in (
            {"external", "uniform"},
            {"internal", "step"},
        )
        if row["variant"] == "compiled":  # exact at every point of its own trace
            assert float(row["mean"]) == (row["measure"] == "external")
    sidecar = json.loads((results / f"closing_gap_{algorithm}.csv.json").read_text())
    assert sidecar["verdict"] == closing_gap.verdict(
        [
            {
                **r,
                **{
                    k: float(r[k]) for k in ("internal", "argmax_agreement", "accuracy")
                },
            }
            for r in rows
        ]
    )
    assert (figures / f"fig_closing_gap_{algorithm}.png").exists()


def test_run_all_rejects_bad_arguments():
    for args, words in (
        (["--profile", "huge"], "unknown profile"),
        (["--only", "99"], "no notebook matches"),
        (["--only", "abc"], "--only takes a notebook number"),
        (["--out"], "--out needs a value"),
        (["--bogus"], "unknown argument"),
    ):
        done = subprocess.run(
            [str(ROOT / "run_all.sh"), *args], capture_output=True, text=True
        )
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr  # one line, nothing before


def _stderr_lines(notebook: Path) -> list[str]:
    """What the cells wrote to stderr, progress bars left out."""
    lines = []
    for cell in _cells(notebook):
        for output in cell.get("outputs", []):
            if output.get("name") == "stderr":
                text = "".join(output["text"]).replace("\r", "\n")
                lines += [line for line in text.splitlines() if "|" not in line]
    return [line for line in lines if line.strip()]


def test_the_executed_notebooks_print_no_warning_and_no_error(executed):
    executed.ran(EXPECTED[-1])
    for failure in executed.failures.values():
        assert failure is None, failure
    for path in executed.copies():
        noisy = [
            line
            for line in _stderr_lines(path)
            if any(w in line for w in ("Warning", "WARNING", "Error", "ERROR"))
        ]
        assert not noisy, (path.name, noisy[:5])


def test_the_notebook_runner_starts_kernels_without_the_tcp_warning(tmp_path):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "nar-gap",
        "display_name": "nar_gap",
        "language": "python",
    }
    cell = nbformat.v4.new_code_cell("X = 1")
    cell.metadata["tags"] = ["parameters"]
    notebook.cells = [cell, nbformat.v4.new_code_cell('print(X + "1")')]
    nbformat.write(notebook, tmp_path / "t.ipynb")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nar_gap.experiments.notebook_runner",
            "t.ipynb",
            "out.ipynb",
        ]
        + ["--cwd", str(tmp_path), "-p", "X", "41"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "without encryption" not in done.stderr
        and "KeyboardInterrupt" not in done.stderr
    )
    outputs = _cells(tmp_path / "out.ipynb")[-1]["outputs"]
    assert "".join(outputs[0]["text"]).strip() == "411"  # papermill passes strings


@pytest.mark.slow
def test_run_all_skips_a_notebook_only_while_its_files_are_current(tmp_path):
    """Skipped when it ran with the same inputs and its files are unchanged;
    run again when a file it wrote was replaced (say by another profile's).
    """

    def run_01():
        done = subprocess.run(
            [str(ROOT / "run_all.sh"), "--profile", "smoke", "--only", "01"]
            + ["--out", str(tmp_path)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return "01_compile: skipped" in done.stdout

    assert not run_01()
    assert run_01()
    table = tmp_path / "results" / "compiled_exactness.csv"
    table.write_text(table.read_text().replace("True", "False", 1))
    assert not run_01()
    assert "False" not in table.read_text()
    assert run_01()
