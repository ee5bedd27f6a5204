"""Atomic writers for results, checkpoints and figures.

Everything nar_gap writes goes through a temporary file in the target's own
directory followed by ``os.replace``, so an interrupted run leaves either the
old file or the new one, never half of one, and a finished result is never lost
to a later failure.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; processes must not share a run
    fcntl = None

from nar_gap.system.provenance import provenance


class OutputError(OSError):
    """An output location cannot be created or written."""


def ensure_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` (and parents) or say clearly why it cannot be."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(
            f"cannot create output directory {path}: {error.strerror}"
        ) from None
    if not os.access(path, os.W_OK):
        raise OutputError(f"output directory {path} is not writable")
    return path


LOCK_FILE = ".lock"


@contextlib.contextmanager
def exclusive(
    directory: str | os.PathLike,
    on_wait: Callable[[], None] | None = None,
    name: str = LOCK_FILE,
) -> Iterator[Path]:
    """Hold ``directory``'s lock while this process writes there.

    ``./run_all.sh`` runs independent notebooks side by side, and a user may
    start two notebooks in two terminals: two processes asked for the same
    run would both train it and write the same checkpoints.  With the lock
    the second waits (``on_wait`` is called once, to say so), then finds the
    run finished and reads it back.  The lock is advisory (``flock``) and is
    released when the process ends, however it ends.  ``name`` picks another
    lock file in the same directory, for a lock taken while ``LOCK_FILE`` is
    held (an ``flock`` on a second handle of one file blocks its own holder).
    """
    path = ensure_dir(directory)
    with open(path / name, "a") as handle:
        if fcntl is not None:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                fcntl.flock(handle, fcntl.LOCK_EX)
        yield path


def _umask() -> int:
    """The process's umask (read by setting it, so set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _atomic_path(path: Path) -> Iterator[Path]:
    ensure_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        # mkstemp creates 0600; the result gets the mode any new file would.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _record_written(path)


WRITTEN_LOG = "NAR_GAP_WRITTEN_LOG"


