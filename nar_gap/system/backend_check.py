"""Known XLA:CPU miscompiles: a workaround in force before JAX starts, a self-check.

jax/jaxlib 0.10.2 on the CPU hands some reductions to a YNNPACK fusion
(``__ynn_fusion`` in the optimised HLO) that computes wrong numbers without a
word.  The shape that met nar_gap is a vmapped weighted reduction of a
log-softmax whose weights are shared across lanes -- our pointer hint loss
with several parameter sets on one batch (the loss-landscape grid): lane ``l``
is wrong exactly when ``(l + 1) * S * B * N > 32 768`` float32 elements, and
then holds the right value of an earlier lane.  Upstream: jax-ml/jax#39103
(a vmapped mat-vec followed by a sum, wrong from element 32 769 on) and
jax-ml/jax#40412 (a rank-7 multiply-reduce that segfaults); 0.10.1 computes
all three right.

Two defences, both here:

* :func:`apply_workarounds` runs when ``nar_gap`` is imported, before anything
  imports JAX: on a jaxlib known to be affected it appends
  ``--xla_cpu_experimental_ynn_fusion_type=`` (no fusion types) to
  ``XLA_FLAGS``, which removes the fusion.  XLA aborts the process on a flag it
  does not know, so the flag is only added for versions known to accept it.
  ``NAR_GAP_XLA_WORKAROUND=off`` leaves ``XLA_FLAGS`` alone (to see the bug).
* :func:`self_check` runs the reproducers against float64 NumPy references and
  returns a :class:`BackendVerdict`; :func:`check_backend` raises
  :class:`UntrustedBackendError` when one fails.  The test suite, ``nar-gap
  info`` and the first cell of every notebook call it, and every results
  sidecar records its verdict, so a wrong number cannot pass unnoticed.

This module imports JAX only inside the self-check, so importing it (and
``nar_gap``) never starts a backend.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import os
import shlex
import subprocess
import sys
import warnings
from collections.abc import Callable, Mapping, MutableMapping

import numpy as np

from nar_gap.system.switches import switched_off

YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type"
WORKAROUND_FLAG = f"{YNN_FLAG}="  # an empty list of fusion types: no YNN fusion
SWITCH = "NAR_GAP_XLA_WORKAROUND"  # "off" leaves XLA_FLAGS alone

# jaxlib versions that miscompile, and whether they accept the workaround flag
# (an unknown flag in XLA_FLAGS aborts the process, so this list is explicit).
AFFECTED_JAXLIB = ("0.10.2",)
UPSTREAM = "jax-ml/jax#39103"


class UntrustedBackendError(RuntimeError):
    """The installed JAX computes wrong numbers on this machine."""


class UntrustedBackendWarning(UserWarning):
    """Importing nar_gap on a JAX known to miscompile, with no workaround in force."""


def installed_jaxlib() -> str | None:
    """Jaxlib's version from its metadata (no import, so no backend starts)."""
    try:
        return importlib.metadata.version("jaxlib")
    except importlib.metadata.PackageNotFoundError:
        return None


def _flag_value(xla_flags: str, name: str) -> str | None:
    """The value the *last* ``name=...`` in ``xla_flags`` sets (XLA's rule), or None."""
    value = None
    for token in shlex.split(xla_flags):
        key, sep, rest = token.partition("=")
        if key == name:
            value = rest if sep else "true"
    return value


def workaround_in_env(environ: Mapping[str, str]) -> bool:
    """Whether ``XLA_FLAGS`` in ``environ`` switches the YNN fusion off."""
    return _flag_value(environ.get("XLA_FLAGS", ""), YNN_FLAG) == ""


def _backend_started() -> bool:
    """Whether JAX has already created a backend (XLA_FLAGS are read then, once)."""
    xla_bridge = sys.modules.get("jax._src.xla_bridge")
    return bool(getattr(xla_bridge, "_backends", None))


@dataclasses.dataclass(frozen=True)
class Workaround:
    """What :func:`apply_workarounds` found and did at import time."""

    jaxlib: str | None
    affected: bool
    in_force: bool
    applied_by_nar_gap: bool
    reason: str

    def to_dict(self) -> dict[str, object]:
        """Plain JSON for results sidecars."""
        return dataclasses.asdict(self)


