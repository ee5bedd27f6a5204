"""Which JAX build a machine should run, and the one warning when it runs on the CPU.

The stand-in ``nvidia-smi`` programs below print what the real one prints
(``nvidia-smi -L``: one ``GPU i:`` line per GPU, MIG slices indented below) or
fail as it fails where no GPU answers, so the rule is tested through the same
subprocess call ``nar-gap info`` makes.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

from nar_gap.system import accelerator

TWO_GPUS = (
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0f1e2d3c-0000-0000-0000-000000000000)\n"
    "  MIG 3g.40gb     Device  0: (UUID: MIG-11111111-0000-0000-0000-000000000000)\n"
    "  MIG 3g.40gb     Device  1: (UUID: MIG-22222222-0000-0000-0000-000000000000)\n"
    "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-4b5a6978-0000-0000-0000-000000000000)\n"
)
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
    "driver. Make sure that the latest NVIDIA driver is installed and running."
)


def write_nvidia_smi(folder: Path, output: str, status: int = 0) -> Path:
    """An ``nvidia-smi`` in ``folder`` that prints ``output`` and exits ``status``."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "nvidia-smi"
    program.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}\nEOF\nexit {status}\n")
    program.chmod(0o755)
    return program


def which_in(folder: Path):
    """``shutil.which`` looking in ``folder`` only (never a real nvidia-smi)."""
    return functools.partial(shutil.which, path=str(folder))


def no_plugin(distribution: str) -> None:
    """No CUDA plugin installed, whatever the venv running the tests holds."""
    return None


def expect(environ: dict[str, str], folder: Path, version=no_plugin) -> str | None:
    """:func:`accelerator.expected_accelerator`, nvidia-smi looked up in ``folder``."""
    return accelerator.expected_accelerator(environ, which_in(folder), version=version)


def test_count_gpus_counts_gpu_lines_and_not_their_mig_slices():
    assert accelerator.count_gpus(TWO_GPUS) == 2
    assert accelerator.count_gpus(NO_DRIVER) == 0
    assert accelerator.count_gpus("") == 0


def test_a_gpu_listed_by_nvidia_smi_on_the_path_is_expected(tmp_path):
    write_nvidia_smi(tmp_path, TWO_GPUS)
    expected = expect({}, tmp_path)
    assert expected == "nvidia-smi lists 2"


def test_no_nvidia_smi_on_the_path_expects_the_cpu(tmp_path):
    assert expect({}, tmp_path) is None


def test_a_failing_nvidia_smi_expects_the_cpu(tmp_path):
    write_nvidia_smi(tmp_path, NO_DRIVER, status=9)
    assert expect({}, tmp_path) is None


def test_cpu_in_the_variable_overrides_a_listed_gpu(tmp_path):
    write_nvidia_smi(tmp_path, TWO_GPUS)
    environ = {"NAR_GAP_ACCELERATOR": "cpu"}
    assert expect(environ, tmp_path) is None


def test_cuda_in_the_variable_expects_a_gpu_without_nvidia_smi(tmp_path):
    environ = {"NAR_GAP_ACCELERATOR": "cuda"}
    expected = expect(environ, tmp_path)
    assert expected == "NAR_GAP_ACCELERATOR=cuda"


def test_an_empty_variable_detects_as_if_unset(tmp_path):
    write_nvidia_smi(tmp_path, TWO_GPUS)
    environ = {"NAR_GAP_ACCELERATOR": ""}
    expected = expect(environ, tmp_path)
    assert expected == "nvidia-smi lists 2"


def test_an_installed_cuda_plugin_expects_a_gpu_without_nvidia_smi(tmp_path):
    def plugin(distribution: str) -> str | None:
        return "0.10.1" if distribution == "jax-cuda12-plugin" else None

    expected = expect({}, tmp_path, version=plugin)
    assert expected == "jax-cuda12-plugin 0.10.1 is installed"
    assert expect({"NAR_GAP_ACCELERATOR": "cpu"}, tmp_path, version=plugin) is None


def test_an_unknown_variable_value_is_an_error_naming_it(tmp_path):
    environ = {"NAR_GAP_ACCELERATOR": "rocm"}
    with pytest.raises(ValueError, match="NAR_GAP_ACCELERATOR.*'rocm'") as caught:
        expect(environ, tmp_path)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("expected", "backend", "warns"),
    [
        ("nvidia-smi lists 1", "cpu", True),
        ("NAR_GAP_ACCELERATOR=cuda", "cpu", True),
        ("nvidia-smi lists 1", "gpu", False),
        (None, "cpu", False),
        (None, "gpu", False),
    ],
)
def test_the_warning_comes_only_for_an_expected_gpu_and_a_cpu_backend(
    expected, backend, warns
):
    warning = accelerator.accelerator_warning(expected, backend)
    assert (warning is not None) == warns
    if warns:
        assert warning.startswith("nar_gap: warning: an NVIDIA GPU was expected")
        assert f"({expected})" in warning and "runs on cpu" in warning
        assert "\n" not in warning


def test_devices_are_described_by_platform_count_and_kind():
    devices = ["gpu:NVIDIA H100 80GB HBM3"] * 8 + ["cpu:cpu"]
    assert accelerator.describe_devices(devices) == [
        "gpu: 8 x NVIDIA H100 80GB HBM3",
        "cpu: 1 x cpu",
    ]
