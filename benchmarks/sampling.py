"""Training data for the largest step: dm-clrs's path, the fast one, the host's share.

The step is the paper profile's largest: 128 seeds x batch 32, at the
training length mix (steps 0..4 draw N = 4, 7, 11, 13, 16, run.py's cycle).
Both sides draw exactly what the trainer consumes, the padded and stacked
batch of :func:`nar_gap.training.feed.seed_batches` (the same bytes, which
``tests/tasks/test_fast_sampling.py`` checks):

* dm-clrs: ``fast=False``, one ``train_batch`` per seed through dm-clrs's
  sampler, algorithm and probing, then ``pad_for_training``;
* fast: ``fast=True``, the whole step drawn at once
  (:mod:`nar_gap.tasks.fast_sampling`).

Both are timed in this process as CPU time (``time.process_time``, so other
work on the machine does not count), over the same steps: batches per
second per core, and their ratio.

The device side is an estimate, not a measurement: the analytic FLOPs of
one training step (:func:`nar_gap.model.flops.train_step_flops`, forward and
backward) at each step's padded shape, times the seeds, averaged over the
mix, divided by ``--peak-tflops`` (default 67: an H100 SXM's dense float32
rate without tensor cores) times ``--utilisation`` (default 0.5).  The host
time of a step with K cores is the fast path's CPU time per step over K
(each worker draws whole steps) plus the hand-over the trainer's own thread
pays for a step drawn in a worker (unpickling it from a shared-memory slot:
:mod:`nar_gap.tasks.prefetch`; measured here as thread CPU time beyond
reading an in-process batch).  Its ratio to the
device time is the number to keep <= 0.10.  ``--pool-steps`` also runs the
worker pool on this machine and prints the step rate it delivered.
``--family-share S`` also times the fast path with that share of each
batch's graphs drawn from ``--families`` (``TrainConfig.train_families``:
:mod:`nar_gap.tasks.mixing` draws them with numpy graph by graph and traces
them as arrays beside the sampled ones), as a ratio to the unmixed fast
step.  From the repository root:

    .venv/bin/python benchmarks/sampling.py      # bfs, bellman_ford, dfs; K: all cores
    .venv/bin/python benchmarks/sampling.py --cores 16 --algorithm bfs
    .venv/bin/python benchmarks/sampling.py --seeds 8 --family-share 0.25 --pool-steps 0
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIX_STEPS = 5  # steps 0..4 visit each of the five training lengths once


def _config(
    algorithm: str,
    seeds: int,
    batch_size: int,
    lengths: list[int],
    families: tuple[str, ...] = (),
    share: float = 0.0,
) -> Any:
    from nar_gap.model.config import NetworkConfig
    from nar_gap.training.config import TrainConfig

    return TrainConfig(
        network=NetworkConfig(algorithm),
        seeds=tuple(range(seeds)),
        batch_size=batch_size,
        train_lengths=tuple(lengths),
        train_families=families if share else (),
        family_share=share,
    )


def _cpu_seconds_per_step(config: Any, fast: bool, passes: int) -> float:
    """Mean CPU seconds of ``seed_batches`` over the mix's steps and ``passes``."""
    from nar_gap.training.feed import seed_batches

    seed_batches(config, 0, fast=fast)  # imports and first-call costs, untimed
    start = time.process_time()
    for _ in range(passes):
        for step in range(MIX_STEPS):
            seed_batches(config, step, fast=fast)
    return (time.process_time() - start) / (passes * MIX_STEPS)


def _device_seconds(config: Any, peak: float, utilisation: float) -> tuple[float, list]:
    """Estimated device seconds per step over the mix, and the padded shapes."""
    from nar_gap.model.flops import train_step_flops
    from nar_gap.training.feed import seed_batches

    shapes = [
        (batch.num_nodes, batch.num_steps)
        for batch in (seed_batches(config, step) for step in range(MIX_STEPS))
    ]
    flops = [
        train_step_flops(config.network, config.batch_size, n, t)["total"]
        * len(config.seeds)
        for n, t in shapes
    ]
    return statistics.mean(flops) / (peak * utilisation), shapes


