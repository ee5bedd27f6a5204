"""The backend self-check: it passes here, and it fails where the backend is wrong.

The locked jaxlib (0.10.1) computes the reproducers right, so a failure of the
real check cannot be shown in CI; the tests below therefore also feed the
checker a deliberately wrong backend and wrong environments, and the closing
note of the environment issue shows the real check failing on jaxlib 0.10.2.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

import nar_gap
from nar_gap.system import backend_check as bc


def test_the_installed_backend_passes_every_check_crashes_included():
    verdict = bc.self_check(crash_checks=True)
    assert verdict.ok, verdict.message
    assert {c.name for c in verdict.checks} == {
        "vmapped log-softmax reduction",
        "vmapped mat-vec sum",
        "rank-7 multiply-reduce",
    }
    assert "passed" in verdict.message


def test_check_backend_raises_one_line_naming_version_and_issue(monkeypatch):
    def wrong_lanes():
        return bc.CheckResult("vmapped log-softmax reduction", bc.UPSTREAM, False, "x")

    monkeypatch.setattr(bc, "IN_PROCESS_CHECKS", (wrong_lanes,))
    bc.self_check.cache_clear()
    try:
        with pytest.raises(bc.UntrustedBackendError) as caught:
            nar_gap.check_backend()
    finally:
        bc.self_check.cache_clear()
    message = str(caught.value)
    assert "\n" not in message and "FAILED" in message
    assert f"jaxlib {bc._verdict(()).jaxlib}" in message and bc.UPSTREAM in message


def test_the_lane_check_catches_a_vmap_that_returns_an_earlier_lane(monkeypatch):
    """A broken backend, simulated: vmap hands lanes 10.. the values of lanes 0..,
    exactly what jaxlib 0.10.2 does; the check must say which lanes.
    """
    import jax

    real_vmap = jax.vmap

    def broken_vmap(fn, *args, **kwargs):
        mapped = real_vmap(fn, *args, **kwargs)

        def wrong(x):
            out = mapped(x)
            return out.at[10:].set(out[: out.shape[0] - 10])

        return wrong

    monkeypatch.setattr(jax, "vmap", broken_vmap)
    result = bc.vmapped_log_softmax_reduction()
    assert not result.ok
    assert result.detail.startswith("lanes [10, 11, 12, 13, 14, 15] of 16 wrong")


def test_a_crashing_child_is_reported_not_fatal(monkeypatch):
    monkeypatch.setattr(
        bc, "_RANK7_CRASH", "import os, signal; os.kill(os.getpid(), 11)"
    )
    result = bc.rank7_reduce_crash()
    assert not result.ok and "signal 11" in result.detail


@pytest.mark.parametrize(
    ("environ", "started", "in_force", "added"),
    [
        ({}, False, True, True),
        ({"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, False, True, True),
        ({"XLA_FLAGS": bc.WORKAROUND_FLAG}, True, True, False),
        ({bc.SWITCH: "off"}, False, False, False),
        ({"XLA_FLAGS": f"{bc.YNN_FLAG}=reduce"}, False, False, False),
        ({}, True, False, False),
    ],
    ids=["fresh", "other-flags", "user-set", "switched-off", "user-value", "too-late"],
)
def test_the_workaround_on_an_affected_jaxlib(environ, started, in_force, added):
    env = dict(environ)
    before = env.get("XLA_FLAGS", "")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        state = bc.apply_workarounds(env, jaxlib="0.10.2", backend_started=started)
    assert state.affected and state.in_force is in_force
    assert state.applied_by_nar_gap is added
    assert bc.workaround_in_env(env) is (in_force or (added and not started))
    if added:  # the user's own flags are kept
        assert env["XLA_FLAGS"].startswith(before)
    warned = [w for w in caught if issubclass(w.category, bc.UntrustedBackendWarning)]
    assert bool(warned) is (not in_force)
    if warned:
        text = str(warned[0].message)
        assert "0.10.2" in text and bc.UPSTREAM in text and "\n" not in text


def test_an_unaffected_jaxlib_gets_no_flag_it_might_not_know():
    env: dict[str, str] = {}
    state = bc.apply_workarounds(env, jaxlib="0.10.1", backend_started=False)
    assert not state.affected and "XLA_FLAGS" not in env


def test_importing_nar_gap_first_puts_the_workaround_in_force_in_a_new_process():
    """On the affected jaxlib the flag must reach XLA: import nar_gap, then JAX."""
    code = (
        "import os, nar_gap, jax; jax.numpy.ones(1).block_until_ready();"
        "from nar_gap.system import backend_check as bc;"
        "print(bc.WORKAROUND.affected, bc.WORKAROUND.in_force,"
        " bc.workaround_in_env(os.environ))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", bc.SWITCH)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    affected = bc.installed_jaxlib() in bc.AFFECTED_JAXLIB
    assert out == [str(affected), str(affected), str(affected)]


def test_the_verdict_is_recorded_as_plain_json():
    payload = bc.self_check().to_dict()
    assert payload["ok"] is True and payload["jaxlib"]
    assert all(isinstance(c["detail"], str) for c in payload["checks"])
