"""One job on an offline GPU node: a profile's notebooks without Jupyter, one archive.

``nar-gap job --profile gpu --archive gpu.tar.gz``

A cluster's GPU node has a time limit per job, often no internet, and no
Jupyter; what comes back from it should be small.  The job therefore runs
each notebook of the profile (``Profile.notebooks``) as a script: its
``parameters`` cell with the profile and folders put in, then every code
cell of its main path, in order, in one namespace.  The teaching cells
(tagged ``companion``, ``hands-on``, ``solution``) only illustrate, and are
left for the notebooks.  So the job computes exactly what the notebooks
compute, from the notebooks' own text: nothing to keep in step.

Without IPython, ``display`` prints (:mod:`nar_gap.paper.report.notebook`).  Each
finished notebook leaves a stamp (``<runs>/job/NN.json``, beside the
checkpoints) with its seconds, each cell's, and the peak device memory: a
job that is cut short and started again skips what finished, and training
resumes from its checkpoints.  A cut comes as SIGTERM (a scheduler's time
limit, ``timeout``): the job then records the attempt's seconds and the
cell it reached (``NN.cut.json``, added to the notebook's time when it
finishes), writes ``job.json`` and the archive of what finished, and stops
with :class:`JobCut`.  The first run on a GPU was cut twice and recorded
none of this (``benchmarks/results/gpu_h200_job_2026-11-26``).  At the end
the job writes ``job.json`` beside the tables (the device, the versions,
the precision, the seconds of each notebook, the peak device memory) and,
with ``--archive``, one ``.tar.gz`` of the results folder (tables,
sidecars, the arrays the figures are drawn from) and the figures' PNGs and
sidecars, refused above :data:`ARCHIVE_LIMIT_BYTES`.  Trained parameters
stay on the node (``build/runs/<profile>``).  ``./run_all.sh --results-from``
renders the archive on any machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import resource
import signal
import tarfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from nar_gap.paper.experiments import profiles
from nar_gap.system import files
from nar_gap.system.provenance import writing_for

#: What one archive may weigh: a scp over a slow link, a mail attachment.
ARCHIVE_LIMIT_BYTES = 16 * 2**20
#: The notebook cells the job leaves out: they teach, they do not measure.
TEACHING_TAGS = frozenset({"companion", "hands-on", "solution"})
#: The parameters cell's names the job sets.
FOLDER_PARAMETERS = ("PROFILE", "RUNS_DIR", "RESULTS_DIR", "FIGURES_DIR")
JOB_FILE = "job.json"


class JobError(ValueError):
    """A job that cannot go on, said in one line (the CLI prints it so)."""


class JobCut(JobError):
    """SIGTERM stopped the job inside a notebook; run it again to go on."""


@contextlib.contextmanager
def cut_on_sigterm() -> Iterator[None]:
    """Within: SIGTERM raises :class:`JobCut`, so the job can say what it did.

    Python's default is to die at once, losing the attempt's time and the
    archive of the notebooks that finished.  Only the main thread can take
    signals; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise JobCut(f"stopped by {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def notebook_path(number: str, root: Path | None = None) -> Path:
    """``notebooks/<number>_*.ipynb`` of the checkout (one, or an error)."""
    found = sorted(
        ((root or profiles.checkout_root()) / "notebooks").glob(f"{number}_*.ipynb")
    )
    if len(found) != 1:
        raise JobError(f"no notebook {number} (looked for notebooks/{number}_*.ipynb)")
    return found[0]


@dataclasses.dataclass(frozen=True)
class Script:
    """A notebook as the job runs it: parameters, then its main cells."""

    name: str
    parameters: str
    cells: tuple[tuple[int, str], ...]  # (cell index, source)


def script(path: Path) -> Script:
    """The parameters cell and the main-path code cells of the notebook ``path``."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError) as error:
        raise JobError(f"{path.name} is not a readable notebook: {error}") from None
    parameters, main = "", []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        source = "".join(cell.get("source", ""))
        if "parameters" in tags:
            parameters = source
        elif not tags & TEACHING_TAGS:
            main.append((index, source))
    return Script(path.stem, parameters, tuple(main))


def run_script(
    notebook: Script,
    values: dict[str, Any],
    echo: bool = False,
    cell_seconds: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Run ``notebook``'s cells in one fresh namespace, ``values`` after its parameters.

    A failing cell raises :class:`JobError` naming the notebook and the cell
    (the traceback is printed first); :class:`JobCut` passes through.  Each
    cell's seconds go into ``cell_seconds`` (``"cell <index>"``) as it ends,
    the cut one's too.
    """
    namespace: dict[str, Any] = {"__name__": f"nar_gap_job_{notebook.name}"}
    exec(
        compile(notebook.parameters, f"{notebook.name}[parameters]", "exec"), namespace
    )
    namespace.update(values)
    for index, source in notebook.cells:
        where = f"{notebook.name}[cell {index}]"
        if echo:
            print(f"nar_gap job: {where}", flush=True)
        begun = time.perf_counter()
        try:
            exec(compile(source, where, "exec"), namespace)
        except JobCut:
            raise
        except Exception as error:
            import traceback

            traceback.print_exc()
            raise JobError(
                f"{where} failed: {type(error).__name__}: {error}".splitlines()[0]
            ) from error
        finally:
            if cell_seconds is not None:
                cell_seconds[f"cell {index}"] = time.perf_counter() - begun
    return namespace


def _finished(stamp: Path, results: str) -> dict[str, Any] | None:
    """A notebook's stamp, if it is for these results; else None."""
    if not stamp.is_file():
        return None
    record = files.read_json(stamp)
    return record if record.get("results") == results else None


def _cut_file(state: Path, number: str) -> Path:
    return state / f"{number}.cut.json"


def _cut_attempts(state: Path, number: str, results: str) -> list[dict[str, Any]]:
    """Earlier attempts at notebook ``number`` for ``results`` that were cut."""
    path = _cut_file(state, number)
    attempts = files.read_json(path)["attempts"] if path.is_file() else []
    return [a for a in attempts if a.get("results") == results]


def peak_memory() -> dict[str, int | None]:
    """The device's peak bytes in use (accelerators) and the process's peak RSS.

    Both since the process started: on a notebook's stamp, the peak of the
    job so far in that process.
    """
    import jax

    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "device_peak_bytes": int(stats["peak_bytes_in_use"]) if stats else None,
        "host_peak_rss_bytes": int(rss),
    }