def _read(batch: Any) -> None:
    import jax

    for leaf in jax.tree_util.tree_leaves(batch):
        leaf.sum()


def _handover_seconds(config: Any, repeats: int = 5) -> float:
    """Trainer-thread CPU seconds per step to take a worker's batch, beyond reading it.

    Through a reused slot, as :func:`nar_gap.tasks.prefetch.prefetch_in_processes`
    hands steps over once its slots are mapped: unpickling the header and
    reading the arrays, less reading the same batch in-process.
    """
    from nar_gap.tasks.prefetch import Slots, store_shared
    from nar_gap.training.feed import seed_batches

    extra = []
    with tempfile.TemporaryDirectory() as folder:
        slots = Slots(folder, 1)
        for step in range(MIX_STEPS):
            batch = seed_batches(config, step)
            mapped, local = [], []
            for _ in range(repeats + 1):  # the first maps the slot
                stored = store_shared(batch, folder, slots.lend())
                start = time.thread_time()
                _read(slots.load(*stored))
                mapped.append(time.thread_time() - start)
                start = time.thread_time()
                _read(batch)
                local.append(time.thread_time() - start)
            extra.append(max(0.0, min(mapped[1:]) - min(local)))
    return statistics.mean(extra)


def _pool_steps_per_second(config: Any, workers: int, steps: int) -> float:
    """Steps per second a pool of ``workers`` delivered here, after its first step."""
    from nar_gap.tasks.prefetch import prefetch_in_processes
    from nar_gap.training.feed import seed_batches

    make = functools.partial(seed_batches, config, fast=True)
    stream = prefetch_in_processes(make, range(steps + 1), workers)
    next(stream)  # the workers' start-up
    start = time.perf_counter()
    for _ in stream:
        pass
    return steps / (time.perf_counter() - start)


