"""run_all.sh's scheduler: notebooks side by side after the notebooks they
need, each stamped with the files it wrote, nothing new after a failure.

Three tiny notebooks in a copy of the project's scripts stand in for the real
ones, which take minutes even at the smoke profile.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_TINY = """
import json, pathlib, time
from nar_gap.system import files
results = pathlib.Path(RESULTS_DIR)
events = results.parent / "events.log"
def event(what):
    with open(events, "a") as handle:
        handle.write(json.dumps([NAME, what, time.time()]) + "\\n")
def seen(name, what):
    lines = events.read_text().splitlines() if events.exists() else []
    return any(json.loads(line)[:2] == [name, what] for line in lines)
event("start")
for need in NEEDS:
    assert seen(need, "end"), f"{NAME} started before {need} ended"
for other in WAIT_FOR:  # proves two ran at once, without timing anything
    for _ in range(600):
        if seen(other, "start"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"{other} never ran beside {NAME}")
files.write_text_atomic(results / f"{NAME}.txt", f"{NAME} {PROFILE}")
event("end")
"""


def _tiny_project(tmp_path: Path, plan: dict[str, dict]) -> Path:
    import shutil

    import nbformat

    project = tmp_path / "project"
    (project / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "run_all.sh", project)
    # The environment is the one running these tests, already installed: a
    # copy of ensure_env.sh here would compare this project's pyproject.toml
    # with the venv's stamp and, after an edit to the real one, reinstall the
    # venv's editable nar_gap from this temporary folder (it did once).  No
    # nar_gap/ folder either: the runner imports the installed package.
    (project / "scripts").mkdir()
    (project / "scripts" / "ensure_env.sh").write_text("#!/usr/bin/env bash\n")
    (project / "scripts" / "ensure_env.sh").chmod(0o755)
    for name, spec in plan.items():
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {
            "name": "nar-gap",
            "display_name": "nar_gap",
            "language": "python",
        }
        if spec.get("needs") or spec.get("priority"):
            notebook.metadata["nar_gap"] = {"needs": spec.get("needs", [])}
        if spec.get("priority"):
            notebook.metadata["nar_gap"]["priority"] = spec["priority"]
        parameters = nbformat.v4.new_code_cell(
            'PROFILE = "cpu"\nRUNS_DIR = ""\nRESULTS_DIR = ""\nFIGURES_DIR = ""'
        )
        parameters.metadata["tags"] = ["parameters"]
        settings = nbformat.v4.new_code_cell(
            f"NAME = {name!r}\nNEEDS = {spec.get('needs', [])!r}\n"
            f"WAIT_FOR = {spec.get('wait_for', [])!r}"
        )
        body = spec.get("body", _TINY)
        notebook.cells = [parameters, settings, nbformat.v4.new_code_cell(body)]
        nbformat.write(notebook, project / "notebooks" / f"{name}.ipynb")
    return project


def _run_all(project: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    venv = Path(sys.prefix)  # the venv running these tests
    return subprocess.run(
        [str(project / "run_all.sh"), "--profile", "smoke", "--out", str(out), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NAR_GAP_VENV": str(venv)},
    )


def _events(out: Path) -> list[tuple[str, str]]:
    lines = (out / "events.log").read_text().splitlines()
    return [tuple(json.loads(line)[:2]) for line in lines]


def test_run_all_runs_independent_notebooks_side_by_side_after_their_needs(tmp_path):
    project = _tiny_project(
        tmp_path,
        {
            "01_a": {"wait_for": ["03_c"]},
            "02_b": {"needs": ["01_a"]},
            "03_c": {},
        },
    )
    out = tmp_path / "out"
    done = _run_all(project, out, "--jobs", "2")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    events = _events(out)
    assert events.index(("02_b", "start")) > events.index(("01_a", "end"))
    assert events.index(("03_c", "start")) < events.index(("01_a", "end"))
    assert "up to 2 at once" in done.stdout
    # Each stamp lists what its own notebook wrote, although they ran at once:
    # a rerun skips all three, and a changed file reruns its notebook alone.
    again = _run_all(project, out, "--jobs", "2")
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count(": skipped") == 3, again.stdout
    (out / "results" / "03_c.txt").write_text("edited")
    third = _run_all(project, out, "--jobs", "2")
    assert third.returncode == 0, third.stderr[-3000:]
    assert third.stdout.count(": skipped") == 2, third.stdout
    assert "03_c: skipped" not in third.stdout
    assert (out / "results" / "03_c.txt").read_text() == "03_c smoke"


@pytest.mark.slow
def test_of_the_ready_notebooks_the_higher_priority_starts_first(tmp_path):
    """07 waits for 02 and is the longest after it: its metadata priority
    starts it before 03 and 06, which then fill the other lane.

    Three kernels and a ``run_all.sh`` (14 s of CI's 15 minutes): per push,
    ``tests/paper/tools/test_runner.py`` checks the order ``runner.select``
    gives, which the scheduler starts ready notebooks in, and the test above
    runs the scheduler end to end."""
    project = _tiny_project(
        tmp_path,
        {
            "01_a": {},
            "02_b": {"needs": ["01_a"]},
            "03_c": {"needs": ["01_a"], "priority": 1},
        },
    )
    out = tmp_path / "out"
    done = _run_all(project, out, "--jobs", "1")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    events = _events(out)
    assert events.index(("03_c", "start")) < events.index(("02_b", "start"))


@pytest.mark.slow
def test_after_a_failure_run_all_starts_nothing_new_and_keeps_what_finished(tmp_path):
    project = _tiny_project(
        tmp_path,
        {
            "01_a": {"body": "raise ValueError('a broke')"},
            "02_b": {"needs": ["01_a"]},
            "03_c": {},
        },
    )
    out = tmp_path / "out"
    done = _run_all(project, out, "--jobs", "2")
    assert done.returncode == 1
    assert "FAILED in notebooks/01_a.ipynb" in done.stderr
    assert "ValueError: a broke" in done.stderr
    assert ("02_b", "start") not in _events(out)
    assert (out / "results" / "03_c.txt").read_text() == "03_c smoke"


def test_run_all_refuses_a_need_that_is_not_a_notebook(tmp_path):
    project = _tiny_project(tmp_path, {"01_a": {"needs": ["00_missing"]}})
    done = _run_all(project, tmp_path / "out")
    assert done.returncode == 2
    assert "01_a.ipynb needs '00_missing', which is not a notebook" in done.stderr


# --------------------------------------------------------------------------- #
# The real notebooks' needs: two notebooks that may run side by side train no
# run in common (the run lock makes that safe, but one would wait for the
# other's training instead of running beside it).
# --------------------------------------------------------------------------- #

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _parameters(path: Path) -> dict:
    cells = json.loads(path.read_text())["cells"]
    (cell,) = [c for c in cells if "parameters" in c["metadata"].get("tags", [])]
    names: dict = {}
    exec("".join(cell["source"]), names)
    return names


def _needs(path: Path) -> list[str]:
    return json.loads(path.read_text())["metadata"].get("nar_gap", {}).get("needs", [])


def _runs_trained_by(stem: str, profile, algorithms: list[str]) -> set[str]:
    """The run directories a notebook trains in, by what its cells call.

    A notebook that starts training a new kind of run is added here.
    """
    from nar_gap.compiler import compile as compile_model
    from nar_gap.paper.experiments import ablations, closing_gap, stability
    from nar_gap.paper.experiments.runs import baseline_config, run_dir

    def name(config) -> str:
        return run_dir(config, "runs").name

    if stem in ("02_baselines", "03_faithfulness", "06_loss_landscapes"):
        return {name(baseline_config(profile, a)) for a in algorithms}
    if stem == "04_ablations":
        return {
            name(v.config)
            for e in ablations.experiments(profile).values()
            for v in e.variants
        }
    if stem == "05_stability":
        found = set()
        for algorithm in algorithms:
            config = profile.train_config(
                compile_model(algorithm, hidden_size=None).config,
                seeds=profile.seed_list(profile.stability_orders),
            )
            for _, start, setting in stability.stability_settings(config, profile):
                found.add(f"stability_{start}_{name(setting)}")
        return found
    if stem == "07_closing_the_gap":
        from nar_gap.paper.experiments import recipes

        found = {
            name(c)
            for a in algorithms
            for c in closing_gap.variant_configs(profile, a).values()
        }
        studies = profile.studies
        for a in studies.recipe_algorithms:
            for recipe in recipes.named(studies.recipes or recipes.studied(a)):
                config = recipes.recipe_config(profile, a, recipe, studies.recipe_seeds)
                found.add(name(config))
        return found
    if stem == "08_transnar":
        # its own runs, and notebook 02's baselines (finished: 08 waits for 02)
        from nar_gap.paper.experiments import transnar
        from nar_gap.paper.transnar import training as text_training

        own = {
            text_training.text_run_dir(
                transnar.text_train_config(profile, a, kind, seed), "runs"
            ).name
            for a in algorithms
            for kind in transnar.NAR_KINDS
            for seed in range(transnar.sizes_for(profile).seeds)
        }
        return own | {name(baseline_config(profile, a)) for a in algorithms}
    if stem == "09_confirmation":
        # the fresh block of the pair 07 picks: any two of the profile's recipes
        from nar_gap.paper.experiments import confirmation, recipes, tie_test

        if not confirmation.runs_at(profile):
            return set()
        names = profile.studies.recipes or recipes.studied("bfs")
        return {
            name(c)
            for pair in itertools.permutations(names, 2)
            for r in confirmation.rounds()
            for runs in tie_test.arm_configs(
                profile,
                "bfs",
                pair,
                confirmation.seed_list(profile, r),
                confirmation.ARMS,
            ).values()
            for c in runs
        }
    if stem == "01_compile":
        return set()
    raise AssertionError(f"say which runs {stem} trains")


def _after(stem: str, needs: dict[str, list[str]]) -> set[str]:
    """Every notebook that must finish before ``stem`` starts."""
    found = set()
    for need in needs[stem]:
        found |= {need} | _after(need, needs)
    return found


def test_notebooks_that_may_run_side_by_side_train_no_run_in_common():
    """At the cpu profile, the default run.

    At smoke and paper some ablation variants of notebook 04 are notebook
    02's baseline configurations (the same width and steps), so the two share
    those runs: the run lock makes whichever comes second wait and read the
    run back (``test_a_second_process_waits_for_the_run_it_shares``).  At
    cpu they share none, and 04 runs beside 02 for its whole length.
    """
    from nar_gap.paper.experiments import profiles

    profile = profiles.get("cpu")
    needs = {path.stem: _needs(path) for path in NOTEBOOKS}
    runs = {
        path.stem: _runs_trained_by(
            path.stem, profile, _parameters(path).get("ALGORITHMS", [])
        )
        for path in NOTEBOOKS
    }
    for first in runs:
        for second in runs:
            if first >= second or first in _after(second, needs):
                continue
            # runs of a notebook both wait for are finished, only read
            finished = set().union(
                *(runs[n] for n in _after(first, needs) & _after(second, needs))
            )
            shared = (runs[first] & runs[second]) - finished
            assert not shared, f"{first} and {second} both train {sorted(shared)}"


def test_each_notebook_needs_only_earlier_notebooks():
    """Run in number order with --jobs 1, every need has finished."""
    for path in NOTEBOOKS:
        for need in _needs(path):
            assert need < path.stem and (path.parent / f"{need}.ipynb").is_file()


def test_run_all_runs_the_notebooks_of_a_profile_sized_for_one_job():
    """The runner's default selection is the profile's own list, ``--only`` wins."""
    from nar_gap.paper.experiments import profiles
    from nar_gap.paper.tools import runner

    for profile in profiles.PROFILES.values():
        asked = runner.numbers_asked(runner.Options(profile=profile.name))
        assert asked == profile.notebooks
    dry = runner.Options(profile="gpu" + profiles.DRY_SUFFIX)
    assert runner.numbers_asked(dry) == profiles.GPU.notebooks == ("02", "03")
    only = runner.Options(profile="gpu", only=("04",))
    assert runner.numbers_asked(only) == ("04",)
