"""Where a number came from: notebook, code, libraries, backend, its self-check.

Every results sidecar and every run's ``metrics.json`` carries
:func:`provenance`, so a table found later can be traced to the commit that
wrote it (and whether that checkout had uncommitted changes), the library
versions, the JAX backend and devices, and the verdict of
:mod:`nar_gap.system.backend_check` in that process.  Nothing here names a path.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from nar_gap.system import backend_check, numerics

LIBRARIES = (
    "nar-gap",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "dm-clrs",
    "numpy",
    "scipy",
    "scikit-learn",
)
# Files whose changes do not change what the code computes: the outputs.
_OUTPUT_DIRS = ("results", "figures")
_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def versions() -> dict[str, str]:
    """Library versions recorded beside every result, plus the JAX platforms."""
    import jax

    found = {}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    found["devices"] = ", ".join(sorted({d.platform for d in jax.devices()}))
    return found


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(_SOURCE_ROOT), *args],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_state() -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of nar_gap's checkout.

    ``dirty`` counts uncommitted changes (and untracked files) anywhere but
    ``results/`` and ``figures/``, which a run itself rewrites.  Both are
    ``None`` when nar_gap is not installed from a git checkout.
    """
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None}
    excluded = [f":(exclude){name}" for name in _OUTPUT_DIRS]
    status = _git("status", "--porcelain", "--", ".", *excluded)
    return {"commit": commit.strip(), "dirty": None if status is None else bool(status)}


def backend() -> dict[str, Any]:
    """The JAX backend and its devices, by kind and count."""
    import jax

    devices = jax.devices()
    return {
        "platform": jax.default_backend(),
        "devices": [f"{d.platform}:{d.device_kind}" for d in devices],
        "device_count": len(devices),
    }


# The vector instruction sets XLA's CPU backend compiles for, widest first.
VECTOR_ISAS = ("avx512f", "avx2", "avx", "sse4_2")


def host(cpuinfo: str | None = None) -> dict[str, Any]:
    """The CPU that compiled and ran the programs: its model and widest vector ISA.

    XLA compiles CPU code for the host: its instruction set *and* its CPU
    model (LLVM's host CPU name tunes vector widths and unrolling), and the
    vector width decides the order of a float reduction's additions.  The
    same training run gives other bits under ``--xla_cpu_max_isa=AVX2`` or
    ``=AVX``, under ``--xla_cpu_prefer_vector_width=512``, with
    ``JAX_DISABLE_MOST_OPTIMIZATIONS=1``, and with another number of visible
    cores (measured on jax 0.10.1, an AVX-512 Xeon: 1 core against 2), and
    training amplifies last bits into other scores.  A rerun reproduces a
    result bit for bit only with all of these the same, so this records the
    model, the ISA, the cores and the flags (:func:`runtime_settings`).
    ``cpuinfo``: the text of ``/proc/cpuinfo`` (read when None; other
    systems report ``platform.processor()`` and no ISA).
    """
    import platform

    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in cpuinfo.splitlines())
        if value
    )
    flags = set(fields.get("flags", "").split())
    return {
        "machine": platform.machine(),
        "cpu": fields.get("model name") or platform.processor() or "unknown",
        "vector_isa": next((isa for isa in VECTOR_ISAS if isa in flags), "unknown"),
        **runtime_settings(),
    }


# Environment variables that change the bits XLA's CPU programs compute.
BIT_DECIDING_VARIABLES = ("XLA_FLAGS", "JAX_DISABLE_MOST_OPTIMIZATIONS")

# What nar_gap itself puts into XLA_FLAGS: part of the build it computes with.
OWN_XLA_FLAGS = (numerics.DETERMINISM_FLAG, backend_check.WORKAROUND_FLAG)

# JAX's spellings of an unset boolean switch (its environment parsing).
_OFF = ("", "0", "false", "f", "no", "n", "off")


def foreign_build_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """The bit-deciding settings in ``environ`` that are not nar_gap's own build.

    Why it matters: the tests' switches (``run_tests.sh`` sets
    ``JAX_DISABLE_MOST_OPTIMIZATIONS=1`` and an XLA flag) change every
    trained number's last bits, so a results file computed under them differs
    from the optimised build's everywhere (notebook 07 at the studies
    profile, rerun from a shell with ``JAX_DISABLE_MOST_OPTIMIZATIONS=1``,
    changed the last bits of every table and took 3 708 s against 1 304 s:
    docs/notebooks.md).  Flags nar_gap adds itself (:data:`OWN_XLA_FLAGS`)
    are its own build.  Returns ``{variable: its foreign part}``; empty when
    none.
    """
    found = {}
    disabled = environ.get("JAX_DISABLE_MOST_OPTIMIZATIONS", "")
    if disabled.strip().lower() not in _OFF:
        found["JAX_DISABLE_MOST_OPTIMIZATIONS"] = disabled
    flags = [
        flag
        for flag in environ.get("XLA_FLAGS", "").split()  # on whitespace
        if flag not in OWN_XLA_FLAGS
    ]
    if flags:
        found["XLA_FLAGS"] = " ".join(flags)
    return found


def usable_cores() -> int:
    """The cores this process may use: its affinity, else every core.

    The affinity is what ``taskset`` or a batch job's share of a shared node
    leaves it; off Linux there is none, and every core counts.
    """
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def runtime_settings(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """What besides the CPU decides the bits: visible cores and XLA's switches.

    XLA's CPU thread pool has one thread per core the process may use (its
    affinity, so ``taskset`` counts), and a 5-step training run gave other
    parameter bits on 1 core than on 2; which operation splits its work by
    thread count is not isolated (single matmuls and sums did not change).
    """
    import os

    environ = dict(os.environ) if environ is None else environ
    return {
        "usable_cores": usable_cores(),
        **{name: environ.get(name, "") for name in BIT_DECIDING_VARIABLES},
    }


# The notebook writing results in this process: set by whatever runs it
# (tools.notebook_runner for papermill, tools.job for the offline job), read
# by every sidecar.  An environment variable, because papermill runs the
# notebook in a kernel process of its own, which inherits the environment.
NOTEBOOK_ENV = "NAR_GAP_NOTEBOOK"


def writing_notebook() -> str | None:
    """The notebook this process writes results for; None outside a runner.

    Each committed table, array file and figure names it in its sidecar, so
    a test can tell that ``./run_all.sh`` wrote it (no side script did).
    """
    return os.environ.get(NOTEBOOK_ENV) or None


@contextlib.contextmanager
def writing_for(notebook: str) -> Iterator[None]:
    """Within the block (and in processes started in it) results name ``notebook``."""
    before = os.environ.get(NOTEBOOK_ENV)
    os.environ[NOTEBOOK_ENV] = notebook
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(NOTEBOOK_ENV, None)
        else:
            os.environ[NOTEBOOK_ENV] = before


def provenance() -> dict[str, Any]:
    """Everything a reader needs to tell which code and backend made a result."""
    return {
        "notebook": writing_notebook(),
        "git": git_state(),
        "versions": versions(),
        "backend": backend(),
        "host": host(),
        "self_check": backend_check.self_check().to_dict(),
        "numerics": numerics.numerics_record(),
    }
