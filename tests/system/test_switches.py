"""Both of nar_gap's off switches read a value the same way."""

from __future__ import annotations

import pytest

from nar_gap.system import backend_check, numerics
from nar_gap.system.switches import OFF_WORDS, switched_off


def _gpu(name):
    return "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None


def _workaround_off(value: str) -> bool:
    state = backend_check.apply_workarounds(
        {backend_check.SWITCH: value}, jaxlib="0.10.2", backend_started=False
    )
    return not state.in_force and "switched off" in state.reason


def _determinism_off(value: str) -> bool:
    environ = {numerics.DETERMINISM_SWITCH: value}
    return not numerics.request_gpu_determinism(environ, _gpu)


@pytest.mark.filterwarnings(
    "ignore::nar_gap.system.backend_check.UntrustedBackendWarning"
)
@pytest.mark.parametrize("reads_off", [_workaround_off, _determinism_off])
@pytest.mark.parametrize(
    ("value", "off"),
    [
        *[(word, True) for word in OFF_WORDS],
        ("OFF", True),
        (" No ", True),
        ("", False),
        ("on", False),
        ("1", False),
        ("offline", False),
    ],
)
def test_each_switch_reads_the_same_words_as_off(reads_off, value, off):
    assert switched_off({"X": value}, "X") is off
    assert reads_off(value) is off


def test_an_unset_switch_is_on():
    assert not switched_off({}, "NAR_GAP_XLA_WORKAROUND")
