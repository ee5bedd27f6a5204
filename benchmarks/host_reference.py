"""A fixed piece of CPU work, timed: the unit CI's times can be read in.

CI's hosts move: on one 2-core machine the same commit's clean-clone CI took
835 s and 1 009 s an hour apart, and a test of numpy alone that no change
touched took 13 to 22 s across a day (docs/tests.md).  A cut of 5 % cannot be
told from that.  ``.ci/run`` runs this before the lint and prints the
seconds, so each CI log carries its host's speed beside the suite's time.

The work is what the suite spends its time on, at a fixed size, one thread:
numpy (a matrix chain) and XLA (tracing, lowering and compiling a small
scanned network, with no compilation cache), each the best of three.

``python benchmarks/host_reference.py`` prints one line,
``host reference: numpy <seconds> s, compile <seconds> s``.
"""

from __future__ import annotations

import os

# Before numpy and JAX start their thread pools: one thread, as a test worker
# has about one core of CI's two.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import time  # noqa: E402

import numpy as np  # noqa: E402

REPEATS = 3


def numpy_seconds() -> float:
    """A chain of 400 products of 256 x 256 matrices, squashed (best of three)."""
    best = float("inf")
    for _ in range(REPEATS):
        a = np.random.default_rng(0).standard_normal((256, 256))
        start = time.perf_counter()
        for _ in range(400):
            a = np.tanh(a @ a.T / 256.0)
        best = min(best, time.perf_counter() - start)
    return best


def compile_seconds() -> float:
    """Trace, lower and compile a fresh 4-step scanned MLP (best of three)."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_compilation_cache", False)
    best = float("inf")
    for k in range(REPEATS):

        def network(w, x, k=k):
            def step(h, _):
                h = jnp.tanh(h @ w["a"] + w["b"]) * (1.0 + k)
                return jax.nn.softmax(h @ w["c"]), None

            return jax.lax.scan(step, x, None, length=4)[0].sum()

        w = {"a": jnp.ones((64, 64)), "b": jnp.ones(64), "c": jnp.ones((64, 64))}
        start = time.perf_counter()
        jax.jit(jax.grad(network)).lower(w, jnp.ones((16, 64))).compile()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    """Print both times on one line."""
    print(
        f"host reference: numpy {numpy_seconds():.2f} s, "
        f"compile {compile_seconds():.2f} s",
        flush=True,
    )


if __name__ == "__main__":
    main()
