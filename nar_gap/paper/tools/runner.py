"""``./run_all.sh``'s runner: which notebooks, in which order, two side by side.

``run_all.sh`` sets up the environment and hands its arguments here
(``python -m nar_gap.paper.tools.runner``); its header lists them.  The runner

* picks the notebooks (``notebooks/NN_*.ipynb`` of the working checkout, the
  profile's own list where it has one, ``Profile.notebooks``, or ``--only``);
* starts each once every notebook it needs has finished (its metadata's
  ``nar_gap.needs``), up to ``--jobs`` at once, and of those ready at once
  the higher ``nar_gap.priority`` first, then in number order;
* executes each with :mod:`~nar_gap.paper.tools.notebook_runner` in a process
  group of its own (Ctrl-C stops it, kernel included), its output in
  ``<executed>/NN_*.log`` when several run at once;
* stamps each with what its results depend on (notebook text, profile,
  ``nar_gap`` source, output folders) and the files it wrote, and skips a
  notebook whose stamp still holds (``--force`` runs it anyway);
* after a failure starts nothing new, names the failing cell, and keeps what
  finished;
* at the end renders the committed profile's results into docs/results.md
  and README.md, and lists the files that changed.

Paths are relative to the working folder, which ``run_all.sh`` makes its own.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import nar_gap
from nar_gap.paper.experiments import profiles
from nar_gap.paper.tools import notebook_runner
from nar_gap.system import provenance

EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130
NOTEBOOKS_DIR = Path("notebooks")


class UsageError(ValueError):
    """A bad argument or setup: one line, exit code 2."""


@dataclasses.dataclass(frozen=True)
class Options:
    """What ``run_all.sh`` was asked for."""

    profile: str = profiles.DEFAULT_PROFILE
    only: tuple[str, ...] = ()
    out: str = ""
    runs: str = ""
    jobs: int = 0  # 0: by the profile and the cores
    results_from: str = ""
    force: bool = False


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + error
        raise UsageError(f"run_all.sh: {message} (try --help)")


def parse(argv: Sequence[str], environ: Mapping[str, str]) -> Options:
    """``run_all.sh``'s arguments; :class:`UsageError` for a bad one."""
    parser = _Parser(prog="run_all.sh", add_help=False)
    parser.add_argument("--profile", default=environ.get("PROFILE", ""))
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--out", default="")
    parser.add_argument("--runs", default="")
    parser.add_argument("--jobs", default=environ.get("NAR_GAP_JOBS", ""))
    parser.add_argument("--results-from", default="")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    for flag in ("--profile", "--only", "--out", "--runs", "--jobs", "--results-from"):
        if list(argv[-1:]) == [flag]:
            raise UsageError(f"{flag} needs a value (try --help)")
    args, unknown = parser.parse_known_args(list(argv))
    if unknown:
        raise UsageError(f"run_all.sh: unknown argument '{unknown[0]}' (try --help)")
    name = args.profile or profiles.DEFAULT_PROFILE
    dry = args.dry_run or name.endswith(profiles.DRY_SUFFIX)
    base = name.removesuffix(profiles.DRY_SUFFIX)
    if base not in profiles.PROFILES:
        known = ", ".join(profiles.PROFILES)
        raise UsageError(f"unknown profile '{name}' ({known})")
    jobs = 0
    if args.jobs:
        if not args.jobs.isdigit() or not 1 <= int(args.jobs) <= 99:
            raise UsageError(
                "--jobs takes a number of notebooks to run at once, such as 2, "
                f"not '{args.jobs}'"
            )
        jobs = int(args.jobs)
    for number in args.only:
        if not (number.isdigit() and len(number) <= 2):
            raise UsageError(
                f"--only takes a notebook number such as 03, not '{number}'"
            )
    return Options(
        profile=base + (profiles.DRY_SUFFIX if dry else ""),
        only=tuple(f"{int(n):02d}" for n in args.only),
        out=args.out,
        runs=args.runs,
        jobs=jobs,
        results_from=args.results_from,
        force=args.force,
    )


def default_jobs(profile: str, cores: int) -> int:
    """Two notebooks side by side on 2 or more cores; one on an accelerator.

    One notebook keeps about 1.5 of 2 cores busy (XLA's CPU kernels do not
    use both all the time).  The gpu and paper profiles are meant for one
    accelerator, and two JAX processes would each claim most of its memory.
    """
    base = profile.removesuffix(profiles.DRY_SUFFIX)
    return 1 if base in ("gpu", "paper") or cores < 2 else 2


