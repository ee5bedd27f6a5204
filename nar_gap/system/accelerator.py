"""Whether this machine should run JAX on an NVIDIA GPU, and a warning when it does not.

``scripts/ensure_env.sh`` installs JAX's CUDA 12 plugin when ``nvidia-smi -L``
lists a GPU, or when ``NAR_GAP_ACCELERATOR=cuda`` says so (``=cpu`` forces the
CPU build).  ``nar-gap info`` applies the same rule, and expects a GPU wherever
that plugin is installed, to say when JAX runs on the CPU all the same: the
plugin is missing, or it found no GPU it can use (no GPU at all, or a driver
older than CUDA 12 needs).  Such a run computes the same numbers,
only far slower, and nothing else would say so.  The script's rule and this
one are checked against each other on stand-in ``nvidia-smi`` programs
(``tests/project/test_accelerator_install.py``).
"""

from __future__ import annotations

import collections
import importlib.metadata
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence

ACCELERATOR_VARIABLE = "NAR_GAP_ACCELERATOR"
ACCELERATORS = ("cpu", "cuda")
CUDA_PLUGIN = "jax-cuda12-plugin"
# `nvidia-smi -L` prints one "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)" line
# per GPU, and the MIG slices of a partitioned GPU indented below it.
_GPU_LINE = re.compile(r"^GPU \d+:", re.MULTILINE)
# A hung driver can keep nvidia-smi waiting; `info` should still finish.
_NVIDIA_SMI_TIMEOUT_S = 30


def count_gpus(listing: str) -> int:
    """The GPUs in ``nvidia-smi -L``'s output (MIG slices count with their GPU)."""
    return len(_GPU_LINE.findall(listing))


def list_gpus(nvidia_smi: str) -> str:
    """``nvidia-smi -L``'s output, whatever its exit status; ``""`` if it hangs.

    Where no GPU answers (a driver not loaded, a container without the device)
    nvidia-smi lists none and fails; where one of several GPUs is broken it
    lists the others and fails too.  So its listed lines decide, not its exit
    status, as in ensure_env.sh.
    """
    try:
        done = subprocess.run(
            [nvidia_smi, "-L"],
            capture_output=True,
            text=True,
            timeout=_NVIDIA_SMI_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout


def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def expected_accelerator(
    environ: Mapping[str, str],
    which: Callable[[str], str | None] = shutil.which,
    listing: Callable[[str], str] = list_gpus,
    version: Callable[[str], str | None] = installed_version,
) -> str | None:
    """Why JAX should run on an NVIDIA GPU here, or None where the CPU is expected.

    The rule of ``scripts/ensure_env.sh``: ``NAR_GAP_ACCELERATOR`` decides when
    set; unset (or empty), a GPU listed by the ``nvidia-smi`` on the PATH does.
    Beyond the script's rule, an installed CUDA plugin expects a GPU too: it
    was installed for one (``NAR_GAP_ACCELERATOR=cuda`` at install time, say).

    Args:
        environ: the environment (``os.environ``).
        which: finds a program on the PATH (``shutil.which``).
        listing: ``nvidia-smi -L``'s output, given the program's path.
        version: a distribution's installed version, or None.

    Returns:
        The reason, for a message (``"nvidia-smi lists 2"``,
        ``"NAR_GAP_ACCELERATOR=cuda"``, ``"jax-cuda12-plugin 0.10.1 is
        installed"``), or None.

    Raises:
        ValueError: ``NAR_GAP_ACCELERATOR`` holds neither ``cpu`` nor ``cuda``.
    """
    choice = environ.get(ACCELERATOR_VARIABLE, "")
    if choice not in ("", *ACCELERATORS):
        raise ValueError(
            f"{ACCELERATOR_VARIABLE} must be cpu or cuda (or unset: cuda when "
            f"nvidia-smi -L lists a GPU), not {choice!r}"
        )
    if choice:
        return f"{ACCELERATOR_VARIABLE}={choice}" if choice == "cuda" else None
    nvidia_smi = which("nvidia-smi")
    count = 0 if nvidia_smi is None else count_gpus(listing(nvidia_smi))
    if count:
        return f"nvidia-smi lists {count}"
    plugin = version(CUDA_PLUGIN)
    return None if plugin is None else f"{CUDA_PLUGIN} {plugin} is installed"


def accelerator_warning(expected: str | None, backend: str) -> str | None:
    """One line for a run expected on a GPU whose JAX runs on the CPU, else None.

    Args:
        expected: :func:`expected_accelerator`'s reason, or None.
        backend: JAX's default backend (``jax.default_backend()``).
    """
    if expected is None or backend != "cpu":
        return None
    return (
        f"nar_gap: warning: an NVIDIA GPU was expected ({expected}) but JAX runs "
        "on cpu: install JAX's CUDA plugin with `NAR_GAP_ACCELERATOR=cuda "
        "scripts/ensure_env.sh`; if it is installed, `JAX_PLATFORMS=cuda python "
        "-c 'import jax; jax.devices()'` says why it found no GPU (the driver "
        "must be >= 525)"
    )


def describe_devices(devices: Sequence[str]) -> list[str]:
    """``"platform: count x kind"`` per kind, from ``"platform:kind"`` entries.

    The entries are those of :func:`nar_gap.system.provenance.backend`; eight
    identical GPUs read as one line.
    """
    counts = collections.Counter(devices)
    lines = []
    for entry, count in counts.items():
        platform, _, kind = entry.partition(":")
        lines.append(f"{platform}: {count} x {kind}")
    return lines