def apply_workarounds(
    environ: MutableMapping[str, str] | None = None,
    jaxlib: str | None = None,
    backend_started: bool | None = None,
) -> Workaround:
    """Put the YNN workaround into ``XLA_FLAGS`` if this jaxlib needs it.

    Returns what it found; warns (:class:`UntrustedBackendWarning`) when the
    jaxlib is affected and the workaround cannot be in force: switched off,
    overridden by the user's own value of the flag, or too late because JAX
    already started its backend before ``nar_gap`` was imported.
    """
    environ = os.environ if environ is None else environ
    jaxlib = installed_jaxlib() if jaxlib is None else jaxlib
    started = _backend_started() if backend_started is None else backend_started
    if jaxlib not in AFFECTED_JAXLIB:
        return Workaround(jaxlib, False, False, False, "not needed for this jaxlib")
    flags = environ.get("XLA_FLAGS", "")
    if workaround_in_env(environ):
        reason = "set in XLA_FLAGS before nar_gap was imported"
        state = Workaround(jaxlib, True, True, False, reason)
    elif switched_off(environ, SWITCH):
        state = Workaround(jaxlib, True, False, False, f"switched off by {SWITCH}")
    elif _flag_value(flags, YNN_FLAG) is not None:
        reason = f"XLA_FLAGS sets {YNN_FLAG} to a value of its own"
        state = Workaround(jaxlib, True, False, False, reason)
    elif started:
        reason = (
            "JAX started its backend before nar_gap was imported, too early for "
            "XLA_FLAGS (import nar_gap first)"
        )
        state = Workaround(jaxlib, True, False, False, reason)
    else:
        environ["XLA_FLAGS"] = f"{flags} {WORKAROUND_FLAG}".strip()
        state = Workaround(jaxlib, True, True, True, "added to XLA_FLAGS by nar_gap")
    if not state.in_force:
        warnings.warn(
            f"jaxlib {jaxlib} miscompiles vmapped reductions on the CPU "
            f"({UPSTREAM}) and the workaround is not in force: {state.reason}. "
            "Numbers computed now may be wrong; nar_gap.check_backend() tells.",
            UntrustedBackendWarning,
            stacklevel=2,
        )
    return state


# --------------------------------------------------------------------------- #
# The self-check: each known miscompile as a reproducer with a float64 answer.
# --------------------------------------------------------------------------- #


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One reproducer's outcome."""

    name: str
    upstream: str
    ok: bool
    detail: str


@dataclasses.dataclass(frozen=True)
class BackendVerdict:
    """The self-check's answer: may this process's JAX be trusted?"""

    ok: bool
    jax: str
    jaxlib: str
    platform: str
    workaround: Workaround
    checks: tuple[CheckResult, ...]

    @property
    def message(self) -> str:
        """One line: the verdict, the version, and what failed."""
        where = f"jax {self.jax} / jaxlib {self.jaxlib} on {self.platform}"
        if self.ok:
            active = ", YNN workaround in force" if self.workaround.in_force else ""
            return f"backend self-check passed ({where}{active})"
        failed = "; ".join(
            f"{c.name} ({c.upstream}): {c.detail}" for c in self.checks if not c.ok
        )
        return (
            f"backend self-check FAILED: {where} computes wrong numbers -- "
            f"{failed}. Workaround: {self.workaround.reason}. Install the locked "
            "versions (scripts/ensure_env.sh) or import nar_gap before JAX runs."
        )

    def to_dict(self) -> dict[str, object]:
        """Plain JSON for results sidecars."""
        return {
            "ok": self.ok,
            "jax": self.jax,
            "jaxlib": self.jaxlib,
            "platform": self.platform,
            "workaround": self.workaround.to_dict(),
            "checks": [dataclasses.asdict(c) for c in self.checks],
        }


def _log_softmax64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def vmapped_log_softmax_reduction(
    lanes: int = 16, steps: int = 6, graphs: int = 32, nodes: int = 16
) -> CheckResult:
    """nar_gap's own reproducer: the pointer hint loss over shared weights.

    ``sum_s,b,i c2 * sum_j c1 * log_softmax(x_l)`` for each lane ``l`` of a
    vmap.  At the default shape 0.10.2 gets lanes 10..15 wrong (each holds an
    earlier lane's value).
    """
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    x = rng.standard_normal((lanes, steps, graphs, nodes, nodes)).astype(np.float32)
    c1 = rng.random((steps, graphs, nodes, nodes)).astype(np.float32)
    c2 = rng.random((steps, graphs, nodes)).astype(np.float32)

    def weighted(logits):
        return jnp.sum(jnp.sum(c1 * jax.nn.log_softmax(logits), axis=-1) * c2)

    got = np.asarray(jax.jit(jax.vmap(weighted))(x), np.float64)
    want = np.array([np.sum(np.sum(c1 * _log_softmax64(xl), axis=-1) * c2) for xl in x])
    error = np.abs(got - want) / np.abs(want)
    wrong = np.flatnonzero(error > 1e-4)
    detail = (
        f"all {lanes} lanes within {error.max():.1e}"
        if wrong.size == 0
        else f"lanes {wrong.tolist()} of {lanes} wrong (relative error up to "
        f"{error.max():.1e})"
    )
    return CheckResult(
        "vmapped log-softmax reduction", UPSTREAM, wrong.size == 0, detail
    )


