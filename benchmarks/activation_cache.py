"""What the activation cache costs: off, on, and with a patch, against the plain pass.

The reference is :func:`nar_gap.model.seeds.forward`, the jitted evaluation
pass every score and measure uses.  Off (no collection asked for) the sites
add nothing to its program (``tests/model/test_activations.py`` compares the
lowered programs); this benchmark measures the steady-state time of:

* ``forward``: the reference;
* ``cache``: :func:`nar_gap.model.activations.run_with_cache`, every site
  stored (``pre_attention`` is ``[S, B, N, N, D]``: the largest);
* ``patched``: the same with the attention of every step replaced (another
  array of the same shape, as when patching one model's cache into another).

Each is compiled first (its first call printed apart), then the three take
turns for ``--repeats`` rounds after a warm-up, and each one's median is
printed, as a ratio to ``forward``'s measured in the same run, with the
cache's size.  From the repository root:

    .venv/bin/python benchmarks/activation_cache.py            # BFS, hidden 128, N = 16
    .venv/bin/python benchmarks/activation_cache.py --nodes 64 --batch 8
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import jax
import numpy as np

from nar_gap.data import sample_batch
from nar_gap.model.activations import Patch, run_with_cache
from nar_gap.model.config import NetworkConfig
from nar_gap.model.network import init_params
from nar_gap.model.seeds import forward


def _first_call(call: Callable[[], object]) -> float:
    """Seconds of the first call (its compile included), result waited for."""
    start = time.perf_counter()
    jax.block_until_ready(call())
    return time.perf_counter() - start


def _interleaved(
    passes: dict[str, Callable[[], object]], rounds: int, warmup: int = 3
) -> dict[str, float]:
    """Median seconds per call of each pass, the passes taking turns.

    Taking turns round by round (after ``warmup`` calls of each) spreads the
    machine's drift (allocator growth, frequency, other work) over every
    pass alike, where timing one pass after another charged it to whichever
    ran first.
    """
    for call in passes.values():
        for _ in range(warmup):
            jax.block_until_ready(call())
    times: dict[str, list[float]] = {name: [] for name in passes}
    for _ in range(rounds):
        for name, call in passes.items():
            start = time.perf_counter()
            jax.block_until_ready(call())
            times[name].append(time.perf_counter() - start)
    return {name: float(np.median(t)) for name, t in times.items()}


def main() -> None:
    """Time the three passes and print them against the reference."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", default="bfs")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    config = NetworkConfig(args.algorithm, hidden_size=args.hidden)
    batch = sample_batch(args.algorithm, args.nodes, args.batch, seed=0)
    params = init_params(config, batch, seed=0)
    attention = jax.eval_shape(forward(config), params, batch).attention
    other = np.asarray(
        jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(1), attention.shape))
    )  # another model's attention, in effect
    patch = [Patch("attention", other)]
    passes = {
        "forward": lambda: forward(config)(params, batch),
        "cache": lambda: run_with_cache(config, params, batch),
        "patched": lambda: run_with_cache(config, params, batch, patch),
    }
    print(
        f"{args.algorithm}, hidden {args.hidden}, N = {args.nodes}, batch "
        f"{args.batch}, {attention.shape[0]} steps, on {jax.devices()[0].platform}"
    )
    first = {name: _first_call(call) for name, call in passes.items()}
    steady = _interleaved(passes, args.repeats)
    for name in passes:
        print(
            f"{name:8s} first call {first[name]:6.2f} s, median "
            f"{steady[name] * 1e3:8.1f} ms, x{steady[name] / steady['forward']:.2f} "
            "of forward"
        )
    _, cache = run_with_cache(config, params, batch)
    size = sum(np.asarray(v).nbytes for v in cache.values())
    print(f"the cache holds {size / 2**20:.1f} MiB ({len(cache)} entries)")


if __name__ == "__main__":
    main()
