"""The numerics nar_gap promises on every backend: matmul precision and GPU determinism.

**Precision.** JAX's default matmul precision is float32 on a CPU but TF32 on
Ampere and Hopper GPUs (10 bits of mantissa). Compiled weights reach 1e7-1e8
and their decisions rest on margins that TF32 rounds away, so every
computation that involves compiled weights runs at :data:`COMPILED_PRECISION`
("highest"): the compiled model's forward pass (``CompiledModel.precision``),
the supervision teacher, the loss landscapes, and training that *starts* from
compiled weights (:func:`starting_precision`: the stability study, notebook
05). Training from a random initialisation keeps JAX's default, as dm-clrs's
training does on a GPU: that is the paper's regime, and TF32 is several times
faster there. :func:`numerics_record` states both in every results sidecar.

**Determinism.** XLA:GPU's reductions and scatters may use atomics, whose
order differs from run to run. Importing nar_gap asks for deterministic ones
(``--xla_gpu_deterministic_ops=true`` in ``XLA_FLAGS``, before JAX starts)
wherever an NVIDIA GPU may be used; ``NAR_GAP_GPU_DETERMINISM=off`` leaves
``XLA_FLAGS`` alone. What a GPU rerun may still change: the last bits across
GPU models, drivers or jaxlib versions (XLA autotunes its kernels per device),
and everything against a CPU run (other kernels, TF32 in training).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from nar_gap.system.accelerator import ACCELERATOR_VARIABLE
from nar_gap.system.switches import switched_off

COMPILED_PRECISION = "highest"
"""The matmul precision compiled weights need (``jax.default_matmul_precision``'s
name): a GPU's TF32 default rounds weights of 1e7 scale."""

DETERMINISM_FLAG = "--xla_gpu_deterministic_ops=true"
DETERMINISM_SWITCH = "NAR_GAP_GPU_DETERMINISM"  # "off" leaves XLA_FLAGS alone

TRAINING_PRECISION = (
    "JAX's default (float32 on a CPU, TF32 on Ampere and later NVIDIA GPUs); "
    f"{COMPILED_PRECISION!r} for runs that start from compiled weights"
)


def gpu_possible(
    environ: Mapping[str, str], which: Callable[[str], str | None] = shutil.which
) -> bool:
    """Whether JAX may start on an NVIDIA GPU here: a driver tool or a request.

    Cheap on purpose (no subprocess): it runs at ``import nar_gap``, so it
    reads :data:`~nar_gap.system.accelerator.ACCELERATOR_VARIABLE` and the
    PATH but does not ask ``nvidia-smi`` for its GPUs, as ``nar-gap info``
    (:func:`~nar_gap.system.accelerator.expected_accelerator`) does.
    """
    choice = environ.get(ACCELERATOR_VARIABLE, "").lower()
    if choice == "cpu" or environ.get("JAX_PLATFORMS", "").lower() == "cpu":
        return False
    return choice == "cuda" or which("nvidia-smi") is not None


def request_gpu_determinism(
    environ: MutableMapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> bool:
    """Add :data:`DETERMINISM_FLAG` to ``XLA_FLAGS`` where a GPU may be used.

    Returns whether the flag is in force. Left alone when switched off, when
    ``XLA_FLAGS`` already names the flag (the user's own value wins), or on
    a machine where JAX cannot use an NVIDIA GPU (CPU runs keep their flags,
    and with them their compilation cache).
    """
    environ = os.environ if environ is None else environ
    flags = environ.get("XLA_FLAGS", "")
    name = DETERMINISM_FLAG.partition("=")[0]
    if name in flags:
        return DETERMINISM_FLAG in flags.split()
    if switched_off(environ, DETERMINISM_SWITCH) or not gpu_possible(environ, which):
        return False
    environ["XLA_FLAGS"] = f"{flags} {DETERMINISM_FLAG}".strip()
    return True


def starting_precision(initial_params: Any | None) -> contextlib.AbstractContextManager:
    """The matmul precision of a training run: highest from compiled weights.

    A context, entered around the whole run, so that the jitted train step,
    validation and test scoring are all traced under it (the precision is
    part of JAX's trace context, hence of every jit cache key).
    """
    if initial_params is None:
        return contextlib.nullcontext()
    import jax

    return jax.default_matmul_precision(COMPILED_PRECISION)


@contextlib.contextmanager
def lowest_default_precision() -> Iterator[None]:
    """JAX's default matmul precision at its lowest (one bfloat16 pass).

    For tests: whatever nar_gap guards with :data:`COMPILED_PRECISION` must
    stay exact under it (a GPU honours it; a CPU computes float32 anyway).
    """
    import jax

    with jax.default_matmul_precision("bfloat16"):
        yield


def numerics_record(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What a results sidecar says about precision and determinism."""
    import jax

    environ = os.environ if environ is None else environ
    return {
        "training_matmul_precision": TRAINING_PRECISION,
        "compiled_matmul_precision": COMPILED_PRECISION,
        "default_matmul_precision_setting": jax.config.jax_default_matmul_precision,
        "gpu_deterministic_ops": DETERMINISM_FLAG in environ.get("XLA_FLAGS", ""),
    }