def measure(algorithm: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every number of one algorithm's report."""
    config = _config(algorithm, args.seeds, args.batch_size, args.lengths)
    reference_config = _config(
        algorithm, args.reference_seeds, args.batch_size, args.lengths
    )
    scale = args.seeds / args.reference_seeds
    reference = _cpu_seconds_per_step(reference_config, False, 1) * scale
    fast = _cpu_seconds_per_step(config, True, args.passes)
    device, shapes = _device_seconds(config, args.peak_tflops * 1e12, args.utilisation)
    handover = _handover_seconds(config)
    host = fast / args.cores + handover
    numbers = {
        "reference_seconds_per_step": reference,
        "fast_seconds_per_step": fast,
        "reference_batches_per_core_second": args.seeds / reference,
        "fast_batches_per_core_second": args.seeds / fast,
        "speedup": reference / fast,
        "padded_shapes": shapes,
        "device_seconds_per_step": device,
        "handover_seconds_per_step": handover,
        "host_seconds_per_step": host,
        "host_over_device": host / device,
    }
    if args.family_share:
        mixed = _config(
            algorithm,
            args.seeds,
            args.batch_size,
            args.lengths,
            tuple(args.families),
            args.family_share,
        )
        numbers["mixed_seconds_per_step"] = _cpu_seconds_per_step(
            mixed, True, args.passes
        )
        numbers["mixed_over_fast"] = numbers["mixed_seconds_per_step"] / fast
    if args.pool_steps:
        numbers["pool_workers"] = args.workers
        numbers["pool_steps_per_second"] = _pool_steps_per_second(
            config, args.workers, args.pool_steps
        )
    return numbers


def report(algorithm: str, numbers: dict[str, Any], args: argparse.Namespace) -> str:
    """The printed lines of one algorithm."""
    n = numbers
    padded = ", ".join(f"{a}x{b}" for a, b in n["padded_shapes"])
    lines = [
        f"{algorithm}: {args.seeds} seeds x batch {args.batch_size}, lengths "
        f"{args.lengths} (padded {padded})",
        f"  dm-clrs reference : {n['reference_batches_per_core_second']:8.1f} "
        f"batches/s per core ({n['reference_seconds_per_step'] * 1e3:7.1f} ms CPU "
        "per step"
        + (
            f"; timed on {args.reference_seeds} seeds, scaled)"
            if args.reference_seeds != args.seeds
            else ")"
        ),
        f"  fast path         : {n['fast_batches_per_core_second']:8.1f} batches/s "
        f"per core ({n['fast_seconds_per_step'] * 1e3:7.1f} ms CPU per step)",
        f"  speedup           : {n['speedup']:.1f}x (fast / reference, same bytes)",
        f"  device (estimate) : {n['device_seconds_per_step'] * 1e3:.1f} ms per step "
        f"= FLOPs / ({args.peak_tflops:g} TFLOP/s x {args.utilisation:g})",
        f"  host with K={args.cores:<3}  : {n['host_seconds_per_step'] * 1e3:.2f} ms "
        f"per step = {n['fast_seconds_per_step'] * 1e3:.1f} / {args.cores} + hand-over "
        f"{n['handover_seconds_per_step'] * 1e3:.2f}; feeds "
        f"{1 / n['host_seconds_per_step']:.0f} steps/s against the device's "
        f"{1 / n['device_seconds_per_step']:.0f}",
        f"  host / device     : {n['host_over_device']:.3f} (target <= 0.10; holds "
        f"down to a device step of {n['host_seconds_per_step'] / 0.1 * 1e3:.1f} ms)",
    ]
    if "mixed_seconds_per_step" in n:
        lines.append(
            f"  families mixed in : {n['mixed_seconds_per_step'] * 1e3:7.1f} ms CPU "
            f"per step with {args.family_share:g} of each batch from "
            f"{', '.join(args.families)}: {n['mixed_over_fast']:.1f}x the fast step"
        )
    if "pool_steps_per_second" in n:
        lines.append(
            f"  measured pool     : {n['pool_workers']} worker(s) here delivered "
            f"{n['pool_steps_per_second']:.1f} steps/s"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure each algorithm and print its report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--algorithm", nargs="+", default=["bfs", "bellman_ford", "dfs"]
    )
    parser.add_argument("--seeds", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lengths", type=int, nargs="+", default=[4, 7, 11, 13, 16])
    parser.add_argument(
        "--cores", type=int, default=os.cpu_count(), help="K (default: this machine's)"
    )
    parser.add_argument("--peak-tflops", type=float, default=67.0)
    parser.add_argument("--utilisation", type=float, default=0.5)
    parser.add_argument(
        "--reference-seeds",
        type=int,
        help="time dm-clrs's path on this many seeds and scale (default: all)",
    )
    parser.add_argument("--passes", type=int, default=3, help="fast path passes")
    parser.add_argument(
        "--pool-steps", type=int, default=20, help="run the worker pool (0: skip)"
    )
    parser.add_argument(
        "--workers", type=int, help="the pool's workers (default: K - 1, at least 1)"
    )
    parser.add_argument(
        "--family-share",
        type=float,
        default=0.0,
        help="also time this share of each batch drawn from --families (0: skip)",
    )
    parser.add_argument("--families", nargs="+", default=["path", "tree", "grid"])
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    args.reference_seeds = args.reference_seeds or args.seeds
    args.workers = args.workers or max(1, args.cores - 1)

    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"K = {args.cores}",
        flush=True,
    )
    results = {}
    for algorithm in args.algorithm:
        results[algorithm] = measure(algorithm, args)
        print(report(algorithm, results[algorithm], args), flush=True)
    if args.json:
        payload = {"args": vars(args), "cpu_count": os.cpu_count(), "results": results}
        Path(args.json).write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
