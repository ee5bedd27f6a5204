"""One run over several processes: JAX's multi-controller runtime on the seed axis.

Seeds never talk to each other during training: a step's data and keys
depend on its seed and step alone (:mod:`nar_gap.training.feed`).  So a
run over P processes (one per machine, or several on one) needs no
collective at all: process ``i`` trains its own contiguous block of the
run's seeds (:func:`own_seeds`) over its own local devices, with the usual
seed sharding (:mod:`nar_gap.training.devices`), writes only those seeds'
files, and the processes meet at a :func:`barrier` before process 0
merges the run's tables.  ``jax.distributed`` provides the process
numbering and the barrier (its coordination service, a key-value store
with barriers; no XLA collective, so no gloo or MPI on a CPU).

Between machines the run directory must be one shared filesystem
(checkpoints, per-seed results and ``validation.csv`` are read and written
there by every process, the last under an ``flock``, which NFS honours).

Each process is started with the same arguments plus its place:
``coordinator`` (``HOST:PORT`` of process 0, reachable from every
process), ``num_processes`` and ``process_id``; or the environment
variables :data:`COORDINATOR_ENV`, :data:`NUM_PROCESSES_ENV` and
:data:`PROCESS_ID_ENV`, so a script such as ``./run_all.sh`` can be
started unchanged on each machine.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Mapping, Sequence

import jax

COORDINATOR_ENV = "NAR_GAP_COORDINATOR"
NUM_PROCESSES_ENV = "NAR_GAP_NUM_PROCESSES"
PROCESS_ID_ENV = "NAR_GAP_PROCESS_ID"

# A barrier waits for the slowest process's training, which may take days:
# the wait is bounded only so that a process that hangs is noticed in the end.
# A process that dies is noticed sooner, by the coordination service's
# heartbeats.
BARRIER_TIMEOUT_MS = 7 * 24 * 3600 * 1000

_barriers = itertools.count()  # every process calls barriers in the same order


class HostsError(ValueError):
    """The processes of a run are misdescribed (a one-line message)."""


@dataclasses.dataclass(frozen=True)
class Hosts:
    """Where this process stands in a run over several processes."""

    coordinator: str
    num_processes: int
    process_id: int


def _port(coordinator: str) -> int | None:
    host, _, port = coordinator.rpartition(":")
    return int(port) if host and port.isdigit() and 0 < int(port) < 65536 else None


def hosts_from(
    coordinator: str | None = None,
    num_processes: int | str | None = None,
    process_id: int | str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Hosts | None:
    """The processes of a run, from the arguments, else the environment.

    None when neither says anything (one process); a one-line
    :class:`HostsError` when the description is partial or out of range,
    since a half-described process would train every seed on its own.
    """
    env = os.environ if environ is None else environ
    coordinator = coordinator if coordinator is not None else env.get(COORDINATOR_ENV)
    count = num_processes if num_processes is not None else env.get(NUM_PROCESSES_ENV)
    index = process_id if process_id is not None else env.get(PROCESS_ID_ENV)
    if coordinator is None and count is None and index is None:
        return None
    if coordinator is None or count is None or index is None:
        raise HostsError(
            "several processes need all three of the coordinator (HOST:PORT), "
            "the number of processes and this process's id"
        )
    if _port(coordinator) is None:
        raise HostsError(f"coordinator must be HOST:PORT, got {coordinator!r}")
    count, index = _integer(count, "number of processes"), _integer(index, "id")
    if count < 1:
        raise HostsError(f"the number of processes must be >= 1, got {count}")
    if not 0 <= index < count:
        raise HostsError(f"process id must be in 0..{count - 1}, got {index}")
    return Hosts(coordinator, count, index)


def _integer(value: int | str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise HostsError(f"process {what} must be an integer, got {value!r}") from None


def initialize(hosts: Hosts | None) -> None:
    """Join the run's processes (``jax.distributed``); one process: nothing.

    Must come before anything starts a JAX backend (``jax.distributed``'s
    rule).  Called again with the same description, it does nothing, so
    the CLI and :func:`nar_gap.training.train` may both call it.
    """
    if hosts is None or hosts.num_processes == 1:
        return
    if jax.distributed.is_initialized():
        if (jax.process_count(), jax.process_index()) != (
            hosts.num_processes,
            hosts.process_id,
        ):
            raise HostsError(
                f"this process already joined a run as {jax.process_index()} of "
                f"{jax.process_count()}, not {hosts.process_id} of "
                f"{hosts.num_processes}"
            )
        return
    try:
        jax.distributed.initialize(
            hosts.coordinator, hosts.num_processes, hosts.process_id
        )
    except RuntimeError as error:
        raise HostsError(
            f"cannot join the run's processes: {str(error).splitlines()[0]}"
        ) from None


def initialize_from_environment() -> None:
    """:func:`initialize` from :data:`COORDINATOR_ENV` and its two companions."""
    initialize(hosts_from())


def process_index() -> int:
    """This process's place in the run (0: the one that merges)."""
    return jax.process_index()


def process_count() -> int:
    """How many processes share the run (1 without ``jax.distributed``)."""
    return jax.process_count()


def own_seeds(
    seeds: Sequence[int], index: int | None = None, count: int | None = None
) -> tuple[int, ...]:
    """The contiguous block of ``seeds`` that process ``index`` of ``count`` trains.

    Contiguous, so each process's seeds are one range in its progress line,
    and blocks differ in size by at most one seed.  A process with no seed
    would only wait, so fewer seeds than processes is an error.
    """
    index = process_index() if index is None else index
    count = process_count() if count is None else count
    if len(seeds) < count:
        raise HostsError(
            f"{len(seeds)} seeds cannot be shared by {count} processes: "
            "use at most as many processes as seeds"
        )
    start, stop = index * len(seeds) // count, (index + 1) * len(seeds) // count
    return tuple(seeds[start:stop])


def barrier(name: str) -> None:
    """Wait until every process of the run reaches this point (one process: no-op).

    The coordination service's barrier, not a device collective: it needs
    no cross-process XLA communication, which a CPU lacks without gloo.
    Each call gets a fresh id (a barrier id is used once), the same in
    every process because they all call the same barriers in order.
    """
    if process_count() == 1:
        return
    from jax._src import distributed  # the client JAX's own checkpointing uses

    barrier_id = f"nar_gap:{name}:{next(_barriers)}"
    distributed.global_state.client.wait_at_barrier(barrier_id, BARRIER_TIMEOUT_MS)
