"""The machine's matmul roof, beside the analytic count of :mod:`nar_gap.model.flops`.

The roof is a float32 ``1024 x 1024`` matmul timed in the same process:
what the machine's BLAS reaches on dense work.  The network's fraction of it
says how far the step is from compute-bound.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np


def matmul_roof(size: int = 1024, repeats: int = 20) -> float:
    """FLOP/s of a float32 ``size x size`` matmul on the default device (best of 3)."""
    a = jnp.asarray(np.random.default_rng(0).standard_normal((size, size)), jnp.float32)
    matmul = jax.jit(lambda x: x @ x)
    jax.block_until_ready(matmul(a))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeats):
            out = matmul(a)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - start) / repeats)
    return 2 * size**3 / best
