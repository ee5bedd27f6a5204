"""Work drawn ahead by worker processes, handed over in order through shared memory.

A training step's batches are a pure function of the step, so several
processes can draw steps at once and the trainer can take them in order.
Threads would not do: drawing is numpy on small arrays, much of it Python,
and would hold the trainer's GIL.  :func:`prefetch_in_processes` keeps up to
``depth`` steps in flight over ``workers`` processes, step ``i`` on worker
``i mod workers``, and yields the results in step order.

The workers are fresh interpreters (``python -m nar_gap.tasks.prefetch``),
started with ``subprocess``: never a ``fork`` of the trainer, whose JAX
runtime must not be copied, and not multiprocessing's ``spawn`` either,
which re-runs the parent's ``__main__`` script in every worker -- a training
script without an ``if __name__ == "__main__"`` guard would train again in
each of them.  They run with ``JAX_PLATFORMS=cpu``, so nothing they import
can take an accelerator's memory, and with glibc keeping the memory they
free for their next step.

A step's batch is large (15 MB for BFS at 128 seeds and N = 16, 150 MB for
DFS) and a pipe would cost the trainer a copy plus the reads.  So a worker
pickles its result with the arrays out of band (protocol 5) into a file in
shared memory (``/dev/shm`` where it has room) and sends only the file's
name and the small in-band pickle; the trainer unpickles arrays that are
views of its mapping of the file.  The files are a ring of slots, each
mapped by the trainer once and rewritten by the workers, because mapping a
fresh file costs the trainer a page fault per 4 KiB it reads (~2 ms for a
16 MB step, as much as drawing it on 12 cores); a slot is rewritten only
once no array of its last result is left (:class:`Slots`).  When every
slot is still held, a step goes through a file of its own instead, mapped
privately and unlinked at once.
"""

from __future__ import annotations

import collections
import mmap
import os
import pickle
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import traceback
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

_SHARED_MEMORY = Path("/dev/shm")  # tmpfs on Linux; elsewhere the temp dir
_MIN_SHARED_BYTES = 4 * 2**30  # room for the slots of a long DFS run
_LENGTH = struct.Struct("<Q")
# glibc hands large blocks back to the OS when they are freed, so a worker
# faults every page of its next step's arrays in again (zeroed by the
# kernel).  Keeping blocks up to 32 MiB (glibc's ceiling for this setting,
# above most of a step's arrays) measured 15-20 % faster for DFS, a few %
# for Bellman-Ford, nothing for BFS.
_KEEP_FREED_MEMORY = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(2**32),
}
_STOP_SECONDS = 10.0  # how long a worker may take to exit once told to

Stored = tuple[str, bytes, list[tuple[int, int]]]
"""A result in shared memory: ``(file, in-band pickle, (offset, size) per buffer)``."""


class WorkerError(RuntimeError):
    """A worker process failed; the message carries its traceback."""


# -------------------------------------------------------------- messages


