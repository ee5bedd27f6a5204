"""Where results go and how they are written: per profile, reproducibly, umask."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

from nar_gap.paper.experiments import profiles
from nar_gap.system import files


def test_the_default_profile_writes_the_committed_folders():
    dirs = profiles.output_dirs("cpu")
    root = profiles.checkout_root()
    assert (dirs.results, dirs.figures) == (root / "results", root / "figures")
    assert dirs.runs == root / "build" / "runs" / "cpu"


@pytest.mark.parametrize("profile", ["smoke", "paper"])
def test_other_profiles_write_under_build(profile):
    dirs = profiles.output_dirs(profile)
    root = profiles.checkout_root()
    assert dirs.results == root / "build" / profile / "results"
    assert dirs.figures == root / "build" / profile / "figures"


@pytest.mark.parametrize("which", ["results", "figures"])
def test_other_profiles_are_refused_the_committed_folders(which):
    root = profiles.checkout_root()
    given = {which: str(root / which)}
    with pytest.raises(ValueError, match=f"{which}/ holds the cpu profile") as caught:
        profiles.output_dirs("smoke", **given)
    assert "\n" not in str(caught.value)


def test_a_folder_the_user_names_is_used(tmp_path):
    dirs = profiles.output_dirs("smoke", "", str(tmp_path / "r"), str(tmp_path / "f"))
    assert (dirs.results, dirs.figures) == (tmp_path / "r", tmp_path / "f")


def test_a_table_read_back_typed_holds_the_values_it_was_written_from(tmp_path):
    """``FROM_RESULTS``: a notebook compares read-back cells with 1, True, 0.5
    (notebook 01's locality rows); text would compare unequal, and "False" is
    true."""
    rows = [
        {"steps": 1, "view": "any", "witness": False, "score": 0.5, "nodes": "8 16"},
        {"steps": 3, "view": "x", "witness": True, "score": 1e-07, "nodes": ""},
    ]
    files.write_table(tmp_path / "t.csv", rows, {})
    dirs = profiles.OutputDirs(tmp_path, tmp_path, tmp_path, reading=True)
    assert dirs.read_back("t.csv", typed=True) == rows
    assert dirs.read_back("t.csv")[0]["witness"] == "False"  # as written
    with pytest.raises(FileNotFoundError, match="missing: reading results needs"):
        dirs.read_back("absent.csv")


def test_unknown_profiles_are_refused():
    with pytest.raises(ValueError, match="unknown profile"):
        profiles.output_dirs("huge")


def test_written_files_get_the_umask_not_0600(tmp_path):
    old = os.umask(0o027)
    try:
        path = files.write_text_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert oct(path.stat().st_mode & 0o777) == oct(0o640)


FIGURE = """
import sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from nar_gap.system import files
fig, ax = plt.subplots()
ax.plot([0, 1, 4], label="a")
ax.legend()
files.save_figure(fig, sys.argv[1])
"""


def test_the_same_figure_is_the_same_file_in_two_processes(tmp_path):
    digests = []
    for run in ("a", "b"):
        stem = tmp_path / run
        subprocess.run([sys.executable, "-c", FIGURE, str(stem)], check=True)
        digests.append(
            [
                hashlib.sha256((tmp_path / f"{run}.{ext}").read_bytes()).hexdigest()
                for ext in ("png", "pdf")
            ]
        )
    assert digests[0] == digests[1]


def test_figures_are_saved_in_the_formats_the_variable_names(tmp_path, monkeypatch):
    """NAR_GAP_FIGURE_FORMATS (a notebook's setup sets it from its profile)
    chooses the files; the sidecar lists them; an unknown one is refused."""
    import json

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    monkeypatch.setenv(files.FIGURE_FORMATS_ENV, "")
    assert files.figure_formats() == ("png", "pdf")
    monkeypatch.setenv(files.FIGURE_FORMATS_ENV, "png, svg")
    written = files.save_figure(fig, tmp_path / "f")
    assert [p.name for p in written] == ["f.png", "f.svg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json", "f.png", "f.svg"]
    assert json.loads((tmp_path / "f.json").read_text())["formats"] == ["png", "svg"]
    assert [p.name for p in files.save_figure(fig, tmp_path / "g", ["pdf"])] == [
        "g.pdf"
    ]  # named by the caller: the variable is not read
    monkeypatch.setenv(files.FIGURE_FORMATS_ENV, "png,jpg")
    with pytest.raises(ValueError, match="NAR_GAP_FIGURE_FORMATS=.*'jpg'"):
        files.save_figure(fig, tmp_path / "h")
    assert not (tmp_path / "h.json").exists()  # refused before anything is written
    plt.close(fig)
