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

Without IPython, ``display`` prints (:mod:`nar_gap.report.notebook`).  Each
finished notebook leaves a stamp with its seconds (``<runs>/job/NN.json``,
beside the checkpoints): a job that is cut short and started again skips
what finished, and training resumes from its checkpoints.  At the end the
job writes ``job.json`` beside the tables (the device, the versions, the
precision, the seconds of each notebook, the peak device memory) and, with
``--archive``, one ``.tar.gz`` of the results folder (tables, sidecars, the
arrays the figures are drawn from) and the figures' PNGs, refused above
:data:`ARCHIVE_LIMIT_BYTES`.  Trained parameters stay on the node
(``build/runs/<profile>``).  ``./run_all.sh --results-from`` renders the
archive on any machine.
"""

from __future__ import annotations

import dataclasses
import io
import json
import resource
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nar_gap.experiments import profiles
from nar_gap.system import files

#: What one archive may weigh: a scp over a slow link, a mail attachment.
ARCHIVE_LIMIT_BYTES = 16 * 2**20
#: The notebook cells the job leaves out: they teach, they do not measure.
TEACHING_TAGS = frozenset({"companion", "hands-on", "solution"})
#: The parameters cell's names the job sets.
FOLDER_PARAMETERS = ("PROFILE", "RUNS_DIR", "RESULTS_DIR", "FIGURES_DIR")
JOB_FILE = "job.json"


class JobError(ValueError):
    """A job that cannot go on, said in one line (the CLI prints it so)."""


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
    notebook: Script, values: dict[str, Any], echo: bool = False
) -> dict[str, Any]:
    """Run ``notebook``'s cells in one fresh namespace, ``values`` after its parameters.

    A failing cell raises :class:`JobError` naming the notebook and the cell
    (the traceback is printed first).
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
        try:
            exec(compile(source, where, "exec"), namespace)
        except Exception as error:
            import traceback

            traceback.print_exc()
            raise JobError(
                f"{where} failed: {type(error).__name__}: {error}".splitlines()[0]
            ) from error
    return namespace


def _finished(stamp: Path, results: Path) -> float | None:
    """The seconds a stamp records, if it is for these results; else None."""
    if not stamp.is_file():
        return None
    record = files.read_json(stamp)
    if record.get("results") != str(Path(results).resolve()):
        return None
    return float(record["seconds"])


def peak_memory() -> dict[str, int | None]:
    """The device's peak bytes in use (accelerators) and the process's peak RSS."""
    import jax

    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "device_peak_bytes": int(stats["peak_bytes_in_use"]) if stats else None,
        "host_peak_rss_bytes": int(rss),
    }


def job_record(
    profile: profiles.Profile, seconds: dict[str, float], started: float
) -> dict[str, Any]:
    """What ``job.json`` says: the device, versions, precision, times, memory."""
    import jax

    from nar_gap.system.provenance import provenance

    device = jax.devices()[0]
    return {
        "profile": profile.name,
        "device": f"{device.platform}: {device.device_kind}",
        "device_count": jax.device_count(),
        "notebooks": sorted(seconds),
        "seconds": seconds,
        "wall_seconds": time.time() - started,
        **peak_memory(),
        **provenance(),
    }


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
    started, seconds = time.time(), {}
    for number, notebook in scripts.items():
        stamp = state / f"{number}.json"
        before = None if force else _finished(stamp, Path(results))
        if before is not None:
            seconds[number] = before
            print(f"nar_gap job: {notebook.name} finished before ({before:.0f} s)")
            continue
        print(f"nar_gap job: {notebook.name} started", flush=True)
        begun = time.perf_counter()
        run_script(notebook, values)
        seconds[number] = time.perf_counter() - begun
        record = {"notebook": notebook.name, "seconds": seconds[number]}
        files.write_json_atomic(stamp, {**record, "results": results})
        print(
            f"nar_gap job: {notebook.name} finished in {seconds[number]:.0f} s",
            flush=True,
        )
    return files.write_json_atomic(
        Path(dirs.results) / JOB_FILE, job_record(profile, seconds, started)
    )


def _all_numbers(root: Path | None) -> list[str]:
    folder = (root or profiles.checkout_root()) / "notebooks"
    return sorted(p.name[:2] for p in folder.glob("[0-9][0-9]_*.ipynb"))


def archive_members(dirs: profiles.OutputDirs) -> list[tuple[Path, str]]:
    """What the archive holds: every results file, and the figures' PNGs."""
    results, figures = Path(dirs.results), Path(dirs.figures)
    members = [
        (p, f"results/{p.relative_to(results)}") for p in sorted(results.rglob("*"))
    ]
    if figures.is_dir():
        members += [(p, f"figures/{p.name}") for p in sorted(figures.glob("*.png"))]
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
