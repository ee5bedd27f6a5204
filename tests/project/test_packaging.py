"""Packaging and setup: the files a fresh clone needs agree with each other.

pyproject.toml is the one list of dependencies (lower bounds); requirements/lock.txt
pins the exact environment CI tests, which scripts/ensure_env.sh and
environment.yml install; these tests catch the day they drift, or the day the
installed environment is not the locked one. The shell entry points must be
runnable as the README says, and no committed file may point into one
developer's machine.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest depends on tomli before 3.11
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]

# What the paper's code imports; each must be a declared runtime dependency.
REQUIRED_STACK = (
    "jax",
    "flax",
    "optax",
    "dm-clrs",
    "numpy",
    "scipy",
    "matplotlib",
    "scikit-learn",
    "papermill",
    "jupyterlab",
    "tqdm",
)

SHELL_ENTRY_POINTS = (
    "run_tests.sh",
    "run_all.sh",
    ".ci/run",
    "scripts/ensure_env.sh",
    "scripts/update_lock.sh",
    "scripts/lint.sh",
)
LOCK = REPO / "requirements" / "lock.txt"
EXCLUDE = REPO / "requirements" / "exclude.txt"

# Never committed, wherever they appear (mirrors .gitignore).
_SKIPPED_DIRS = {
    ".git",
    ".venv",
    "build",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".ipynb_checkpoints",
    "checkpoints",
    "runs",
}

# An absolute path into a home or work directory, not part of a URL such as
# https://example.org/home/ (a host name ends in a word character or a dot).
# Spelled in pieces so that this file does not match itself.
_HOME_DIRS = "|".join(["work", "root", "home", "Users"])
_MACHINE_PATH = re.compile(r"(?<![\w.-])/(?:" + _HOME_DIRS + r")/")


def _project() -> dict:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _conda_pip_requirements(text: str) -> list[str]:
    """Return the items of the `- pip:` list in an environment.yml.

    A small line parser instead of a YAML library: the file's shape is fixed
    (a `- pip:` item whose own items are indented below it), and this way the test
    needs nothing that is not already a test dependency.
    """
    items: list[str] = []
    pip_indent: int | None = None
    for line in text.splitlines():
        stripped = line.split(" #", 1)[0].strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if pip_indent is None:
            if stripped == "- pip:":
                pip_indent = indent
            continue
        if indent <= pip_indent:
            break
        assert stripped.startswith("- "), f"unexpected line in the pip list: {line!r}"
        items.append(stripped[2:].strip().strip("'\""))
    assert pip_indent is not None, "environment.yml has no '- pip:' section"
    return items


def _committed_text_files() -> list[Path]:
    """Files git would commit (tracked or not ignored); a tree walk without git."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        paths = []
        for root, dirs, files in os.walk(REPO):
            dirs[:] = [
                d
                for d in dirs
                if d not in _SKIPPED_DIRS and not d.endswith(".egg-info")
            ]
            paths += [Path(root, name) for name in files]
    else:
        paths = [REPO / p for p in listed.decode().split("\0") if p]
    return [p for p in paths if p.is_file()]


def _requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def _lock() -> dict[str, str]:
    """``{canonical name: version}`` of requirements/lock.txt (exact pins only)."""
    pins = {}
    for line in _requirement_lines(LOCK):
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"lock.txt: {line!r} is not an exact pin"
        pins[canonicalize_name(requirement.name)] = spec.version
    return pins


def _lock_python() -> str:
    found = re.search(r"Resolved for Python (\d+\.\d+)", LOCK.read_text())
    assert found, "requirements/lock.txt should say which Python it was resolved for"
    return found.group(1)


def test_environment_yml_installs_the_lock_and_the_package():
    conda = _conda_pip_requirements((REPO / "environment.yml").read_text())
    assert conda == ["-c requirements/lock.txt", "-e .[test]"], conda
    text = (REPO / "environment.yml").read_text()
    found = re.search(r"^\s*-\s*python\s*=\s*([\d.]+)\s*$", text, re.MULTILINE)
    assert found and found.group(1) == _lock_python(), (
        "environment.yml's python must be the one the lock was resolved for"
    )


def test_the_lock_pins_every_dependency_within_pyproject_bounds():
    pins = _lock()
    project = _project()
    declared = project["dependencies"] + project["optional-dependencies"]["test"]
    for text in declared:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement.name} is not in requirements/lock.txt"
        assert requirement.specifier.contains(pins[name]), (
            f"lock.txt pins {name}=={pins[name]}, outside pyproject's {text!r}"
        )
    assert "pip" in pins, "the lock pins pip too (ensure_env.sh installs it first)"


def test_the_lock_avoids_every_excluded_version():
    pins = _lock()
    for line in _requirement_lines(EXCLUDE):
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert requirement.specifier.contains(pins[name]), (
            f"lock.txt pins {name}=={pins[name]}, which exclude.txt rules out"
        )


