"""notebook.setup: what every notebook's setup cell calls, in the order it needs."""

from __future__ import annotations

from types import SimpleNamespace

from nar_gap.paper.experiments import profiles
from nar_gap.paper.report import notebook
from nar_gap.system import files


def test_setup_checks_the_backend_first_then_names_the_profile_and_its_folders(
    tmp_path, monkeypatch, capsys
):
    calls = []

    def check():
        calls.append("check")
        return SimpleNamespace(message="backend ok")

    def get(name):
        calls.append("profile")
        return profiles.PROFILES[name]

    monkeypatch.setattr(notebook, "check_backend", check)
    monkeypatch.setattr(notebook.profiles, "get", get)
    monkeypatch.setenv(files.FIGURE_FORMATS_ENV, "svg")  # put back after the test
    runs, results, figures = (str(tmp_path / n) for n in ("r", "t", "f"))
    profile, dirs, show = notebook.setup("smoke", runs, results, figures)
    assert calls[:2] == ["check", "profile"]
    assert profile is profiles.SMOKE
    assert (str(dirs.runs), str(dirs.results), str(dirs.figures)) == (
        runs,
        results,
        figures,
    )
    assert (show.results, show.figures) == (dirs.results, dirs.figures)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "backend ok",
        f"runs in {runs}, tables in {results}, figures in {figures}",
    ]


def test_setup_gives_a_profile_its_own_folders_by_default(monkeypatch):
    monkeypatch.setattr(notebook, "check_backend", lambda: SimpleNamespace(message=""))
    monkeypatch.setenv(files.FIGURE_FORMATS_ENV, "")
    _, dirs, _ = notebook.setup("smoke")
    assert dirs == profiles.output_dirs("smoke")


def test_setup_makes_the_profile_s_figure_formats_the_default(monkeypatch):
    """smoke saves png alone (CI's budget); every other profile png and pdf."""
    monkeypatch.setattr(notebook, "check_backend", lambda: SimpleNamespace(message=""))
    monkeypatch.setenv(files.FIGURE_FORMATS_ENV, "svg")
    notebook.setup("smoke")
    assert files.figure_formats() == ("png",)
    notebook.setup("cpu")
    assert files.figure_formats() == ("png", "pdf") == profiles.CPU.figure_formats


def _write(path, rows):
    from nar_gap.system import files

    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_table(path, rows)


def test_a_table_is_shown_with_the_other_profiles_committed_rows_under_it(
    tmp_path, capsys
):
    """cpu's run shows the GPU's committed rows; a gpu archive shows cpu's."""
    root = tmp_path / "checkout"
    _write(root / "results" / "t.csv", [{"seeds": "16"}])
    _write(root / "results" / "gpu" / "t.csv", [{"seeds": "128"}, {"seeds": "16"}])
    beside = notebook.rows_beside("t.csv", root / "results", "cpu", root)
    assert [(r["profile"], r["seeds"]) for r in beside] == [
        ("cpu", "16"),
        ("gpu", "128"),
        ("gpu", "16"),
    ]
    archive = tmp_path / "build" / "gpu" / "results"
    _write(archive / "t.csv", [{"seeds": "128", "steps": "400"}])
    beside = notebook.rows_beside("t.csv", archive, "gpu", root)
    assert [r["profile"] for r in beside] == ["gpu", "cpu"]
    smoke = tmp_path / "build" / "smoke" / "results"
    _write(smoke / "t.csv", [{"seeds": "3"}])
    assert [
        r["profile"] for r in notebook.rows_beside("t.csv", smoke, "smoke", root)
    ] == [
        "smoke",
        "cpu",
        "gpu",
        "gpu",
    ]
    assert notebook.rows_beside("u.csv", smoke, "smoke", root) == []
    html = notebook.rows_html(beside, "t.csv")
    assert "<th>steps</th>" in html and html.count("<tr>") == 3  # header + 2 rows
    notebook.Display(archive, tmp_path, "gpu").beside("t.csv")  # no IPython here
    assert capsys.readouterr().out.startswith("table t.csv: 1 rows (gpu)")


def test_a_verdict_is_this_runs_else_the_profile_that_ran_it(tmp_path, monkeypatch):
    """cpu does not run the self-row study: it says what ``studies`` found."""
    from nar_gap.system import files

    root = tmp_path / "checkout"
    monkeypatch.setattr(notebook.profiles, "checkout_root", lambda: root)
    studies = root / "results" / "studies" / "t.csv"
    studies.parent.mkdir(parents=True)
    files.write_table(studies, [{"x": "1"}], {"verdict": "as studies found"})
    cpu = notebook.Display(root / "results", tmp_path, "cpu")
    assert cpu.verdict("t.csv") == "as studies found"
    smoke = tmp_path / "build" / "smoke" / "results"
    smoke.mkdir(parents=True)
    files.write_table(smoke / "t.csv", [{"x": "2"}], {"verdict": "this run's"})
    assert notebook.Display(smoke, tmp_path, "smoke").verdict("t.csv") == "this run's"
    assert "neither this run nor" in cpu.verdict("u.csv")