def job_record(
    profile: profiles.Profile,
    stamps: dict[str, dict[str, Any]],
    started: float,
    cut: str | None = None,
) -> dict[str, Any]:
    """What ``job.json`` says: the device, versions, precision, times, memory.

    ``stamps``: the finished notebooks' stamps; ``cut``: the one line of a
    cut job (what it reached), None for a job that ran to its end.
    """
    import jax

    from nar_gap.system.provenance import provenance

    device = jax.devices()[0]
    peaks = [s.get("device_peak_bytes") for s in stamps.values()]
    known = [p for p in peaks if p is not None]
    return {
        "profile": profile.name,
        "device": f"{device.platform}: {device.device_kind}",
        "device_count": jax.device_count(),
        "notebooks": sorted(stamps),
        "seconds": {n: s["seconds"] for n, s in stamps.items()},
        "cell_seconds": {n: s.get("cells", {}) for n, s in stamps.items()},
        "cut": cut,
        "wall_seconds": time.time() - started,
        **peak_memory(),
        "device_peak_bytes_of_any_notebook": max(known) if known else None,
        **provenance(),
    }


def run_notebook(
    number: str, notebook: Script, values: dict[str, Any], state: Path, results: str
) -> dict[str, Any]:
    """Run one notebook of the job; its stamp (written), or :class:`JobCut`.

    The stamp's ``seconds`` add the attempts that were cut before this one.
    """
    earlier = _cut_attempts(state, number, results)
    print(f"nar_gap job: {notebook.name} started", flush=True)
    cells: dict[str, float] = {}
    begun = time.perf_counter()
    try:
        with writing_for(notebook.name):
            run_script(notebook, values, cell_seconds=cells)
    except JobCut as cut:
        spent = time.perf_counter() - begun
        attempt = {"results": results, "seconds": spent, "cells": cells}
        files.write_json_atomic(
            _cut_file(state, number),
            {"attempts": [*earlier, {**attempt, **peak_memory()}]},
        )
        reached = next(reversed(cells), "its parameters")
        raise JobCut(
            f"{notebook.name} {cut} in {reached} after {spent:.0f} s; the job "
            "records it and goes on from there when run again"
        ) from None
    attempts = [a["seconds"] for a in earlier] + [time.perf_counter() - begun]
    record = {
        "notebook": notebook.name,
        "seconds": sum(attempts),
        "attempts": attempts,
        "cells": cells,
        **peak_memory(),
        "results": results,
    }
    files.write_json_atomic(state / f"{number}.json", record)
    _cut_file(state, number).unlink(missing_ok=True)
    print(
        f"nar_gap job: {notebook.name} finished in {record['seconds']:.0f} s"
        + (f" ({len(attempts)} attempts)" if len(attempts) > 1 else ""),
        flush=True,
    )
    return record


