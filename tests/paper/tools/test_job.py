"""``nar-gap job``: the notebooks as scripts, resumable, and one archive (issue 48).

Tiny notebooks in a temporary checkout stand in for the real ones here; the
real notebooks run as a job at the smoke profile in the rehearsals (02 and 03
in CI, every notebook in the slow one), and every notebook renders the
committed cpu results.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import tarfile
from pathlib import Path

import pytest

from nar_gap.paper.experiments import catalogue, profiles
from nar_gap.paper.tools import job

ROOT = Path(__file__).resolve().parents[3]

_PARAMETERS = (
    'PROFILE = "cpu"\nRUNS_DIR = ""\nRESULTS_DIR = ""\nFIGURES_DIR = ""\nSTEPS = 3\n'
)
_MAIN = """
import pathlib
from nar_gap.system import files
results = pathlib.Path(RESULTS_DIR)
files.write_table(results / "steps.csv", [{"profile": PROFILE, "steps": STEPS}])
"""
_FIGURE = """
pathlib.Path(FIGURES_DIR).mkdir(parents=True, exist_ok=True)
(pathlib.Path(FIGURES_DIR) / "fig.png").write_bytes(b"png")
(pathlib.Path(FIGURES_DIR) / "fig.pdf").write_bytes(b"pdf")
(pathlib.Path(FIGURES_DIR) / "fig.json").write_text('{"notebook": "02_baselines"}')
"""


def _cell(source: str, tags: tuple[str, ...] = ()) -> dict:
    return {
        "cell_type": "code",
        "metadata": {"tags": list(tags)},
        "source": source.splitlines(keepends=True),
        "outputs": [],
        "execution_count": None,
    }


def _checkout(tmp_path: Path, *extra: dict) -> Path:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# A notebook"]},
        _cell(_PARAMETERS, ("parameters",)),
        _cell(_MAIN),
        _cell("raise RuntimeError('a teaching cell ran')", ("companion",)),
        _cell("raise RuntimeError('an exercise ran')", ("hands-on",)),
        _cell("raise RuntimeError('a solution ran')", ("solution",)),
        _cell(_FIGURE),
        *extra,
    ]
    root = tmp_path / "checkout"
    (root / "notebooks").mkdir(parents=True)
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "notebooks" / "02_tiny.ipynb").write_text(json.dumps(notebook))
    return root


def _dirs(tmp_path: Path) -> profiles.OutputDirs:
    out = tmp_path / "out"
    return profiles.OutputDirs(out / "runs", out / "results", out / "figures")


def test_the_job_runs_the_main_cells_with_the_profile_put_in(tmp_path):
    root, dirs = _checkout(tmp_path), _dirs(tmp_path)
    written = job.run_job("smoke", dirs, ["02"], root=root)
    (row,) = json.loads(json.dumps(_rows(dirs.results / "steps.csv")))
    assert row == {"profile": "smoke", "steps": "3"}  # STEPS: the cell's default
    record = json.loads(written.read_text())
    assert record["profile"] == "smoke" and set(record["seconds"]) == {"02"}
    assert record["host_peak_rss_bytes"] > 0 and "versions" in record


def _rows(path: Path) -> list[dict]:
    from nar_gap.system.files import read_table

    return read_table(path)


def test_a_finished_notebook_is_skipped_on_a_rerun_unless_forced(tmp_path, capsys):
    root, dirs = _checkout(tmp_path), _dirs(tmp_path)
    job.run_job("smoke", dirs, ["02"], root=root)
    (dirs.results / "steps.csv").unlink()
    job.run_job("smoke", dirs, ["02"], root=root)
    assert "finished before" in capsys.readouterr().out
    assert not (dirs.results / "steps.csv").exists()
    other = profiles.OutputDirs(dirs.runs, tmp_path / "elsewhere", dirs.figures)
    job.run_job("smoke", other, ["02"], root=root)  # the stamp names other results
    assert (other.results / "steps.csv").exists()
    job.run_job("smoke", dirs, ["02"], root=root, force=True)
    assert (dirs.results / "steps.csv").exists()


def test_a_failing_cell_stops_the_job_in_one_line_naming_it(tmp_path):
    root = _checkout(tmp_path, _cell("1 / 0"))
    with pytest.raises(job.JobError) as raised:
        job.run_job("smoke", _dirs(tmp_path), ["02"], root=root)
    message = str(raised.value)
    assert message.startswith("02_tiny[cell 7] failed: ZeroDivisionError")
    assert "\n" not in message
    with pytest.raises(job.JobError, match="no notebook 05"):
        job.run_job("smoke", _dirs(tmp_path), ["05"], root=root)


_CUT_ONCE = """
import os, signal, time
flag = pathlib.Path(RESULTS_DIR) / "cut-once"
if not flag.exists():
    flag.write_text("")
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGTERM)  # what timeout or a scheduler sends
    time.sleep(30)