def for_processes(options: Options, environ: Mapping[str, str]) -> Options:
    """Over several processes (``NAR_GAP_COORDINATOR`` set): one at a time, all.

    Each notebook's training is split over the processes
    (:mod:`nar_gap.training.hosts`), so every process runs the same
    notebooks in the same order, one at a time (one coordinator port), none
    skipped (a finished run is read back); only process 0 writes the tables
    and figures, the others under ``build/<profile>/process-<i>``.
    """
    if not environ.get("NAR_GAP_COORDINATOR"):
        return options
    process = environ.get("NAR_GAP_PROCESS_ID", "0")
    out = options.out
    if process != "0":
        out = f"{out or f'build/{options.profile}'}/process-{process}"
    return dataclasses.replace(options, jobs=1, force=True, out=out)


def numbers_asked(options: Options) -> tuple[str, ...]:
    """``--only``'s notebooks, or the profile's own list (empty: every one).

    A profile sized for one job runs some notebooks only
    (``Profile.notebooks``: the gpu profile's 02 and 03, the studies
    profile's 01, 02, 04, 07 and 09).
    """
    base = options.profile.removesuffix(profiles.DRY_SUFFIX)
    return options.only or profiles.PROFILES[base].notebooks


def metadata(notebook: Path) -> dict:
    """A notebook's ``nar_gap`` metadata (needs, priority)."""
    return json.loads(notebook.read_text()).get("metadata", {}).get("nar_gap", {})


def needs_of(notebook: Path) -> list[str]:
    """The stems of the notebooks ``notebook`` needs finished first."""
    needs = list(metadata(notebook).get("needs", []))
    for need in needs:
        if not (notebook.parent / f"{need}.ipynb").is_file():
            raise UsageError(
                f"{notebook.name} needs '{need}', which is not a notebook in "
                f"{notebook.parent}"
            )
    return needs


def select(folder: Path, only: Sequence[str], reading: bool) -> list[Path]:
    """The notebooks to run: ``only``'s numbers, or all, in start order.

    Start order: higher ``priority`` first, then number order.  Reading
    results, a notebook without a ``FROM_RESULTS`` parameter would train,
    so it is refused.
    """
    found = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if reading:
        for notebook in found:
            if '"FROM_RESULTS = ' not in notebook.read_text():
                raise UsageError(
                    f"{notebook} has no FROM_RESULTS parameter: it cannot read results"
                )
    chosen = [n for n in found if not only or n.name[:2] in only]
    if not chosen:
        asked = f" with --only {' '.join(only)}" if only else ""
        raise UsageError(f"no notebook matches (looked for {folder}/NN_*.ipynb{asked})")
    return sorted(chosen, key=lambda n: (-int(metadata(n).get("priority", 0)), n.name))


def inputs_of(notebook: Path, settings: Sequence[str], source: Path) -> str:
    """What a notebook's results depend on: its text, the settings, the source."""
    digest = hashlib.sha256("\0".join(settings).encode())
    digest.update(notebook.read_bytes())
    for path in sorted(source.rglob("*.py")):
        digest.update(str(path).encode() + path.read_bytes())
    return digest.hexdigest()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(tops: Iterable[Path]) -> dict[str, str]:
    """``{path: sha256}`` of every file under ``tops`` (temporaries left out)."""
    return {
        str(path): _sha(path)
        for top in tops
        for path in sorted(Path(top).rglob("*"))
        if path.is_file() and path.suffix != ".tmp" and not path.name.startswith(".")
    }


def written_files(log: Path, tops: Sequence[Path]) -> list[str]:
    """``sha path`` of the files under ``tops`` that the log names.

    nar_gap logs every file it writes to ``$NAR_GAP_WRITTEN_LOG``: file
    times cannot tell two notebooks running side by side apart.
    """
    roots = [Path(top).resolve() for top in tops]
    lines = []
    for line in sorted(set(log.read_text().splitlines())):
        path = Path(line)
        if path.is_file() and any(root in path.parents for root in roots):
            lines.append(f"{_sha(path)} {path}")
    return lines


