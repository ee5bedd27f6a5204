"""What a GPU changes: compiled-weight precision, rerun determinism, step and data time.

Three measurements, each printed and written to ``--json``:

* **precision**: dm-clrs mismatches of the compiled BFS, Bellman-Ford and DFS
  with and without nar_gap's precision guard (``CompiledModel.precision``),
  under JAX's default, ``tensorfloat32`` and ``bfloat16`` default precisions.
  A CPU computes float32 whatever the setting (all zeros); a GPU shows what
  the guard prevents.
* **determinism**: a small Bellman-Ford run trained twice in this process;
  whether the parameters are bit-identical (run it once with
  ``NAR_GAP_GPU_DETERMINISM=off`` to compare).
* **step**: one training step of ``--seeds`` seeds x batch 32 at N = 16
  (the paper's largest training graphs), hidden ``--hidden``: the first call
  (compile) and the steady step on the device, against drawing the same
  step's batches on one host core with dm-clrs and with nar_gap's fast path;
  the device allocator's peak.

The committed numbers of one H200 are ``benchmarks/results/gpu_h200_*.json``.
From the repository root, on the GPU machine:

    python benchmarks/gpu_checks.py --json gpu.json
    python benchmarks/gpu_checks.py --seeds 4 --hidden 16   # a quick look on a CPU
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

PRECISION_CASES = (("bfs", 16), ("bellman_ford", 16), ("dfs", 16), ("bellman_ford", 64))
DEFAULTS = (None, "tensorfloat32", "bfloat16")


def precision_mismatches() -> dict[str, dict[str, int]]:
    """Mismatch counts per case, with and without the guard, per default."""
    import jax

    from nar_gap.compiler.compiled_model import CompiledModel
    from nar_gap.compiler.compiling import compile_algorithm
    from nar_gap.tasks.sampling import sample_batch

    guarded = CompiledModel.precision
    found = {}
    for algorithm, nodes in PRECISION_CASES:
        model = compile_algorithm(algorithm, hidden_size=None, num_nodes=nodes)
        batch = sample_batch(algorithm, nodes, 8, seed=11)
        row = {}
        try:
            for guard in (True, False):
                CompiledModel.precision = guarded if guard else None
                for default in DEFAULTS:
                    with jax.default_matmul_precision(default):
                        row[f"guard={guard},default={default}"] = len(
                            model.check(batch)
                        )
        finally:
            CompiledModel.precision = guarded
        found[f"{algorithm}@{nodes}"] = row
        print(f"precision {algorithm} N={nodes}: {row}", flush=True)
    return found


def rerun_digests() -> dict[str, Any]:
    """Train one small run twice; hash both runs' parameters."""
    import jax
    import numpy as np

    from nar_gap.model.config import NetworkConfig
    from nar_gap.training.config import TrainConfig
    from nar_gap.training.loop import train

    config = TrainConfig(
        network=NetworkConfig("bellman_ford", hidden_size=64),
        seeds=(0, 1, 2, 3),
        steps=25,
        eval_every=0,
        checkpoint_every=0,
    )
    digests = []
    for _ in range(2):
        leaves = jax.tree_util.tree_leaves(
            jax.device_get(train(config, None, progress=False).params)
        )
        digest = hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in leaves))
        digests.append(digest.hexdigest()[:16])
    result = {
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "identical": digests[0] == digests[1],
        "digests": digests,
    }
    print(f"determinism: {result}", flush=True)
    return result


def step_times(seeds: int, hidden: int) -> dict[str, dict[str, Any]]:
    """The N = 16 training step on the device against its batches on the host."""
    import jax
    from train_throughput import time_train_step

    from nar_gap.model.config import NetworkConfig
    from nar_gap.tasks.sampling import train_batch
    from nar_gap.training.config import TrainConfig
    from nar_gap.training.feed import seed_batches

    found = {}
    for algorithm in ("bfs", "bellman_ford"):
        config = TrainConfig(
            network=NetworkConfig(algorithm, hidden_size=hidden),
            seeds=tuple(range(seeds)),
            steps=10,
            eval_every=0,
            checkpoint_every=0,
        )
        longest = config.train_lengths.index(max(config.train_lengths))
        start = time.perf_counter()
        for seed in config.seeds:
            train_batch(algorithm, seed, longest)
        dmclrs = time.perf_counter() - start
        seed_batches(config, longest + len(config.train_lengths))  # warm
        start = time.perf_counter()
        batch = seed_batches(config, longest)
        fast = time.perf_counter() - start
        first, steady = time_train_step(config, batch, repeats=10)
        stats = jax.devices()[0].memory_stats() or {}
        found[algorithm] = {
            "shape": [int(batch.num_nodes), int(batch.num_steps)],
            "dmclrs_serial_s": dmclrs,
            "fast_serial_s": fast,
            "first_step_s": first,
            "steady_step_s": steady,
            "peak_gib": stats.get("peak_bytes_in_use", 0) / 2**30,
        }
        print(f"step {algorithm}: {found[algorithm]}", flush=True)
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the three measurements; print them and write ``--json``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument(
        "--only", choices=("precision", "determinism", "step"), action="append"
    )
    args = parser.parse_args(argv)
    import jax

    print(f"devices: {jax.devices()}", flush=True)
    wanted = args.only or ["precision", "determinism", "step"]
    numbers: dict[str, Any] = {"devices": [str(d) for d in jax.devices()]}
    if "precision" in wanted:
        numbers["precision"] = precision_mismatches()
    if "determinism" in wanted:
        numbers["determinism"] = rerun_digests()
    if "step" in wanted:
        numbers["step"] = step_times(args.seeds, args.hidden)
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # train_throughput
    sys.exit(main())
