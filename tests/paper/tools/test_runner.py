"""The runner behind ``./run_all.sh``: its parts, on constructed inputs.

tests/project/test_run_all.py runs the whole of it on tiny notebooks
(scheduling side by side, stamps, failures); these check each rule alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import nar_gap
from nar_gap.paper.experiments import profiles
from nar_gap.paper.tools import notebook_runner, runner

ROOT = Path(__file__).resolve().parents[3]


def _notebook(folder: Path, stem: str, **meta) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}.ipynb"
    cells = [{"cell_type": "code", "source": "FROM_RESULTS = False\n", "metadata": {}}]
    path.write_text(json.dumps({"cells": cells, "metadata": {"nar_gap": meta}}))
    return path


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--profile", "huge"], "unknown profile 'huge'"),
        (["--only", "abc"], "--only takes a notebook number"),
        (["--out"], "--out needs a value"),
        (["--bogus"], "unknown argument '--bogus'"),
        (["--jobs", "0"], "--jobs takes a number"),
        (["--jobs", "two"], "--jobs takes a number"),
    ],
)
def test_a_bad_argument_is_one_line(argv, words):
    with pytest.raises(runner.UsageError) as error:
        runner.parse(argv, {})
    assert words in str(error.value) and "\n" not in str(error.value)


def test_every_profile_is_accepted_by_name_and_as_a_dry_run():
    for name in profiles.PROFILES:
        assert runner.parse(["--profile", name], {}).profile == name
        dry = runner.parse(["--profile", name, "--dry-run"], {}).profile
        assert dry == name + profiles.DRY_SUFFIX
        assert runner.parse(["--profile", dry], {}).profile == dry
    assert runner.parse([], {"PROFILE": "smoke"}).profile == "smoke"
    assert runner.parse([], {}).profile == profiles.DEFAULT_PROFILE


def test_only_takes_numbers_and_pads_them():
    options = runner.parse(["--only", "3", "--only=04"], {})
    assert options.only == ("03", "04")


def test_two_notebooks_at_once_on_two_cores_one_on_an_accelerator():
    assert runner.default_jobs("cpu", 2) == 2
    assert runner.default_jobs("cpu", 1) == 1
    assert runner.default_jobs("gpu", 16) == 1
    assert runner.default_jobs("paper-dry", 16) == 1
    assert runner.parse(["--jobs", "3"], {}).jobs == 3
    assert runner.parse([], {"NAR_GAP_JOBS": "1"}).jobs == 1


def test_over_several_processes_all_run_one_at_a_time_and_only_0_writes_here():
    asked = runner.Options(profile="paper")
    assert runner.for_processes(asked, {}) == asked
    first = runner.for_processes(asked, {"NAR_GAP_COORDINATOR": "h:1"})
    assert (first.jobs, first.force, first.out) == (1, True, "")
    other = runner.for_processes(
        asked, {"NAR_GAP_COORDINATOR": "h:1", "NAR_GAP_PROCESS_ID": "2"}
    )
    assert other.out == "build/paper/process-2"


def test_the_higher_priority_starts_first_then_number_order(tmp_path):
    folder = tmp_path / "notebooks"
    _notebook(folder, "01_a")
    _notebook(folder, "02_b", needs=["01_a"])
    _notebook(folder, "03_c", needs=["01_a"], priority=1)
    names = [n.stem for n in runner.select(folder, (), reading=False)]
    assert names == ["03_c", "01_a", "02_b"]
    assert [n.stem for n in runner.select(folder, ("02",), False)] == ["02_b"]
    with pytest.raises(runner.UsageError, match="no notebook matches"):
        runner.select(folder, ("99",), False)


def test_reading_refuses_a_notebook_that_would_train(tmp_path):
    folder = tmp_path / "notebooks"
    _notebook(folder, "01_a")
    (folder / "02_b.ipynb").write_text(json.dumps({"cells": [], "metadata": {}}))
    assert runner.select(folder, ("01",), reading=False)
    with pytest.raises(runner.UsageError, match="no FROM_RESULTS parameter"):
        runner.select(folder, (), reading=True)


def test_a_need_that_is_not_a_notebook_is_refused(tmp_path):
    path = _notebook(tmp_path / "notebooks", "01_a", needs=["00_missing"])
    with pytest.raises(runner.UsageError, match="needs '00_missing'"):
        runner.needs_of(path)


def test_a_stamp_holds_while_inputs_and_written_files_are_unchanged(tmp_path):
    source = tmp_path / "nar_gap"
    source.mkdir()
    (source / "m.py").write_text("x = 1\n")
    notebook = _notebook(tmp_path / "notebooks", "01_a")
    inputs = runner.inputs_of(notebook, ("cpu", "r", "f"), source)
    assert inputs != runner.inputs_of(notebook, ("smoke", "r", "f"), source)
    table = tmp_path / "results" / "t.csv"
    table.parent.mkdir()
    table.write_text("a\n1\n")
    log = tmp_path / "written"
    log.write_text(f"{table}\n{tmp_path / 'elsewhere.csv'}\n{table}\n")
    written = runner.written_files(log, [table.parent])
    assert len(written) == 1 and written[0].endswith(str(table))
    stamp = tmp_path / "01_a.stamp"
    stamp.write_text("\n".join([inputs, *written]) + "\n")
    assert runner.up_to_date(stamp, inputs)
    (source / "m.py").write_text("x = 2\n")  # the package changed
    assert not runner.up_to_date(
        stamp, runner.inputs_of(notebook, ("cpu", "r", "f"), source)
    )
    table.write_text("a\n2\n")  # a file it wrote changed
    assert not runner.up_to_date(stamp, inputs)
    table.unlink()
    assert not runner.up_to_date(stamp, inputs)
    assert not runner.up_to_date(tmp_path / "none.stamp", inputs)


def test_the_failing_cell_is_named_or_the_dead_kernel_said(tmp_path):
    executed = tmp_path / "x.ipynb"
    error = {"output_type": "error", "ename": "ValueError", "evalue": "a broke"}
    cells = [
        {"cell_type": "code", "source": "ok = 1", "outputs": []},
        {"cell_type": "code", "source": "raise ValueError()", "outputs": [error]},
    ]
    executed.write_text(json.dumps({"cells": cells}))
    assert runner.failed_cell(executed) == (
        "cell 1 ('raise ValueError()'): ValueError: a broke"
    )
    started = {"papermill": {"start_time": "t"}}
    cells = [
        {"cell_type": "code", "source": "train()", "outputs": [], "metadata": started}
    ]
    executed.write_text(json.dumps({"cells": cells}))
    assert "the kernel died while running it" in runner.failed_cell(executed)
    assert runner.failed_cell(tmp_path / "missing.ipynb").startswith("start")


def test_the_changed_files_are_listed(tmp_path, capsys):
    (tmp_path / "a.csv").write_text("1")
    before = runner.fingerprint([tmp_path])
    (tmp_path / "a.csv").write_text("2")
    (tmp_path / "b.csv").write_text("3")
    (tmp_path / "c.tmp").write_text("4")  # a temporary is no result
    runner.report_changes(before, runner.fingerprint([tmp_path]), tmp_path)
    assert capsys.readouterr().out.splitlines() == [
        "nar_gap: new or changed files:",
        "  a.csv",
        "  b.csv",
    ]


def test_a_foreign_build_is_refused_results_and_noted_elsewhere(tmp_path):
    """run_tests.sh's switches left in a shell would rewrite every committed
    number's last bits: refused in one line where the run would write
    results/, a one-line note anywhere else, nothing without them."""
    tests_build = {"JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}
    committed = runner.Runner(runner.parse([], {}), tmp_path, {})
    elsewhere = runner.Runner(
        runner.parse(["--out", str(tmp_path / "o")], {}), tmp_path, {}
    )
    smoke = runner.Runner(runner.parse(["--profile", "smoke"], {}), tmp_path, {})
    assert committed.writes_committed
    assert not elsewhere.writes_committed and not smoke.writes_committed
    assert runner.build_note(True, {}) == ""
    with pytest.raises(runner.UsageError) as error:
        runner.build_note(True, tests_build)
    message = str(error.value)
    assert "\n" not in message
    assert "env -u JAX_DISABLE_MOST_OPTIMIZATIONS ./run_all.sh" in message
    note = runner.build_note(False, tests_build)
    assert "JAX_DISABLE_MOST_OPTIMIZATIONS='1'" in note and "\n" not in note


def test_a_kernel_that_imports_another_checkout_is_refused_in_one_line(
    tmp_path, monkeypatch, capsys
):
    """A checkout whose .venv is another's runs the other's nar_gap in every
    notebook (the kernel imports through the venv's editable install) and
    names the other's commit in every sidecar.  The kernel's own python is
    asked where it finds nar_gap: here, this checkout, which a runner that
    imported nar_gap elsewhere refuses; and run_all.sh stops before any
    notebook, before making any output folder.  Seen failing with the check
    left out of ``main``, and with it after the output folders are made."""
    here = Path(nar_gap.__file__).parent
    notebooks = ROOT / runner.NOTEBOOKS_DIR
    assert notebook_runner.kernel_package(notebooks) == here.resolve()
    notebook_runner.check_kernel_package(here, notebooks)
    elsewhere = tmp_path / "other-checkout" / "nar_gap"
    with pytest.raises(ValueError) as error:
        notebook_runner.check_kernel_package(elsewhere, notebooks)
    message = str(error.value)
    assert "\n" not in message
    assert str(here.resolve()) in message and str(elsewhere) in message
    _notebook(tmp_path / "notebooks", "01_a")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(notebook_runner, "kernel_package", lambda cwd: elsewhere)
    monkeypatch.setattr(runner.signal, "signal", lambda *args: None)  # pytest's
    assert runner.main(["--profile", "smoke"]) == runner.EXIT_USAGE
    said = capsys.readouterr().err.strip()
    assert said.startswith("nar_gap: the notebooks' kernel") and "\n" not in said
    assert not (tmp_path / "build").exists()  # no notebook, no output folder


def test_the_scheduler_starts_ready_notebooks_in_select_s_order(tmp_path, monkeypatch):
    """With one lane, of the notebooks ready at once the higher priority
    starts first: 03_c before 02_b, both waiting for 01_a.  Each notebook is
    a python that writes its name (``test_run_all.py`` shows the same with
    kernels and ``run_all.sh``, under ``-m slow``)."""
    folder = tmp_path / "notebooks"
    _notebook(folder, "01_a")
    _notebook(folder, "02_b", needs=["01_a"])
    _notebook(folder, "03_c", needs=["01_a"], priority=1)
    started = tmp_path / "started.txt"

    def command(self, notebook: Path, executed: Path) -> list[str]:
        line = f"open({str(started)!r}, 'a').write({notebook.stem!r} + ' ')"
        return [sys.executable, "-c", line]

    monkeypatch.setattr(runner.Runner, "_command", command)
    argv = ["--profile", "smoke", "--out", str(tmp_path / "out"), "--jobs", "1"]
    scheduler = runner.Runner(runner.parse(argv, {}), tmp_path, {})
    notebooks = runner.select(folder, (), reading=False)
    assert (
        scheduler.run(notebooks, {n.stem: runner.needs_of(n) for n in notebooks}) == 0
    )
    assert started.read_text().split() == ["01_a", "03_c", "02_b"]
