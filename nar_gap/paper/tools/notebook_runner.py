"""Execute one notebook with papermill, quietly, as ``run_all.sh`` and the tests do.

``python -m nar_gap.paper.tools.notebook_runner IN OUT --cwd notebooks -p NAME VALUE``

Why not papermill's own command line: its kernel manager starts the kernel
over plain TCP, and ipykernel >= 7.3 then warns on every start that the
traffic is unencrypted.  Kernel and client share this machine; the manager
here provisions CurveZMQ keys (``transport_encryption="auto"``: used when the
kernelspec declares support, as ipykernel's does), which is what the warning
asks for, so nothing is silenced.

Why unix sockets: over TCP, jupyter_client picks five free ports by binding
port 0 and releasing it, writes them to the connection file, and the kernel
binds them later (jupyter/jupyter_client#487, nteract/papermill#511).  Two
notebooks started side by side (``run_all.sh`` runs independent notebooks at
once, the tests run several ``run_all.sh`` and kernels in parallel workers)
can draw the same port in that gap; the loser dies with "Address already in
use" and its notebook fails before its first cell.  Over ``ipc`` each kernel's
endpoints are files in a directory made for that kernel alone, so there is
no shared namespace to race on.  Windows has no ``ipc`` transport: TCP there.

Why :func:`check_kernel_package`: the kernel is the venv's python, which
imports nar_gap through the venv's editable install, not from the folder it
runs in.  A checkout whose ``.venv`` was linked from another checkout ran the
other checkout's code in every notebook, and its sidecars named the other
commit; nothing failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from jupyter_client.manager import AsyncKernelManager
from traitlets import default

from nar_gap.system.provenance import writing_for

KERNEL_NAME = "nar-gap"


class EncryptedKernelManager(AsyncKernelManager):
    """nbclient's kernel manager: transport encryption on, no interrupt at shutdown.

    jupyter_client's ``shutdown_kernel`` sends SIGINT before it asks the kernel
    to shut down; papermill shuts a kernel down only once every cell has
    finished, so the idle kernel logged "KeyboardInterrupt caught in kernel"
    on successful runs.  Interrupts sent while a cell runs (a timeout) still go.
    """

    ended_with: ClassVar[int | None] = None
    """The exit status of the last kernel found dead (negative: its signal)."""

    @default("transport_encryption")
    def _transport_encryption_default(self) -> str:
        return "auto"

    async def is_alive(self) -> bool:
        """Is the kernel running?  A dead one's exit status is kept.

        nbclient only says a kernel died (``DeadKernelError``); how it ended
        (a segfault, SIGKILL from the out-of-memory killer, an exit code) is
        the provisioner's, and gone once the manager cleans up.
        """
        if await super().is_alive():
            return True
        if self.provisioner is not None and self.provisioner.has_process:
            ended = await self.provisioner.poll()
            if ended is not None:
                EncryptedKernelManager.ended_with = ended
        return False

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: object) -> None:
        await super()._async_launch_kernel(kernel_cmd, **kw)
        assert self.provisioner is not None
        pid = getattr(self.provisioner, "pid", None)
        if pid is not None:
            share_priority(pid)

    @default("transport")
    def _transport_default(self) -> str:
        return "ipc" if os.name == "posix" else "tcp"

    @default("ip")
    def _ip_default(self) -> str:
        if self.transport != "ipc":
            return super()._ip_default()
        # A short private folder: unix socket paths are limited to ~100 bytes,
        # and jupyter_client's own default (beside the connection file, or
        # ``kernel-ipc`` in the working folder) is shared between kernels.
        return str(Path(tempfile.mkdtemp(prefix="nar-gap-kernel-")) / "ipc")

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if self.transport == "ipc" and not restart:
            shutil.rmtree(Path(self.ip).parent, ignore_errors=True)

    async def _async_interrupt_kernel(self) -> None:
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()


def _autogroup_nice(path: Path) -> int:
    """The nice value in a ``/proc/<pid>/autogroup`` file (``/autogroup-7 nice 5``)."""
    try:
        return int(path.read_text().split()[-1])
    except (OSError, ValueError, IndexError):
        return 0


def share_priority(pid: int, proc: Path = Path("/proc")) -> int | None:
    """Give kernel ``pid`` this process's lower priority; the nice value set, or None.

    A kernel starts in a session of its own (jupyter_client's
    ``start_new_session``, so that an interrupt reaches it alone).  Under
    Linux's autogroup scheduling a new session is a new scheduling group at
    nice 0, and CPU time is shared between groups first: the kernel, which
    does a notebook's work, inherits ``nice ./run_all.sh``'s nice value but
    competes with the user's other work as if it were not niced at all (a
    studies run at nice 19 took half of the smoke chain's two cores beside
    it).  So the kernel's group gets the larger of this process's nice value
    and its group's.  Nothing is written where there is nothing to lower or
    no autogroup file (not Linux, or a kernel built without it).
    """
    own = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else 0
    nice = max(own, _autogroup_nice(proc / "self" / "autogroup"))
    target = proc / str(pid) / "autogroup"
    if nice <= 0 or not target.exists():
        return None
    try:
        target.write_text(f"{nice}\n")
    except OSError:  # not ours to change (another user's process): leave it
        return None
    return nice


class KernelDied(RuntimeError):
    """The kernel process ended while a cell ran, and how."""


def kernel_end(status: int) -> str:
    """How a process with exit status ``status`` ended, in words."""
    if status >= 0:
        return f"exited with code {status}"
    try:
        name = signal.Signals(-status).name
    except ValueError:
        name = "an unknown signal"
    why = {
        "SIGKILL": "; out of memory, or killed",
        "SIGSEGV": "; a crash in native code",
    }
    return f"killed by {name} (signal {-status}{why.get(name, '')})"


# Where a python finds nar_gap, without importing it (no JAX start-up).
_FIND_PACKAGE = "import importlib.util as u; print(u.find_spec('nar_gap').origin)"


def kernel_package(cwd: str | Path) -> Path:
    """The folder the notebooks' kernel imports nar_gap from, started in ``cwd``.

    Asked of the kernel's own python (its kernelspec's command and
    environment), as the notebooks will run.
    """
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        raise ValueError(
            f"no Jupyter kernel '{KERNEL_NAME}' (scripts/ensure_env.sh registers it)"
        ) from None
    found = subprocess.run(
        [spec.argv[0], "-c", _FIND_PACKAGE],
        cwd=cwd,
        env={**os.environ, **spec.env},
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0 or not found.stdout.strip():
        raise ValueError(
            f"the '{KERNEL_NAME}' kernel's python ({spec.argv[0]}) finds no nar_gap"
        )
    return Path(found.stdout.strip()).resolve().parent


def check_kernel_package(expected: str | Path, cwd: str | Path) -> None:
    """Refuse, in one line, a kernel that imports nar_gap from anywhere else.

    ``expected``: the nar_gap folder the runner itself imported (the
    checkout it runs in).
    """
    found = kernel_package(cwd)
    if found != Path(expected).resolve():
        raise ValueError(
            f"the notebooks' kernel '{KERNEL_NAME}' imports nar_gap from {found}, "
            f"not from {Path(expected).resolve()}: this .venv belongs to another "
            "checkout (copied or linked?); give this one its own "
            "(rm -rf .venv; scripts/ensure_env.sh)"
        )


def execute(
    notebook: str | Path,
    output: str | Path,
    parameters: Mapping[str, object],
    cwd: str | Path,
    progress: bool = False,
) -> None:
    """Run ``notebook`` with ``parameters`` injected; write the executed copy.

    Raises papermill's ``PapermillExecutionError`` (the failing cell's
    exception) when a cell fails; the executed copy keeps the error in place.
    A kernel that dies raises :class:`KernelDied`, saying how it ended.
    """
    import papermill
    from nbclient.exceptions import DeadKernelError

    EncryptedKernelManager.ended_with = None
    with writing_for(Path(notebook).stem):  # the kernel inherits it
        try:
            papermill.execute_notebook(
                str(notebook),
                str(output),
                parameters=dict(parameters),
                kernel_name=KERNEL_NAME,
                kernel_manager_class=EncryptedKernelManager,
                cwd=str(cwd),
                progress_bar=progress,
                log_output=False,
            )
        except DeadKernelError as error:
            ended = EncryptedKernelManager.ended_with
            if ended is None:
                raise
            raise KernelDied(f"the kernel died: {kernel_end(ended)}") from error


# ``-p FROM_RESULTS True``: a flag, not the string "True" (which is truthy
# either way).  Every other value stays a string: folders, profile names.
_BOOLEANS = {"True": True, "False": False}


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; exit code 1 when a cell fails (papermill's message)."""
    parser = argparse.ArgumentParser(
        prog="python -m nar_gap.paper.tools.notebook_runner"
    )
    parser.add_argument("notebook")
    parser.add_argument("output")
    parser.add_argument("--cwd", default=".")
    parser.add_argument(
        "-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE")
    )
    parser.add_argument("--progress-bar", action="store_true")
    args = parser.parse_args(argv)
    try:
        parameters = {name: _BOOLEANS.get(value, value) for name, value in args.p}
        execute(args.notebook, args.output, parameters, args.cwd, args.progress_bar)
    except Exception as error:  # a failing cell: papermill names it
        print(f"{type(error).__name__}: {error}".strip()[:4000], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