def vmapped_matvec_sum(rows: int = 32_769) -> CheckResult:
    """jax-ml/jax#39103's reproducer: ``sum((M @ row)**2)`` vmapped over rows.

    With ``M`` the identity and row ``i`` equal to ``(i, 0, 0)`` the last value
    is ``(rows - 1)**2`` exactly (2**30, representable in float32).
    """
    import jax
    import jax.numpy as jnp

    index = jnp.arange(rows, dtype=jnp.float32)
    x = jnp.stack((index, jnp.zeros_like(index), jnp.zeros_like(index)), axis=1)
    matrix = jnp.eye(3, dtype=jnp.float32)
    squares = jax.jit(jax.vmap(lambda row: jnp.sum((matrix @ row) ** 2)))(x)
    got = float(squares[-1])
    want = float(rows - 1) ** 2
    ok = got == want
    return CheckResult(
        "vmapped mat-vec sum",
        "jax-ml/jax#39103",
        ok,
        f"last of {rows} rows {got:.0f}" + ("" if ok else f", expected {want:.0f}"),
    )


_RANK7_CRASH = """
import jax, jax.numpy as jnp, numpy as np
shape = (3, 1, 2, 2, 8, 8, 8)
u = jax.random.normal(jax.random.PRNGKey(0), shape, dtype=jnp.float32)
v = jax.random.normal(jax.random.PRNGKey(1), shape, dtype=jnp.float32)
got = np.asarray(jax.jit(lambda a, b: jnp.sum(a * b, axis=3))(u, v))
want = np.sum(np.asarray(u, np.float64) * np.asarray(v, np.float64), axis=3)
print(float(np.abs(got - want).max()))
"""


def rank7_reduce_crash(timeout: float = 120.0) -> CheckResult:
    """jax-ml/jax#40412: a rank-7 multiply-reduce that segfaults, in a subprocess.

    The child inherits this process's environment -- the ``XLA_FLAGS`` that
    :func:`apply_workarounds` set included -- so it tests what this process
    runs with.
    """
    name, upstream = "rank-7 multiply-reduce", "jax-ml/jax#40412"
    try:
        child = subprocess.run(
            [sys.executable, "-c", _RANK7_CRASH],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=dict(os.environ),
        )
    except subprocess.TimeoutExpired:
        return CheckResult(name, upstream, False, f"hung for {timeout:.0f} s")
    if child.returncode != 0:
        how = (
            f"killed by signal {-child.returncode}"
            if child.returncode < 0
            else f"exit code {child.returncode}"
        )
        return CheckResult(name, upstream, False, f"the process died ({how})")
    error = float(child.stdout.strip().splitlines()[-1])
    return CheckResult(name, upstream, error < 1e-4, f"max error {error:.1e}")


IN_PROCESS_CHECKS: tuple[Callable[[], CheckResult], ...] = (
    vmapped_log_softmax_reduction,
    vmapped_matvec_sum,
)


def _verdict(checks: tuple[CheckResult, ...]) -> BackendVerdict:
    import jax
    import jaxlib

    return BackendVerdict(
        ok=all(c.ok for c in checks),
        jax=jax.__version__,
        jaxlib=jaxlib.__version__,
        platform=jax.default_backend(),
        workaround=WORKAROUND,
        checks=checks,
    )


@functools.lru_cache(maxsize=2)
def self_check(crash_checks: bool = False) -> BackendVerdict:
    """Run the reproducers of every known miscompile (once per process).

    The in-process checks take well under a second.  ``crash_checks`` adds
    those that kill the process when they fail, each in a child process
    (a couple of seconds each: a new interpreter imports JAX).
    """
    checks = tuple(check() for check in IN_PROCESS_CHECKS)
    if crash_checks:
        checks += (rank7_reduce_crash(),)
    return _verdict(checks)


def check_backend(crash_checks: bool = False) -> BackendVerdict:
    """:func:`self_check`, raising :class:`UntrustedBackendError` if it fails."""
    verdict = self_check(crash_checks)
    if not verdict.ok:
        raise UntrustedBackendError(verdict.message)
    return verdict


WORKAROUND: Workaround = Workaround(installed_jaxlib(), False, False, False, "not run")


def _install() -> None:
    """Called once by ``nar_gap/__init__.py``, before any module imports JAX."""
    global WORKAROUND
    WORKAROUND = apply_workarounds()