def up_to_date(stamp: Path, inputs: str) -> bool:
    """Same inputs, and every file the notebook wrote still there, unchanged."""
    if not stamp.is_file():
        return False
    first, *files = stamp.read_text().splitlines()
    if first != inputs:
        return False
    for line in files:
        digest, path = line.split(" ", 1)
        if not Path(path).is_file() or _sha(Path(path)) != digest:
            return False
    return True


def failed_cell(executed: Path) -> str:
    """``cell N ('first line'): error``: where an executed notebook stopped."""
    try:
        cells = json.loads(executed.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return "start (no cell ran: see the error above)"
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                first = "".join(cell.get("source", "")).strip().splitlines() or [""]
                return (
                    f"cell {index} ('{first[0][:60]}'): {output.get('ename')}: "
                    f"{output.get('evalue', '')[:200]}"
                )
    started = [
        i
        for i, c in enumerate(cells)
        if c.get("cell_type") == "code"
        and (c.get("metadata", {}).get("papermill") or {}).get("start_time")
    ]
    if not started:
        return "start (no cell ran: see the error above)"
    first = "".join(cells[started[-1]].get("source", "")).strip().splitlines() or [""]
    return (
        f"cell {started[-1]} ('{first[0][:60]}'): the kernel died while running it "
        "(how it ended, where known: the notebook runner's line above)"
    )


@dataclasses.dataclass
class _Running:
    process: subprocess.Popen
    began: float
    inputs: str
    log: Path


@dataclasses.dataclass
class _Schedule:
    """Where each notebook of one call stands."""

    needs: dict[str, list[str]]
    state: dict[str, str] = dataclasses.field(default_factory=dict)
    running: dict[str, _Running] = dataclasses.field(default_factory=dict)
    timings: list[str] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = dict.fromkeys(self.needs, "pending")

    def ready(self, name: str) -> bool:
        """Every need that this call runs has finished.

        A need not selected (``--only``) is not waited for: the notebook
        trains what it needs itself, and the run lock keeps two processes
        from training one run at once.
        """
        return all(self.state[n] == "done" for n in self.needs[name] if n in self.state)


class Runner:
    """One ``run_all.sh`` call: the chosen notebooks, scheduled and stamped."""

    def __init__(self, options: Options, root: Path, environ: Mapping[str, str]):
        self.options = options
        self.root = root
        self.profile = options.profile
        out = Path(options.out) if options.out else None
        dirs = profiles.output_dirs(
            self.profile,
            options.runs,
            str(out / "results") if out else "",
            str(out / "figures") if out else "",
            root=root,
        )
        for folder in (dirs.results, dirs.figures, dirs.runs):
            Path(folder).mkdir(parents=True, exist_ok=True)
        self.dirs = dirs
        self.results = Path(dirs.results).resolve()
        self.figures = Path(dirs.figures).resolve()
        self.executed = (
            out / "notebooks" if out else root / "build" / "notebooks" / self.profile
        )
        self.executed.mkdir(parents=True, exist_ok=True)
        self.environ = dict(environ)
        self.jobs = options.jobs or default_jobs(self.profile, os.cpu_count() or 1)
        self.parameters = {
            "PROFILE": self.profile,
            "RUNS_DIR": str(Path(dirs.runs).resolve()),
            "RESULTS_DIR": str(self.results),
            "FIGURES_DIR": str(self.figures),
        }
        if options.results_from:
            self.parameters["FROM_RESULTS"] = "True"
        # The committed results/: refused a foreign build, rendered into the docs.
        self.writes_committed = self.results == (root / "results").resolve()

    def _command(self, notebook: Path, executed: Path) -> list[str]:
        command = [sys.executable, "-m", "nar_gap.paper.tools.notebook_runner"]
        command += [str(notebook), str(executed), "--cwd", str(NOTEBOOKS_DIR)]
        for name, value in self.parameters.items():
            command += ["-p", name, value]
        if self.jobs == 1 and sys.stderr.isatty():
            command.append("--progress-bar")
        return command

    def _start(self, notebook: Path, inputs: str) -> _Running:
        name = notebook.stem
        stamp = self.executed / f"{name}.stamp"
        stamp.unlink(missing_ok=True)
        log = (self.executed / f".{name}.written").resolve()
        log.write_text("")
        env = {**self.environ, "NAR_GAP_WRITTEN_LOG": str(log)}
        if self.jobs > 1:
            # Two JAX processes on one GPU: neither may claim most of its memory.
            env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            output = open(self.executed / f"{name}.log", "w")  # noqa: SIM115
            print(
                f"nar_gap: {_shown(notebook, self.root)} started (output in "
                f"{_shown(self.executed, self.root)}/{name}.log)"
            )
        else:
            output = None
            print(f"nar_gap: {_shown(notebook, self.root)}")
        sys.stdout.flush()
        process = subprocess.Popen(
            self._command(notebook, self.executed / f"{name}.ipynb"),
            stdout=output,
            stderr=subprocess.STDOUT if output else None,
            env=env,
            start_new_session=True,  # its own process group: Ctrl-C stops it all
        )
        if output is not None:
            output.close()
        return _Running(process, time.monotonic(), inputs, log)

    def _stamp(self, name: str, running: _Running) -> None:
        lines = [
            running.inputs,
            *written_files(running.log, (self.results, self.figures)),
        ]
        (self.executed / f"{name}.stamp").write_text("\n".join(lines) + "\n")
        running.log.unlink(missing_ok=True)

    def run(self, notebooks: Sequence[Path], needs: dict[str, list[str]]) -> int:
        """Run ``notebooks`` in start order, after their ``needs``: 0, or 1."""
        plan = _Schedule(needs)
        print(
            f"nar_gap: running {len(notebooks)} notebooks with PROFILE={self.profile}, "
            f"up to {self.jobs} at once; tables to {_shown(self.results, self.root)}, "
            f"figures to {_shown(self.figures, self.root)}",
            flush=True,
        )
        begun = time.monotonic()
        try:
            while True:
                progressed = self._start_ready(plan, notebooks)
                if not plan.running:
                    if progressed:
                        continue  # a skipped notebook may have readied another
                    break
                time.sleep(0.5)
                self._collect(plan)
        except KeyboardInterrupt:
            for job in plan.running.values():
                _stop(job.process)
            print(
                "nar_gap: interrupted; finished notebooks keep their results",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        if plan.failed:
            return EXIT_FAILED
        for name, now in plan.state.items():
            if now != "done":
                print(
                    f"nar_gap: notebooks/{name}.ipynb never became ready "
                    f"(needs: {' '.join(plan.needs[name])})",
                    file=sys.stderr,
                )
                return EXIT_FAILED
        took = round(time.monotonic() - begun)
        print(
            f"nar_gap: all notebooks ran in {took} s; executed copies in "
            f"{_shown(self.executed, self.root)}/"
        )
        for line in plan.timings:
            print(f"  {line}")
        return 0

    def _start_ready(self, plan: _Schedule, notebooks: Sequence[Path]) -> bool:
        """Start (or skip, when up to date) what is ready and fits; skipped any?"""
        progressed = False
        settings = (self.profile, str(self.results), str(self.figures))
        for notebook in notebooks if not plan.failed else ():
            name = notebook.stem
            if plan.state[name] != "pending" or len(plan.running) >= self.jobs:
                continue
            if not plan.ready(name):
                continue
            inputs = inputs_of(notebook, settings, self.root / "nar_gap")
            stamp = self.executed / f"{name}.stamp"
            executed = self.executed / f"{name}.ipynb"
            fresh = executed.is_file() and up_to_date(stamp, inputs)
            if fresh and not self.options.force:
                print(
                    f"nar_gap: {_shown(notebook, self.root)} is up to date for "
                    f"profile {self.profile} (skipped; --force reruns it)"
                )
                plan.timings.append(f"{name}: skipped")
                plan.state[name] = "done"
                progressed = True
                continue
            plan.running[name] = self._start(notebook, inputs)
            plan.state[name] = "running"
        return progressed

    def _collect(self, plan: _Schedule) -> None:
        """Stamp the notebooks that finished; report those that failed."""
        for name, job in list(plan.running.items()):
            code = job.process.poll()
            if code is None:
                continue
            del plan.running[name]
            took = round(time.monotonic() - job.began)
            if code == 0:
                self._stamp(name, job)
                plan.state[name] = "done"
                plan.timings.append(f"{name}: {took} s")
                if self.jobs > 1:
                    print(f"nar_gap: notebooks/{name}.ipynb finished in {took} s")
                continue
            plan.state[name] = "failed"
            plan.failed.append(name)
            self._report_failure(name, len(plan.running))
        sys.stdout.flush()

    def _report_failure(self, name: str, still_running: int) -> None:
        if self.jobs > 1:
            log = (self.executed / f"{name}.log").read_text().splitlines()
            print("\n".join(log[-20:]), file=sys.stderr)
        executed = self.executed / f"{name}.ipynb"
        print(
            f"nar_gap: FAILED in notebooks/{name}.ipynb (profile {self.profile}) at "
            f"{failed_cell(executed)}; the executed copy, with the error in place, "
            f"is {_shown(executed, self.root)}",
            file=sys.stderr,
        )
        if still_running:
            print(
                "nar_gap: starting nothing new; waiting for the "
                f"{still_running} notebook(s) still running",
                file=sys.stderr,
            )


def build_note(writes_committed: bool, environ: Mapping[str, str]) -> str:
    """What a foreign build means for this run; refused where it would land in results/.

    The committed ``results/`` hold the optimised build's numbers;
    ``run_tests.sh``'s switches (left exported in a shell, or set by hand)
    would rewrite every trained number's last bits there and slow the run
    (:func:`~nar_gap.system.provenance.foreign_build_settings`).  Elsewhere
    the run goes ahead, each sidecar recording the settings
    (:func:`~nar_gap.system.provenance.runtime_settings`); the returned line
    says so ("" when the build is nar_gap's own).
    """
    foreign = provenance.foreign_build_settings(environ)
    if not foreign:
        return ""
    shown = ", ".join(f"{name}={value!r}" for name, value in foreign.items())
    if writes_committed:
        unset = " ".join(f"-u {name}" for name in foreign)
        raise UsageError(
            f"{shown} is set, and results/ holds the optimised build's numbers "
            f"(this build changes their last bits): run env {unset} ./run_all.sh, "
            "or write elsewhere with --out DIR"
        )
    return f"{shown}: this run's numbers are that build's (its sidecars record it)"


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _stop(process: subprocess.Popen) -> None:
    """Stop a notebook's process group (its kernel too) and wait for it."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    process.wait()


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to the checkout where it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def report_changes(before: Mapping[str, str], after: Mapping[str, str], root: Path):
    """Print the files that are new or changed since ``before``."""
    changed = sorted(p for p, digest in after.items() if before.get(p) != digest)
    if not changed:
        print("nar_gap: no file in the results or figures folders changed")
        return
    print("nar_gap: new or changed files:")
    for path in changed:
        print(f"  {_shown(Path(path), root)}")


def main(argv: Sequence[str] | None = None) -> int:
    """``run_all.sh``'s arguments in, its exit code out."""
    root = Path.cwd()
    environ = os.environ
    signal.signal(signal.SIGTERM, _interrupt)  # stopped like Ctrl-C
    try:
        options = for_processes(
            parse(sys.argv[1:] if argv is None else argv, environ), environ
        )
        only = numbers_asked(options)
        notebooks = select(root / NOTEBOOKS_DIR, only, bool(options.results_from))
        needs = {n.stem: needs_of(n) for n in notebooks}
        # before Runner, which makes the output folders: a refusal leaves none
        notebook_runner.check_kernel_package(
            Path(nar_gap.__file__).parent, root / NOTEBOOKS_DIR
        )
        runner = Runner(options, root, environ)
        note = build_note(runner.writes_committed, environ)
        if note:
            print(f"nar_gap: note: {note}", file=sys.stderr)
        if options.results_from:
            from nar_gap.paper.tools import job

            unpacked = job.unpack_archive(Path(options.results_from), runner.dirs)
            print(
                f"nar_gap job: {len(unpacked)} files from {options.results_from} "
                f"into {_shown(runner.results, root)}"
            )
            options = dataclasses.replace(options, force=True)
            runner.options = options
    except (UsageError, ValueError, OSError) as error:
        print(f"nar_gap: {error}", file=sys.stderr)
        return EXIT_USAGE
    before = fingerprint((runner.results, runner.figures))
    code = runner.run(notebooks, needs)
    if code == 0 and runner.writes_committed:
        # docs/results.md's section and README.md's headline, from results/
        from nar_gap.paper.report import readme_results

        for page in ("docs/results.md", "README.md"):
            readme_results.write_rendered(root / page, runner.results)
        print(
            "nar_gap: docs/results.md's results and README.md's headline "
            "rendered from results/"
        )
    report_changes(before, fingerprint((runner.results, runner.figures)), root)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
