"""Training throughput: nar_gap (seeds at once) against dm-clrs (one after another).

Both sides train the same configuration -- the paper's by default: BFS, hidden
128, one head, batch 32, train lengths 4..16, run.py's edge-probability grid
and random ``pos`` -- for the same number of steps and seeds, and both clocks
include everything a user waits for: sampling, JIT compiles and training.

* dm-clrs: for each seed, run.py's recipe -- ``make_multi_sampler``-style
  on-the-fly samplers (``track_max_steps`` on, as ``build_sampler`` defaults),
  ``BaselineModel`` with the ``gatv2`` processor, ``feedback`` once per step.
* nar_gap: ``nar_gap.training.loop`` with every seed stacked on one vmapped step.  Its
  clock also includes the final validation and test-set evaluation that
  ``train`` always does (dm-clrs's loop here does none), so the ratio is
  conservative.

Prints seed·steps per second for each and the ratio; ``--json PATH`` also
writes them.  Run from the repository root:

    .venv/bin/python benchmarks/train_throughput.py            # the paper's setting
    .venv/bin/python benchmarks/train_throughput.py --steps 50 --seeds 2   # quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import jax
import numpy as np

from nar_gap.benchmark._clrs import clrs
from nar_gap.benchmark.defaults import TRAIN_P
from nar_gap.model.config import NetworkConfig
from nar_gap.training import TrainConfig, train


def time_dm_clrs(args: argparse.Namespace) -> float:
    """Seconds dm-clrs needs to train ``args.seeds`` seeds one after another."""
    start = time.perf_counter()
    for seed in range(args.seeds):
        rng = np.random.RandomState(seed)
        samplers = []
        for length in args.lengths:
            sampler, spec = clrs.build_sampler(
                args.algorithm,
                seed=rng.randint(2**32),
                num_samples=-1,
                length=length,
                p=TRAIN_P,
            )
            samplers.append(sampler)

        def batches(samplers=samplers):
            while True:
                for sampler in samplers:
                    yield sampler.next(args.batch_size)

        stream = clrs.process_random_pos(batches(), rng)
        first = next(stream)
        factory = clrs.get_processor_factory(
            "gatv2", use_ln=True, nb_triplet_fts=0, nb_heads=args.heads
        )
        model = clrs.models.BaselineModel(
            spec=spec,
            dummy_trajectory=first,
            processor_factory=factory,
            hidden_dim=args.hidden_size,
            encode_hints=True,
            decode_hints=True,
            encoder_init="xavier_on_scalars",
            learning_rate=1e-3,
            grad_clip_max_norm=1.0,
            hint_repred_mode="soft",
        )
        model.init(first.features, seed + 1)
        key = jax.random.PRNGKey(seed)
        feedback = first
        for _ in range(args.steps):
            key, step_key = jax.random.split(key)
            loss = model.feedback(step_key, feedback)
            feedback = next(stream)
        jax.block_until_ready(loss)
        print(
            f"  dm-clrs seed {seed}: {time.perf_counter() - start:.1f} s so far",
            flush=True,
        )
    return time.perf_counter() - start


def time_nar_gap(args: argparse.Namespace) -> float:
    """Seconds nar_gap needs to train all seeds together."""
    config = TrainConfig(
        network=NetworkConfig(
            args.algorithm, hidden_size=args.hidden_size, num_heads=args.heads
        ),
        seeds=tuple(range(args.seeds)),
        steps=args.steps,
        batch_size=args.batch_size,
        train_lengths=tuple(args.lengths),
        eval_every=0,
        checkpoint_every=0,
    )
    start = time.perf_counter()
    train(config, out_dir=None, progress=not args.quiet)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Run both sides, print seed-steps per second and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithm", default="bfs")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--hidden-size", type=int, default=128)
    parser.add_argument("--heads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lengths", type=int, nargs="+", default=[4, 7, 11, 13, 16])
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    work = args.seeds * args.steps
    print(
        f"{args.algorithm}: {args.seeds} seeds x {args.steps} steps, hidden "
        f"{args.hidden_size}, batch {args.batch_size}, lengths {args.lengths}; "
        f"{os.cpu_count()} CPU cores, JAX devices {jax.devices()}",
        flush=True,
    )
    ours = time_nar_gap(args)
    print(f"nar_gap : {ours:8.1f} s  {work / ours:8.2f} seed·steps/s", flush=True)
    theirs = time_dm_clrs(args)
    print(f"dm-clrs : {theirs:8.1f} s  {work / theirs:8.2f} seed·steps/s", flush=True)
    ratio = theirs / ours
    print(f"ratio   : {ratio:.2f}x (nar_gap throughput / dm-clrs throughput)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "args": vars(args),
                    "nar_gap_seconds": ours,
                    "dm_clrs_seconds": theirs,
                    "nar_gap_seed_steps_per_s": work / ours,
                    "dm_clrs_seed_steps_per_s": work / theirs,
                    "ratio": ratio,
                    "machine": platform.platform(),
                    "cpu_count": os.cpu_count(),
                },
                handle,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
