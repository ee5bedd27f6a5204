"""The house rules that keep the code easy to carry on, checked.

``paper/experiments/`` holds the paper's experiments and nothing else, so it
stays a small share of the package (the computing moves down to the layer
whose job it is); and ``tests/`` mirrors the package, one folder per layer
(``tests/paper/`` the studies'), so a test is found where its module is.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "nar_gap"
STUDIES = "paper"  # nar_gap/paper/: the studies beside the core
EXPERIMENTS_SHARE = 0.20


def line_shares(package: Path) -> dict[str, float]:
    """Each layer's share of the package's lines (every line of .py files).

    A layer is a top-level folder, or one of ``paper/``'s (``paper/plots``).
    """
    lines: dict[str, int] = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).parts
        part = "/".join(parts[:2]) if parts[0] == STUDIES else parts[0]
        lines[part] = lines.get(part, 0) + len(path.read_text().splitlines())
    total = sum(lines.values())
    return {part: count / total for part, count in lines.items()}


def test_experiments_is_a_small_share_of_the_package():
    share = line_shares(PACKAGE)[f"{STUDIES}/experiments"]
    assert share < EXPERIMENTS_SHARE, f"experiments/ holds {share:.1%} of the lines"


def test_the_share_counts_every_line(tmp_path):
    (tmp_path / STUDIES / "experiments").mkdir(parents=True)
    (tmp_path / "analysis").mkdir()
    (tmp_path / STUDIES / "experiments" / "a.py").write_text("x = 1\n\n# c\n")
    (tmp_path / "analysis" / "b.py").write_text("y = 2\n")
    assert line_shares(tmp_path) == {"paper/experiments": 0.75, "analysis": 0.25}


def _layers(package: Path) -> set[str]:
    """The folders of ``package`` that are packages."""
    return {p.name for p in package.iterdir() if (p / "__init__.py").exists()}


def _test_folders(tests: Path) -> set[str]:
    return {p.name for p in tests.iterdir() if p.is_dir()} - {"__pycache__"}


def test_tests_mirror_the_package_one_folder_per_layer():
    # cli is a module, not a folder; project/ holds the notebooks, run_all,
    # the README and docs, and packaging
    tests = ROOT / "tests"
    assert _test_folders(tests) == _layers(PACKAGE) | {"cli", "project"}
    assert _test_folders(tests / STUDIES) == _layers(PACKAGE / STUDIES)
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    loose += sorted(p.name for p in (tests / STUDIES).glob("test_*.py"))
    assert loose == [], f"tests outside a layer folder: {loose}"


# What an alias module or an import hook is made of: a module replaced in
# sys.modules, a finder on the import path, a module-level __getattr__ (only
# nar_gap.system.lazy may make one, for re-exported names) and a warning that
# a path moved.
ALIAS_MARKS = ("sys.modules[", "MetaPathFinder", "meta_path", "\ndef __getattr__(")
ALIAS_MARKS += ("DeprecationWarning",)


def alias_marks(package: Path) -> list[str]:
    """``file: mark`` for every mark of an old path kept working."""
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        found += [
            f"{path.relative_to(package)}: {m!r}" for m in ALIAS_MARKS if m in text
        ]
    return found


# Not an old path: dm-clrs imported without TensorFlow (a stand-in module and
# a finder, in place only while it imports).
IMPORTS_DM_CLRS = "tasks/_clrs.py"


def test_no_old_path_is_kept_working():
    """nar_gap is 0.x without outside users: a module that moves leaves no
    alias behind (CHANGELOG.md says where it went)."""
    found = [f for f in alias_marks(PACKAGE) if not f.startswith(IMPORTS_DM_CLRS)]
    assert found == []


def test_the_alias_check_finds_an_alias_module(tmp_path):
    (tmp_path / "old.py").write_text(
        "import sys\nfrom pkg import new\nsys.modules[__name__] = new\n"
    )
    (tmp_path / "shim.py").write_text('"""x"""\n\ndef __getattr__(name):\n    pass\n')
    assert alias_marks(tmp_path) == [
        "old.py: 'sys.modules['",
        "shim.py: '\\ndef __getattr__('",
    ]