"""


def test_a_cut_job_records_its_attempt_and_the_rerun_adds_it(tmp_path, capsys):
    """SIGTERM inside a cell: the attempt's time and cell are kept, not lost.

    The first GPU run was cut twice by its time limit and its stamp said
    173 s for a notebook that took 708 s (benchmarks/results/gpu_h200_job_*).
    """
    root, dirs = _checkout(tmp_path, _cell(_CUT_ONCE)), _dirs(tmp_path)
    with pytest.raises(job.JobCut) as raised:
        job.run_job("smoke", dirs, ["02"], root=root)
    assert "02_tiny stopped by SIGTERM in cell 7 after" in str(raised.value)
    cut = json.loads((dirs.runs / "job" / "02.cut.json").read_text())
    (attempt,) = cut["attempts"]
    assert attempt["seconds"] >= 0.2 and set(attempt["cells"]) == {
        "cell 2",
        "cell 6",
        "cell 7",
    }
    record = json.loads((dirs.results / job.JOB_FILE).read_text())
    assert record["notebooks"] == [] and "SIGTERM" in record["cut"]
    assert not (dirs.runs / "job" / "02.json").exists()

    job.run_job("smoke", dirs, ["02"], root=root)  # goes on: the flag is set
    stamp = json.loads((dirs.runs / "job" / "02.json").read_text())
    assert len(stamp["attempts"]) == 2
    assert stamp["seconds"] == pytest.approx(sum(stamp["attempts"]))
    assert stamp["seconds"] >= attempt["seconds"]
    assert not (dirs.runs / "job" / "02.cut.json").exists()
    record = json.loads((dirs.results / job.JOB_FILE).read_text())
    assert record["cut"] is None and record["seconds"]["02"] == stamp["seconds"]
    assert "(2 attempts)" in capsys.readouterr().out


def test_the_cli_archives_what_finished_when_the_job_is_cut(tmp_path, monkeypatch):
    from nar_gap import cli

    def cut(*args, **kwargs):
        results = tmp_path / "out" / "results"
        results.mkdir(parents=True)
        (results / job.JOB_FILE).write_text("{}")
        raise job.JobCut("02_baselines stopped by SIGTERM in cell 9 after 535 s")

    monkeypatch.setattr(job, "run_job", cut)
    archive = tmp_path / "gpu.tar.gz"
    argv = ["job", "--profile", "smoke", "--out", str(tmp_path / "out")]
    assert cli.main([*argv, "--archive", str(archive)]) == cli.EXIT_CUT
    with tarfile.open(archive) as tar:
        assert tar.getnames() == ["results/job.json"]


def test_the_archive_holds_results_pngs_and_their_sidecars_within_its_limit(
    tmp_path,
):
    root, dirs = _checkout(tmp_path), _dirs(tmp_path)
    job.run_job("smoke", dirs, ["02"], root=root)
    archive = job.write_archive(dirs, tmp_path / "a.tar.gz")
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert names == {
        "results/steps.csv",
        "results/steps.csv.json",
        f"results/{job.JOB_FILE}",
        "figures/fig.png",
        "figures/fig.json",
    }
    with pytest.raises(job.JobError, match="over the 0 MiB limit"):
        job.write_archive(dirs, tmp_path / "b.tar.gz", limit=10)
    assert not (tmp_path / "b.tar.gz").exists()
    elsewhere = profiles.OutputDirs(tmp_path / "r", tmp_path / "r2", tmp_path / "f2")
    unpacked = job.unpack_archive(archive, elsewhere)
    assert {p.relative_to(tmp_path).as_posix() for p in unpacked} >= {
        "r2/steps.csv",
        "f2/fig.png",
        "f2/fig.json",
    }
    assert (elsewhere.results / "steps.csv").read_bytes() == (
        dirs.results / "steps.csv"
    ).read_bytes()


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_unpacking_refuses_what_a_job_did_not_write(tmp_path):
    dirs = _dirs(tmp_path)
    bad = {
        "escape": {"results/../../x": b"", "results/job.json": b"{}"},
        "elsewhere": {"home/x": b""},
        "no job.json": {"results/x.csv": b"a\n"},
    }
    for what, members in bad.items():
        with pytest.raises(job.JobError) as raised:
            job.unpack_archive(_tar(tmp_path / f"{what}.tar.gz", members), dirs)
        assert "\n" not in str(raised.value), what
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(job.JobError, match="is not a job archive"):
        job.unpack_archive(tmp_path / "junk.tar.gz", dirs)
    assert not (tmp_path / "x").exists()


def _names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Names a cell stores or imports, and names it loads."""
    stored, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (stored if isinstance(node.ctx, ast.Store) else loaded).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stored |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
    return stored, loaded