def run_job(
    profile_name: str,
    dirs: profiles.OutputDirs,
    notebooks: Sequence[str] = (),
    force: bool = False,
    root: Path | None = None,
) -> Path:
    """Run the notebooks of ``profile_name`` as scripts; ``job.json``'s path.

    ``notebooks``: these instead of the profile's (default: the profile's,
    or all).  A notebook whose stamp exists is skipped unless ``force``.
    Cut by SIGTERM, it writes ``job.json`` for what finished and raises
    :class:`JobCut`.
    """
    profile = profiles.get(profile_name)
    chosen = list(notebooks or profile.notebooks) or _all_numbers(root)
    # Stamps live with the runs (on the node, beside the checkpoints), each
    # naming the results folder it wrote.
    state = files.ensure_dir(Path(dirs.runs) / "job")
    results = str(Path(dirs.results).resolve())
    values = {
        "PROFILE": profile.name,
        "RUNS_DIR": str(dirs.runs),
        "RESULTS_DIR": str(dirs.results),
        "FIGURES_DIR": str(dirs.figures),
    }
    scripts = {n: script(notebook_path(n, root)) for n in chosen}  # all readable first
    started, stamps = time.time(), {}
    job_file = Path(dirs.results) / JOB_FILE
    with cut_on_sigterm():
        for number, notebook in scripts.items():
            before = None if force else _finished(state / f"{number}.json", results)
            if before is not None:
                stamps[number] = before
                print(
                    f"nar_gap job: {notebook.name} finished before "
                    f"({before['seconds']:.0f} s)"
                )
                continue
            try:
                stamps[number] = run_notebook(number, notebook, values, state, results)
            except JobCut as cut:
                record = job_record(profile, stamps, started, cut=str(cut))
                files.write_json_atomic(job_file, record)
                raise
    return files.write_json_atomic(job_file, job_record(profile, stamps, started))


def _all_numbers(root: Path | None) -> list[str]:
    folder = (root or profiles.checkout_root()) / "notebooks"
    return sorted(p.name[:2] for p in folder.glob("[0-9][0-9]_*.ipynb"))


def archive_members(dirs: profiles.OutputDirs) -> list[tuple[Path, str]]:
    """What the archive holds: every results file, the figures' PNGs and sidecars.

    A figure's sidecar names the notebook that drew it, the device and the
    versions, as a table's does; without it a committed GPU figure would say
    nothing of where it came from.  The PDFs stay behind (the PNGs show the
    same figure, and the archive must fit 16 MiB).
    """
    results, figures = Path(dirs.results), Path(dirs.figures)
    members = [
        (p, f"results/{p.relative_to(results)}") for p in sorted(results.rglob("*"))
    ]
    if figures.is_dir():
        drawn = sorted(figures.glob("*.png"))
        drawn += [files.sidecar_path(p.with_suffix("")) for p in drawn]
        members += [(p, f"figures/{p.name}") for p in drawn]
    return [(p, name) for p, name in members if p.is_file()]


def write_archive(
    dirs: profiles.OutputDirs, archive: Path, limit: int = ARCHIVE_LIMIT_BYTES
) -> Path:
    """One ``.tar.gz`` of :func:`archive_members`, written atomically.

    Above ``limit`` bytes it is refused in one line (nothing written; the
    results folder is untouched and can be archived by hand).
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, name in archive_members(dirs):
            info = tar.gettarinfo(str(path), arcname=name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with open(path, "rb") as handle:
                tar.addfile(info, handle)
    size = buffer.getbuffer().nbytes
    if size > limit:
        raise JobError(
            f"the archive would be {size / 2**20:.1f} MiB, over the "
            f"{limit / 2**20:.0f} MiB limit; the results stay in {dirs.results}"
        )
    return files.write_bytes_atomic(archive, buffer.getvalue())


def unpack_archive(archive: Path, dirs: profiles.OutputDirs) -> list[Path]:
    """Put a job's archive into ``dirs``' results and figures folders.

    Only ``results/...`` and ``figures/...`` members that are plain files
    with no ``..`` are taken; anything else is refused in one line.
    """
    try:
        tar = tarfile.open(archive, mode="r:gz")
    except (OSError, tarfile.TarError) as error:
        raise JobError(f"{archive} is not a job archive: {error}") from None
    written = []
    with tar:
        for member in tar.getmembers():
            top, _, rest = member.name.partition("/")
            if (
                top not in ("results", "figures")
                or not rest
                or ".." in Path(rest).parts
            ):
                raise JobError(f"{archive}: unexpected member {member.name!r}")
            if not member.isfile():
                raise JobError(f"{archive}: {member.name!r} is not a plain file")
            folder = Path(dirs.results if top == "results" else dirs.figures)
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            written.append(files.write_bytes_atomic(folder / rest, data))
    if not any(p.name == JOB_FILE for p in written):
        raise JobError(
            f"{archive} has no results/{JOB_FILE}: not written by nar-gap job"
        )
    return written