def _send(stream: BinaryIO, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def _receive(stream: BinaryIO) -> Any:
    """The next message, or None at the end of the stream."""
    prefix = stream.read(_LENGTH.size)
    if len(prefix) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(prefix)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


# -------------------------------------------------------- shared memory


def store_shared(value: Any, folder: str, slot: str | None = None) -> Stored:
    """``value`` pickled with its buffers out of band, the buffers into a file.

    Into ``slot`` (a reused file, grown if too small) when given, else into
    a new file in ``folder``.
    """
    buffers: list[pickle.PickleBuffer] = []
    header = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    if slot is None:
        descriptor, path = tempfile.mkstemp(dir=folder)
    else:
        descriptor, path = os.open(slot, os.O_RDWR | os.O_CREAT, 0o600), slot
    spans, offset = [], 0
    try:
        total = sum(raw.nbytes for raw in raws)
        if os.fstat(descriptor).st_size < total:
            os.ftruncate(descriptor, total)
        for raw in raws:
            written = 0
            while written < raw.nbytes:
                written += os.pwrite(descriptor, raw[written:], offset + written)
            spans.append((offset, raw.nbytes))
            offset += raw.nbytes
    finally:
        os.close(descriptor)
    return path, header, spans


def _unpickle(header: bytes, spans: list[tuple[int, int]], memory: Any) -> Any:
    view = memoryview(memory)
    return pickle.loads(header, buffers=[view[at : at + size] for at, size in spans])


def load_shared(path: str, header: bytes, spans: list[tuple[int, int]]) -> Any:
    """The value :func:`store_shared` stored in a new file; unlinks the file.

    The arrays are views of a private mapping: writable (copy-on-write),
    freed with the last of them; their pages fault in as they are read.
    """
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            mapping = (
                mmap.mmap(
                    file.fileno(),
                    size,
                    flags=mmap.MAP_PRIVATE,
                    prot=mmap.PROT_READ | mmap.PROT_WRITE,
                )
                if size
                else b""
            )
    finally:
        os.unlink(path)
    return _unpickle(header, spans, mapping)


class Slots:
    """Files results are written into, each mapped here once and reused.

    A fresh mapping costs a page fault per 4 KiB read (~2 ms for a 16 MB
    step here); a file mapped once and rewritten by the workers costs none.
    A slot is lent to a new step only once the arrays of its last result
    are all gone: they are views of one base array per result, held here by
    a weak reference, so no array anyone still holds is ever overwritten.
    """

    def __init__(self, folder: str, count: int) -> None:
        self.paths = [os.path.join(folder, f"slot{index}") for index in range(count)]
        self.mappings: list[mmap.mmap | None] = [None] * count
        self.lent = [False] * count
        self.results: list[weakref.ref | None] = [None] * count

    def lend(self) -> str | None:
        """A free slot's file, now lent to a step; None if every slot is in use."""
        for index, result in enumerate(self.results):
            if not self.lent[index] and (result is None or result() is None):
                self.lent[index] = True
                return self.paths[index]
        return None

    def load(self, path: str, header: bytes, spans: list[tuple[int, int]]) -> Any:
        """The value a worker stored in slot ``path``, the slot's until it is gone."""
        index = self.paths.index(path)
        size = os.stat(path).st_size
        mapping = self.mappings[index]
        if mapping is None or len(mapping) < size:  # first use, or the file grew
            with open(path, "r+b") as file:
                mapping = mmap.mmap(file.fileno(), size, flags=mmap.MAP_SHARED)
            self.mappings[index] = mapping
        base = np.frombuffer(mapping, dtype=np.uint8)  # every array views this
        self.results[index] = weakref.ref(base)
        self.lent[index] = False
        return _unpickle(header, spans, base)


# --------------------------------------------------------------- worker


def _failure(error: BaseException) -> tuple[str, Any]:
    text = "".join(traceback.format_exception(error))
    try:
        pickle.dumps(error)
    except Exception:  # noqa: BLE001 (any unpicklable error is sent as text)
        error = WorkerError(text)
    return "error", (error, text)


def serve(requests: BinaryIO, results: BinaryIO) -> None:
    """A worker's loop: ``(make, folder)``, then steps; one reply per step, in order.

    Ends when the trainer closes the requests (it is done, or gone) or stops
    reading the results.  Ctrl-C is the trainer's to handle: it reaches the
    whole process group, and the trainer then closes the pipes.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    make, folder = _receive(requests)
    while (request := _receive(requests)) is not None:
        step, slot = request
        try:
            reply = ("ok", store_shared(make(step), folder, slot))
        except Exception as error:  # noqa: BLE001 (sent to the trainer, raised there)
            reply = _failure(error)
        try:
            _send(results, reply)
        except BrokenPipeError:  # the trainer stopped reading
            return


class _Worker:
    """One worker process and the two pipes to it."""

    def __init__(self, make: Callable[[int], Any], folder: str) -> None:
        to_worker, self._requests_end = os.pipe()
        self._results_end, from_worker = os.pipe()
        env = dict(os.environ, JAX_PLATFORMS="cpu", **_KEEP_FREED_MEMORY)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(to_worker), str(from_worker)],
            pass_fds=(to_worker, from_worker),
            env=env,
        )
        os.close(to_worker)
        os.close(from_worker)
        self.requests = os.fdopen(self._requests_end, "wb")
        self.results = os.fdopen(self._results_end, "rb")
        self._tell((make, folder))

    def _tell(self, message: Any) -> None:
        try:
            _send(self.requests, message)
        except BrokenPipeError:
            raise self._ended() from None

    def ask(self, step: int, slot: str | None) -> None:
        """Queue ``step``, its result to go into ``slot`` (None: a file of its own)."""
        self._tell((step, slot))

    def answer(self) -> Stored:
        """The oldest queued step's result; its error raised, if it failed."""
        reply = _receive(self.results)
        if reply is None:
            raise self._ended()
        status, value = reply
        if status == "error":
            error, text = value
            raise error from WorkerError(f"in sampling worker:\n{text}")
        return value

    def _ended(self) -> WorkerError:
        code = self.process.wait()
        return WorkerError(
            f"sampling worker {self.process.pid} exited with {code} (its error, "
            "if any, is on stderr above)"
        )

    def hang_up(self) -> None:
        """Close both pipes: the worker ends after the step it is drawing."""
        for stream in (self.requests, self.results):
            try:
                stream.close()
            except OSError:  # a dead worker's pipe
                pass

    def wait(self) -> None:
        """Wait for the worker to end; kill it if it does not."""
        try:
            self.process.wait(_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def prefetch_in_processes(
    make: Callable[[int], Any],
    steps: Iterable[int],
    workers: int,
    depth: int | None = None,
) -> Iterator[Any]:
    """Yield ``make(step)`` for each step, in order, computed by worker processes.

    Args:
        make: a picklable function of the step (a module-level function or a
            ``functools.partial`` of one), run in the workers.
        steps: the steps, in the order to yield them.
        workers: worker processes, >= 1.
        depth: steps in flight at most (default ``workers + 2``: one waiting
            for each worker, and two more): bounds the memory results wait in.

    Raises:
        Whatever ``make`` raised for a step, when that step is due.
        WorkerError: if a worker died.
    """
    if workers < 1:
        raise ValueError(f"expected at least one worker, found {workers}")
    depth = max(depth or workers + 2, 1)
    folder = _scratch_folder()
    slots = Slots(folder, depth + 2)  # the trainer may hold two steps' arrays
    pool: list[_Worker] = []

    def receive(worker: _Worker, slot: str | None) -> Any:
        stored = worker.answer()
        return load_shared(*stored) if slot is None else slots.load(*stored)

    try:
        pool.extend(_Worker(make, folder) for _ in range(workers))
        in_flight: collections.deque = collections.deque()
        for index, step in enumerate(steps):
            worker, slot = pool[index % workers], slots.lend()
            worker.ask(step, slot)
            in_flight.append((worker, slot))
            if len(in_flight) >= depth:
                yield receive(*in_flight.popleft())
        while in_flight:
            yield receive(*in_flight.popleft())
    finally:
        for worker in pool:  # all at once: each takes a moment to exit
            worker.hang_up()
        for worker in pool:
            worker.wait()
        shutil.rmtree(folder, ignore_errors=True)  # mapped slots live on as needed


def _scratch_folder() -> str:
    """A new folder in ``/dev/shm`` if it has room (tmpfs: memory), else in /tmp.

    Containers often mount a small ``/dev/shm``; a full one would fail the run.
    """
    root = None
    if _SHARED_MEMORY.is_dir():
        stats = os.statvfs(_SHARED_MEMORY)
        if stats.f_bavail * stats.f_frsize >= _MIN_SHARED_BYTES:
            root = str(_SHARED_MEMORY)
    return tempfile.mkdtemp(prefix="nar_gap-prefetch-", dir=root)


if __name__ == "__main__":
    # The package's own module, not this __main__ copy: errors sent back must
    # unpickle as nar_gap.tasks.prefetch.WorkerError in the trainer.
    from nar_gap.tasks.prefetch import serve as _serve

    with (
        os.fdopen(int(sys.argv[1]), "rb") as _requests,
        os.fdopen(int(sys.argv[2]), "wb") as _results,
    ):
        _serve(_requests, _results)
    # Nothing is left to save, and tearing down JAX's and numpy's modules
    # takes ~1 s that the trainer would wait for.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