def test_no_main_cell_of_a_notebook_reads_a_name_only_a_teaching_cell_sets():
    """The job skips the teaching cells, and so may a reader: nothing after needs them.

    Seen failing: notebook 01's Bellman-Ford cell read ``bf`` from a
    companion cell, and 03's long-trace cell ``read_table`` from an exercise.
    """
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        notebook = job.script(path)
        known = set(dir(builtins)) | _names(ast.parse(notebook.parameters))[0]
        for index, source in notebook.cells:
            stored, loaded = _names(ast.parse(source))
            missing = loaded - known - stored
            assert not missing, f"{path.name} cell {index} reads {sorted(missing)}"
            known |= stored


@pytest.mark.slow
def test_run_all_renders_every_notebook_from_an_archive(tmp_path):
    """``./run_all.sh --results-from``: every notebook on an archive, no training.

    The archive holds the committed cpu results (what a job's archive holds,
    with a ``job.json``).  Nothing may be trained (the runs folder stays
    empty), the tables read back are left as they were, and every cell that
    needs trained parameters says so instead of running.  Seen failing with
    ``run_baselines`` ignoring ``dirs.reading``: it trained.

    Slow: eight kernels beside CI's other worker, 92 s of CI.  Per push the
    rehearsal below renders a job's archive through the same ``run_all.sh
    --results-from`` (notebook 02, whose cells need trained parameters), and
    the smoke chain executes every notebook's cells.
    """
    import shutil
    import subprocess

    from nar_gap.paper.report.notebook import NEEDS_RUNS

    source = profiles.OutputDirs(tmp_path / "r", tmp_path / "res", tmp_path / "fig")
    shutil.copytree(ROOT / "results", source.results)
    shutil.copytree(ROOT / "figures", source.figures)
    (source.results / job.JOB_FILE).write_text('{"profile": "cpu"}')
    archive = job.write_archive(source, tmp_path / "cpu.tar.gz")
    out, runs = tmp_path / "out", tmp_path / "runs"
    done = subprocess.run(
        [str(ROOT / "run_all.sh"), "--results-from", str(archive), "--out", str(out)]
        + ["--runs", str(runs), "--jobs", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not any(runs.rglob("*")), "reading results trained something"
    read_back = ("table10_baselines.csv", "validation_bfs.csv", "faithfulness_bfs.csv")
    read_back += ("table11_edge_info.csv", "stability_bfs.csv", "landscape_bfs.csv")
    read_back += ("closing_gap_bfs.csv", "compiled_exactness.csv")
    read_back += ("compiled_minimal.csv", "locality_witnesses.csv")
    read_back += ("transnar_bfs.csv", "transnar_question.csv")
    for name in read_back:
        assert (out / "results" / name).read_bytes() == (
            source.results / name
        ).read_bytes(), name
    for number in catalogue.numbers():
        executed = json.loads(
            next((out / "notebooks").glob(f"{number}_*.ipynb")).read_text()
        )
        marked = [
            c
            for c in executed["cells"]
            if c["cell_type"] == "code" and "".join(c["source"]).startswith(NEEDS_RUNS)
        ]
        assert bool(marked) == (number in ("02", "03", "06", "08")), number
        for cell in marked:
            text = "".join("".join(o.get("text", "")) for o in cell["outputs"])
            assert "this cell needs trained parameters" in text, number
        compared = (out / "results" / f"paper_vs_ours_{number}.csv").is_file()
        assert compared == (number not in catalogue.numbers(catalogue.BEYOND)), number


NO_JUPYTER = "IPython,ipykernel,jupyter_client,nbclient,nbformat,papermill"


def _rehearse(tmp_path: Path, runs: Path, numbers: tuple[str, ...] = ()) -> None:
    """Issue 48's rehearsal: the job as on a GPU node, then its archive rendered.

    The job runs ``numbers`` (every notebook: ``()``) at the smoke profile in
    processes that cannot import TensorFlow, IPython, Jupyter or papermill,
    training into ``runs``; its archive then goes to ``./run_all.sh
    --results-from``, which must train nothing (its runs folder stays empty)
    and compute the same paper-vs-ours tables from the same results.
    """
    import os
    import subprocess
    import sys

    from blocked_imports import without_tensorflow

    env = {**without_tensorflow(os.environ), "NAR_GAP_BLOCK_ALSO": NO_JUPYTER}
    env["MPLBACKEND"] = "Agg"
    refused = subprocess.run(
        [sys.executable, "-c", "import IPython"], env=env, capture_output=True
    )
    assert refused.returncode != 0  # the node's environment, as far as imports go
    nar_gap = str(Path(sys.executable).with_name("nar-gap"))
    job_out, archive = tmp_path / "job", tmp_path / "smoke.tar.gz"
    chosen = ["--only", *numbers] if numbers else []
    ran = subprocess.run(
        [nar_gap, "job", "--profile", "smoke", *chosen]
        + ["--out", str(job_out), "--runs", str(runs), "--archive", str(archive)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert archive.stat().st_size <= job.ARCHIVE_LIMIT_BYTES
    record = json.loads((job_out / "results" / job.JOB_FILE).read_text())
    every = list(catalogue.numbers())
    assert sorted(record["seconds"]) == sorted(numbers or every)
    render, no_runs = tmp_path / "render", tmp_path / "no_runs"
    only = [arg for number in numbers for arg in ("--only", number)]
    shown = subprocess.run(
        [str(ROOT / "run_all.sh"), "--profile", "smoke", "--results-from"]
        + [str(archive), "--out", str(render), "--runs", str(no_runs), "--jobs", "1"]
        + only,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert shown.returncode == 0, shown.stdout[-3000:] + shown.stderr[-3000:]
    assert not any(no_runs.rglob("*"))
    for number in numbers or every:
        assert any((render / "notebooks").glob(f"{number}_*.ipynb")), number
        name = f"paper_vs_ours_{number}.csv"
        if number not in catalogue.numbers(catalogue.BEYOND):
            assert (render / "results" / name).read_text() == (
                job_out / "results" / name
            ).read_text(), name


@pytest.mark.xdist_group("chain_baselines")
def test_the_gpu_job_s_first_notebook_runs_without_jupyter_and_its_archive_renders(
    tmp_path, shared_runs
):
    """The rehearsal in CI: notebook 02, the first the gpu profile's job runs.

    On the session's shared runs, in the worker of the notebook chain that
    trains them: whichever of the two comes first trains, the other resumes.
    CI's 15 minutes have no room for more (02 and 03 took 68 s in CI); the
    whole smoke job of every notebook, on runs of its own, is the slow test
    below, and so is every notebook rendering the cpu archive (above).
    """
    assert profiles.GPU.notebooks[0] == "02"
    _rehearse(tmp_path, shared_runs, ("02",))


@pytest.mark.slow
def test_the_whole_smoke_job_runs_without_jupyter_and_every_notebook_renders(
    tmp_path,
):
    """Issue 48's acceptance run: every notebook as a job, then all rendered.

    About 5 minutes of job (every notebook trains its own runs) and 2 of
    rendering on 2 cores.
    """
    _rehearse(tmp_path, tmp_path / "runs")