def test_the_installed_environment_is_the_locked_one():
    """What CI runs (ensure_env.sh installs with `-c requirements/lock.txt`)."""
    from importlib.metadata import distributions

    installed = {
        canonicalize_name(d.metadata["Name"]): d.version for d in distributions()
    }
    differ = {
        name: (pinned, installed[name])
        for name, pinned in _lock().items()
        if name in installed and installed[name] != pinned
    }
    missing = sorted(
        canonicalize_name(Requirement(t).name)
        for t in _project()["dependencies"]
        if canonicalize_name(Requirement(t).name) not in installed
    )
    assert not differ and not missing, (
        f"not the locked environment (name: (locked, installed)): {differ}; "
        f"missing: {missing}; run scripts/ensure_env.sh --force"
    )


def test_ensure_env_installs_under_the_lock():
    script = (REPO / "scripts" / "ensure_env.sh").read_text()
    assert 'install -q -c "$lock" -e ".[test]"' in script
    assert "lock=requirements/lock.txt" in script


def test_environment_yml_python_satisfies_requires_python():
    text = (REPO / "environment.yml").read_text()
    found = re.search(r"^\s*-\s*python\s*=\s*([\d.]+)\s*$", text, re.MULTILINE)
    assert found, "environment.yml should pin python, e.g. '- python=3.11'"
    spec = Requirement(f"python{_project()['requires-python']}").specifier
    assert spec.contains(found.group(1)), (
        f"environment.yml's python={found.group(1)} is outside requires-python {spec}"
    )


def test_every_package_of_the_required_stack_is_a_runtime_dependency():
    requirements = [Requirement(text) for text in _project()["dependencies"]]
    declared = {canonicalize_name(r.name) for r in requirements}
    missing = [n for n in REQUIRED_STACK if canonicalize_name(n) not in declared]
    assert not missing, f"missing from [project] dependencies: {missing}"


def test_dependencies_have_lower_bounds_and_no_upper_pins():
    for text in _project()["dependencies"]:
        operators = {spec.operator for spec in Requirement(text).specifier}
        assert operators == {">="}, f"{text!r}: expected only a '>=' lower bound"


def test_version_is_a_literal_that_setuptools_reads_without_importing():
    tree = ast.parse((REPO / "nar_gap" / "__init__.py").read_text())
    versions = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]
    assert versions, 'nar_gap/__init__.py needs a line `__version__ = "X.Y.Z"`'


def test_no_committed_file_contains_an_absolute_path_of_a_machine():
    offenders = []
    for path in _committed_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary (a PDF figure, say): not text we write by hand
        for number, line in enumerate(text.splitlines(), start=1):
            if _MACHINE_PATH.search(line):
                where = f"{path.relative_to(REPO)}:{number}"
                offenders.append(f"{where}: {line.strip()[:120]}")
    listing = "\n".join(offenders)
    assert not offenders, f"absolute machine paths in committed files:\n{listing}"


@pytest.mark.parametrize("name", SHELL_ENTRY_POINTS)
def test_shell_entry_point_is_executable_strict_bash(name):
    path = REPO / name
    assert path.is_file(), f"{name} is missing"
    assert os.access(path, os.X_OK), f"{name} is not executable (chmod +x {name})"
    lines = path.read_text().splitlines()
    assert lines[0] in ("#!/usr/bin/env bash", "#!/bin/bash"), (
        f"{name} should start with a bash shebang, found {lines[0]!r}"
    )
    commands = [line.strip() for line in lines[1:] if line.strip()]
    commands = [line for line in commands if not line.startswith("#")]
    assert commands[0] == "set -euo pipefail", (
        f"{name}: first command should be 'set -euo pipefail', not {commands[0]!r}"
    )


def test_readme_quick_start_shows_both_commands():
    readme = (REPO / "README.md").read_text()
    section = re.search(r"^## Quick start\s*$(.*?)(?=^## |\Z)", readme, re.M | re.S)
    assert section, "README.md needs a '## Quick start' section"
    block = re.search(r"^```bash\s*$(.*?)^```", section.group(1), re.M | re.S)
    assert block, "README.md's Quick start needs a ```bash block"
    commands = [line.strip() for line in block.group(1).splitlines()]
    for command in ("./run_all.sh", "./run_tests.sh"):
        assert command in commands, f"README.md's Quick start should show {command}"


SHELL_ENTRY_POINTS = [
    "run_all.sh",
    "run_tests.sh",
    ".ci/run",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "scripts").glob("*.sh")),
]


@pytest.mark.parametrize("name", SHELL_ENTRY_POINTS)
def test_every_module_a_shell_script_runs_exists(name):
    """``python -m nar_gap.X`` in a script must name a module that is there.

    run_all.sh is only run whole by a slow test, so a module that moved would
    otherwise break ``./run_all.sh`` with every fast test passing.
    """
    text = (REPO / name).read_text()
    for module in re.findall(r"-m\s+(nar_gap(?:\.\w+)*)", text):
        assert importlib.util.find_spec(module) is not None, f"{name}: {module}"
