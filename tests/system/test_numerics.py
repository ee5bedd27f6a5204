"""GPU determinism is asked for wherever a GPU may run, and recorded."""

from __future__ import annotations

from nar_gap.system import numerics
from nar_gap.system.numerics import DETERMINISM_FLAG, request_gpu_determinism


def gpu(name):
    return "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None


def no_gpu(name):
    return None


def test_a_machine_with_nvidia_smi_gets_deterministic_gpu_ops():
    environ = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    assert request_gpu_determinism(environ, gpu)
    assert environ["XLA_FLAGS"].split() == [
        "--xla_force_host_platform_device_count=2",
        DETERMINISM_FLAG,
    ]


def test_a_cpu_machine_keeps_its_flags():
    environ = {}
    assert not request_gpu_determinism(environ, no_gpu)
    assert environ == {}
    environ = {"NAR_GAP_ACCELERATOR": "cpu"}
    assert not request_gpu_determinism(environ, gpu)
    assert "XLA_FLAGS" not in environ


def test_asking_for_cuda_is_enough_and_off_switches_it_off():
    environ = {"NAR_GAP_ACCELERATOR": "cuda"}
    assert request_gpu_determinism(environ, no_gpu)
    environ = {"NAR_GAP_GPU_DETERMINISM": "off"}
    assert not request_gpu_determinism(environ, gpu)
    assert "XLA_FLAGS" not in environ


def test_the_users_own_value_wins():
    environ = {"XLA_FLAGS": "--xla_gpu_deterministic_ops=false"}
    assert not request_gpu_determinism(environ, gpu)
    assert environ["XLA_FLAGS"] == "--xla_gpu_deterministic_ops=false"


def test_sidecars_state_the_precision_of_training_and_of_compiled_weights():
    record = numerics.numerics_record({"XLA_FLAGS": DETERMINISM_FLAG})
    assert record["compiled_matmul_precision"] == "highest"
    assert "TF32" in record["training_matmul_precision"]
    assert record["gpu_deterministic_ops"] is True
    from nar_gap.system.provenance import provenance

    assert provenance()["numerics"]["compiled_matmul_precision"] == "highest"
