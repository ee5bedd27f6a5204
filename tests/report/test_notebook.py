"""notebook.setup: what every notebook's setup cell calls, in the order it needs."""

from __future__ import annotations

from types import SimpleNamespace

from nar_gap.experiments import profiles
from nar_gap.report import notebook


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
    _, dirs, _ = notebook.setup("smoke")
    assert dirs == profiles.output_dirs("smoke")
