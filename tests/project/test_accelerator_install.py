"""JAX's CUDA build: chosen by scripts/ensure_env.sh, locked, checked by nar-gap info.

ensure_env.sh installs JAX's CUDA 12 plugin when ``nvidia-smi -L`` lists a GPU
or ``NAR_GAP_ACCELERATOR=cuda``.  No test here installs anything: the choice is
read from ``--dry-run``, which prints the install commands a full install runs
(pip's and uv's), and the reinstall on a change of build is watched through a
stand-in venv python and uv that record their calls.  Stand-in ``nvidia-smi``
programs play the GPU, and the PATH the script sees holds only the tools it
uses, so a real nvidia-smi on the machine running the tests changes nothing.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from nar_gap.cli import main
from nar_gap.system import accelerator

REPO = Path(__file__).resolve().parents[2]
ENSURE_ENV = REPO / "scripts" / "ensure_env.sh"
LOCK = REPO / "requirements" / "lock.txt"
# What ensure_env.sh runs before it needs the venv's python.
SCRIPT_TOOLS = ("dirname", "grep", "sed", "cut", "cat", "rm", "mkdir", "timeout")
ONE_GPU = (
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0f1e2d3c-0000-0000-0000-000000000000)"
)
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
)

# The stand-ins for nvidia-smi: (what it prints, its exit status); None: absent.
STAND_INS = {
    "one GPU": (ONE_GPU, 0),
    "no driver": (NO_DRIVER, 9),
    "no device": ("No devices found.", 6),
    # One GPU listed, a second one broken: nvidia-smi fails, but lists the first.
    "one GPU of two": (
        f"{ONE_GPU}\nUnable to determine the device handle for GPU1",
        15,
    ),
    "absent": None,
}


def _lock() -> dict[str, str]:
    """``{canonical name: version}`` of the lock's pins."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            pins[canonicalize_name(requirement.name)] = spec.version
    return pins


def _path_with(tmp_path: Path, nvidia_smi: tuple[str, int] | None) -> str:
    """A PATH holding the script's tools and, unless None, a stand-in nvidia-smi."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in SCRIPT_TOOLS:
        (folder / tool).symlink_to(shutil.which(tool))
    if nvidia_smi is not None:
        output, status = nvidia_smi
        program = folder / "nvidia-smi"
        program.write_text(f"#!/bin/sh\necho '{output}'\nexit {status}\n")
        program.chmod(0o755)
    return str(folder)


def _ensure_env(
    *args: str, path: str | None = None, **environ: str
) -> subprocess.CompletedProcess:
    """Run ensure_env.sh with ``environ`` on top of a clean environment."""
    env = {"PATH": path or os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    env.update(environ)
    return subprocess.run(
        [shutil.which("bash"), str(ENSURE_ENV), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


NO_VENV = "no-venv"  # _dry_run's NAR_GAP_VENV, under tmp_path


def _dry_run(tmp_path: Path, stand_in: str, **environ: str) -> list[str]:
    """The lines ``ensure_env.sh --dry-run`` prints, with no venv to look into."""
    path = _path_with(tmp_path, STAND_INS[stand_in])
    environ.setdefault("NAR_GAP_VENV", str(tmp_path / NO_VENV))
    done = _ensure_env("--dry-run", path=path, **environ)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _uv(venv: Path) -> str:
    """How ensure_env.sh starts a uv install into ``venv``."""
    return f"uv pip install --python {venv}/bin/python --compile-bytecode"


def _plugin_install(venv: Path, installer: str = "uv") -> str:
    jax = _lock()["jax"]
    start = _uv(venv) if installer == "uv" else "pip install"
    return (
        f"{start} -q -c requirements/lock.txt "
        f"jax-cuda12-plugin[with-cuda]=={jax} jax-cuda12-pjrt=={jax}"
    )


def _cpu_install(venv: Path, installer: str = "uv") -> list[str]:
    """The CPU build's install: pip (and uv, pinned) first, then the package."""
    if installer == "pip":
        return [
            f"pip install -q pip=={_lock()['pip']}",
            "pip install -q -c requirements/lock.txt -e .[test]",
        ]
    return [
        f"pip install -q pip=={_lock()['pip']} uv=={_lock()['uv']}",
        f"{_uv(venv)} -q -c requirements/lock.txt -e .[test]",
    ]


def test_a_gpu_listed_by_nvidia_smi_installs_the_cuda_plugin(tmp_path):
    lines = _dry_run(tmp_path, "one GPU")
    assert lines == [
        "nar_gap: JAX build: cuda (nvidia-smi -L lists 1 GPU(s))",
        *_cpu_install(tmp_path / NO_VENV),
        _plugin_install(tmp_path / NO_VENV),
    ]