def _record_written(path: Path) -> None:
    """Append ``path`` to the file named by ``$NAR_GAP_WRITTEN_LOG``, if set.

    ``./run_all.sh`` runs notebooks side by side and must know which files
    each one wrote (its stamp lists them, so it is skipped only while they
    are unchanged); modification times cannot tell two notebooks running at
    once apart.  One short line per write, opened for appending, so writers
    in several processes do not interleave within a line.
    """
    log = os.environ.get(WRITTEN_LOG)
    if log:
        with open(log, "a") as handle:
            handle.write(f"{path.resolve()}\n")


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (fsynced before the rename)."""
    path = Path(path)
    with _atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def to_jsonable(value: Any) -> Any:
    """Numpy / JAX scalars and arrays, tuples, dataclass dicts -> plain JSON."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        array = np.asarray(value)
        return to_jsonable(array.item() if array.ndim == 0 else array.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return to_jsonable(value.item())
    return value


def write_json_atomic(path: str | os.PathLike, payload: Any) -> Path:
    """Write ``payload`` as indented JSON atomically (numpy values made plain)."""
    text = json.dumps(to_jsonable(payload), indent=2, sort_keys=False)
    return write_text_atomic(path, text + "\n")


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file."""
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def write_csv_atomic(
    path: str | os.PathLike,
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
) -> Path:
    """Rows of scalars as CSV; columns default to the union of keys, in order."""
    if columns is None:
        columns = list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: to_jsonable(row.get(key, "")) for key in columns})
    return write_text_atomic(path, buffer.getvalue())


# No creation date, no software version: the same figure is the same file, so
# a rerun that changes nothing leaves git clean.
_FIXED_METADATA = {
    "png": {"Software": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
    "svg": {"Date": None, "Creator": None},
}


# The formats a figure is saved in unless its caller names them: a comma-
# separated list in this variable, else png and pdf.  A notebook's setup sets
# it from its profile (``Profile.figure_formats``): the smoke profile writes
# png alone, since each format is a full draw of the figure (notebook 01's 13
# figures: 17.3 s in both, 8.4 s in png alone).
FIGURE_FORMATS_ENV = "NAR_GAP_FIGURE_FORMATS"
DEFAULT_FIGURE_FORMATS = ("png", "pdf")


def figure_formats() -> tuple[str, ...]:
    """The formats :func:`save_figure` writes by default (:data:`FIGURE_FORMATS_ENV`).

    Only formats whose changing metadata is left out (png, pdf, svg), so a
    figure drawn again is the same file; any other is refused in one line.
    """
    chosen = os.environ.get(FIGURE_FORMATS_ENV, "").strip()
    if not chosen:
        return DEFAULT_FIGURE_FORMATS
    formats = tuple(part.strip() for part in chosen.split(","))
    unknown = [fmt for fmt in formats if fmt not in _FIXED_METADATA]
    if unknown:
        raise ValueError(
            f"{FIGURE_FORMATS_ENV}={chosen!r}: unknown figure format {unknown[0]!r} "
            f"(choose from {', '.join(_FIXED_METADATA)})"
        )
    return formats


def save_figure(
    fig: Any,
    path_stem: str | os.PathLike,
    formats: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Save a matplotlib figure as ``<stem>.<format>`` per format, atomically.

    ``formats``: :func:`figure_formats` unless given.  Written reproducibly:
    the metadata that changes between runs (dates, versions) is left out, so
    an unchanged figure is a byte-identical file.  Those go into the sidecar
    ``<stem>.json`` instead, written first, as a table's is: the formats,
    ``metadata`` (e.g. the results files it was drawn from), and the
    notebook, commit and backend that drew it.
    """
    formats = figure_formats() if formats is None else tuple(formats)
    _write_sidecar(path_stem, "figure", {"formats": list(formats), **(metadata or {})})
    written = []
    for fmt in formats:
        buffer = io.BytesIO()
        fig.savefig(
            buffer,
            format=fmt,
            dpi=150,
            bbox_inches="tight",
            metadata=_FIXED_METADATA.get(fmt),
        )
        written.append(write_bytes_atomic(f"{path_stem}.{fmt}", buffer.getvalue()))
    return written


def sidecar_path(table: str | os.PathLike) -> Path:
    """Where a result's JSON sidecar is: ``<name>.json``; a figure's ``<stem>.json``."""
    table = Path(table)
    return table.with_name(table.name + ".json")


def _write_sidecar(
    path: str | os.PathLike, kind: str, metadata: Mapping[str, Any] | None
) -> Path:
    """``path``'s sidecar: its name under ``kind``, ``metadata``, :func:`provenance`."""
    path = Path(path)
    return write_json_atomic(
        sidecar_path(path), {kind: path.name, **dict(metadata or {}), **provenance()}
    )


def write_table(
    path: str | os.PathLike,
    rows: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
) -> Path:
    """A results table: CSV plus a JSON sidecar ``<path>.json``.

    The sidecar records what produced the numbers (``metadata``: profile,
    configuration, seeds) and :func:`nar_gap.system.provenance.provenance` (commit,
    library versions, backend, the backend self-check's verdict), so a CSV
    found later can be traced back.  Both files are written atomically, the
    sidecar first.
    """
    _write_sidecar(path, "table", metadata)
    return write_csv_atomic(path, rows, columns)


def write_arrays(
    path: str | os.PathLike,
    arrays: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """A results ``.npz`` with a JSON sidecar, as :func:`write_table` writes a CSV."""
    _write_sidecar(path, "arrays", metadata)
    return write_npz_atomic(path, arrays)


def write_npz_atomic(path: str | os.PathLike, arrays: Mapping[str, Any]) -> Path:
    """Arrays as a compressed ``.npz``, atomically (for notebooks and figures)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    return write_bytes_atomic(path, buffer.getvalue())


def read_table(path: str | os.PathLike) -> list[dict[str, str]]:
    """Rows of a CSV written by :func:`write_table` (values as strings)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def float_cell(text: str) -> float:
    """A number cell as a float: :func:`write_table` writes NaN as an empty cell."""
    return float(text) if text != "" else math.nan


def cell_value(text: str) -> bool | int | float | str:
    """One CSV cell as :func:`write_table` wrote it from a Python value.

    ``True``/``False`` were booleans, integer and float text numbers; the
    rest (``""``, names, space-separated lists) stays text.  What reading a
    results table back (a notebook's ``FROM_RESULTS``) needs wherever rows
    are compared or tested for truth, not only shown.
    """
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