def test_without_nvidia_smi_the_install_is_the_cpu_one(tmp_path):
    lines = _dry_run(tmp_path, "absent")
    assert lines == [
        "nar_gap: JAX build: cpu (no nvidia-smi on the PATH)",
        *_cpu_install(tmp_path / NO_VENV),
    ]


@pytest.mark.parametrize("stand_in", ["no driver", "no device"])
def test_an_nvidia_smi_that_lists_no_gpu_installs_the_cpu_build(tmp_path, stand_in):
    lines = _dry_run(tmp_path, stand_in)
    assert lines == [
        "nar_gap: JAX build: cpu (nvidia-smi -L lists 0 GPU(s))",
        *_cpu_install(tmp_path / NO_VENV),
    ]


def test_cpu_in_the_variable_overrides_a_listed_gpu(tmp_path):
    lines = _dry_run(tmp_path, "one GPU", NAR_GAP_ACCELERATOR="cpu")
    assert lines == [
        "nar_gap: JAX build: cpu (NAR_GAP_ACCELERATOR=cpu)",
        *_cpu_install(tmp_path / NO_VENV),
    ]


def test_cuda_in_the_variable_installs_the_plugin_without_nvidia_smi(tmp_path):
    lines = _dry_run(tmp_path, "absent", NAR_GAP_ACCELERATOR="cuda")
    assert lines[0] == "nar_gap: JAX build: cuda (NAR_GAP_ACCELERATOR=cuda)"
    venv = tmp_path / NO_VENV
    assert lines[1:] == [*_cpu_install(venv), _plugin_install(venv)]


def test_pip_as_the_installer_installs_the_same_lock_without_uv(tmp_path):
    lines = _dry_run(tmp_path, "one GPU", NAR_GAP_INSTALLER="pip")
    assert lines[1:] == [
        *_cpu_install(tmp_path, "pip"),
        _plugin_install(tmp_path, "pip"),
    ]
    assert not any("uv" in line.split() or "uv==" in line for line in lines)


def test_an_unknown_installer_is_a_one_line_error(tmp_path):
    path = _path_with(tmp_path, STAND_INS["absent"])
    done = _ensure_env("--dry-run", path=path, NAR_GAP_INSTALLER="conda")
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "NAR_GAP_INSTALLER must be uv or pip" in line and "'conda'" in line


def test_an_unknown_variable_value_is_a_one_line_error(tmp_path):
    path = _path_with(tmp_path, STAND_INS["one GPU"])
    done = _ensure_env("--dry-run", path=path, NAR_GAP_ACCELERATOR="gpu")
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "NAR_GAP_ACCELERATOR must be cpu or cuda" in line and "'gpu'" in line


@pytest.mark.parametrize("stand_in", sorted(STAND_INS))
def test_the_script_and_nar_gap_info_expect_the_same_build(tmp_path, stand_in):
    script_says = _dry_run(tmp_path, stand_in)[0].split()[3]
    which = functools.partial(shutil.which, path=str(tmp_path / "bin"))
    # The script's rule only: info's extra trigger, an installed plugin, left out.
    expected = accelerator.expected_accelerator({}, which, version=lambda name: None)
    assert script_says == ("cpu" if expected is None else "cuda")


FAKE_PYTHON = """#!/bin/sh
# A venv's python for ensure_env.sh: records pip and ipykernel calls, keeps a
# list of "installed" CUDA packages, and runs anything else with the real one.
venv="$(cd "$(dirname "$0")/.." && pwd)"
if [ "$1 $2" = "-m pip" ]; then
    shift 2
    echo "pip $*" >>"$venv/calls"
    case "$*" in
        list*) cat "$venv/installed" ;;
        uninstall*) : >"$venv/installed" ;;
        *jax-cuda12-plugin*)
            echo jax-cuda12-plugin==1 >"$venv/installed"
            echo nvidia-cublas-cu12==1 >>"$venv/installed" ;;
    esac
    exit 0
fi
if [ "$1 $2" = "-m ipykernel" ]; then
    mkdir -p "$venv/share/jupyter/kernels/nar-gap"
    touch "$venv/share/jupyter/kernels/nar-gap/kernel.json"
    exit 0
fi
exec REAL_PYTHON "$@"
"""

FAKE_UV = """#!/bin/sh
# The venv's uv for ensure_env.sh: records its calls as its python records pip's.
venv="$(cd "$(dirname "$0")/.." && pwd)"
echo "uv $*" >>"$venv/calls"
case "$*" in
    *jax-cuda12-plugin*)
        echo jax-cuda12-plugin==1 >"$venv/installed"
        echo nvidia-cublas-cu12==1 >>"$venv/installed" ;;
esac
exit 0
"""


def _fake_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "installed").write_text("")
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.replace("REAL_PYTHON", sys.executable))
    python.chmod(0o755)
    uv = venv / "bin" / "uv"
    uv.write_text(FAKE_UV)
    uv.chmod(0o755)
    return venv


def _pip_calls(venv: Path, accelerator_choice: str) -> tuple[str, list[str]]:
    """Run ensure_env.sh for one build; its first line and the pip calls it made."""
    (venv / "calls").write_text("")
    done = _ensure_env(NAR_GAP_VENV=str(venv), NAR_GAP_ACCELERATOR=accelerator_choice)
    assert done.returncode == 0, done.stderr
    first = (done.stdout.splitlines() or [""])[0]
    return first, (venv / "calls").read_text().splitlines()


def test_a_failed_uv_install_says_how_to_use_pip_and_stamps_nothing(tmp_path):
    venv = _fake_venv(tmp_path)
    uv = venv / "bin" / "uv"
    uv.write_text("#!/bin/sh\necho 'error: no index reachable' >&2\nexit 1\n")
    done = _ensure_env(NAR_GAP_VENV=str(venv), NAR_GAP_ACCELERATOR="cpu")
    assert done.returncode != 0
    assert "NAR_GAP_INSTALLER=pip" in done.stderr.splitlines()[-1], done.stderr
    assert not (venv / ".nar_gap_installed").exists()  # retried on the next run


def test_a_change_of_build_reinstalls_and_the_cpu_build_removes_the_plugin(tmp_path):
    venv = _fake_venv(tmp_path)
    first, calls = _pip_calls(venv, "cpu")
    assert first.startswith("nar_gap: installing dependencies")
    assert calls[:2] == _cpu_install(venv)
    assert calls[2:] == ["pip list --format=freeze"]
    assert _pip_calls(venv, "cpu") == ("", [])  # current: a no-op

    first, calls = _pip_calls(venv, "cuda")
    assert (
        first == "nar_gap: switching JAX to the cuda build (NAR_GAP_ACCELERATOR=cuda)"
    )
    assert calls == [*_cpu_install(venv), _plugin_install(venv)]
    assert (venv / ".nar_gap_installed").read_text().split()[1:] == ["cuda"]
    assert _pip_calls(venv, "cuda") == ("", [])

    first, calls = _pip_calls(venv, "cpu")
    assert first == "nar_gap: switching JAX to the cpu build (NAR_GAP_ACCELERATOR=cpu)"
    assert calls[2:] == [
        "pip list --format=freeze",
        "pip uninstall -q -y jax-cuda12-plugin nvidia-cublas-cu12",
    ]
    assert len((venv / ".nar_gap_installed").read_text().split()) == 1


def test_the_lock_pins_the_cuda_plugin_at_the_locked_jax_version():
    pins = _lock()
    jax = pins["jax"]
    assert pins["jaxlib"] == jax
    assert pins.get("jax-cuda12-plugin") == jax, "lock.txt: jax-cuda12-plugin"
    assert pins.get("jax-cuda12-pjrt") == jax, "lock.txt: jax-cuda12-pjrt"
    nvidia = [name for name in pins if name.startswith("nvidia-")]
    assert "nvidia-cudnn-cu12" in nvidia and "nvidia-cublas-cu12" in nvidia
    assert all(name.endswith("-cu12") for name in nvidia), nvidia


def test_the_lock_is_in_the_order_update_lock_writes():
    body = [line for line in LOCK.read_text().splitlines() if not line.startswith("#")]
    done = subprocess.run(
        ["sort", "-f"],
        input="\n".join(body) + "\n",
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
        check=True,
    )
    assert done.stdout.splitlines() == body


def test_info_rejects_an_unknown_variable_value_in_one_line(monkeypatch, capsys):
    monkeypatch.setenv("NAR_GAP_ACCELERATOR", "gpu")
    assert main(["info"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("nar-gap: error: NAR_GAP_ACCELERATOR") and "'gpu'" in line


def test_info_with_a_gpu_listed_and_jax_on_the_cpu_warns_in_one_line(tmp_path):
    folder = tmp_path / "gpu"
    folder.mkdir()
    program = folder / "nvidia-smi"
    program.write_text(f"#!/bin/sh\necho '{ONE_GPU}'\n")
    program.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "NAR_GAP_ACCELERATOR"}
    # JAX_PLATFORMS=cpu: JAX runs on the CPU even on a machine with the plugin.
    env.update(PATH=f"{folder}{os.pathsep}{env['PATH']}", JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, "-m", "nar_gap", "info"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "nar_gap: JAX devices (default backend: cpu)" in done.stdout
    output = (done.stdout + done.stderr).splitlines()
    warnings = [line for line in output if re.search("warning", line, re.IGNORECASE)]
    assert warnings == [accelerator.accelerator_warning("nvidia-smi lists 1", "cpu")]
