"""Training throughput: nar_gap (seeds at once) against dm-clrs (one after another).

Both sides train the same configuration -- the paper's by default: BFS, hidden
128, one head, batch 32, train lengths 4..16, run.py's edge-probability grid
and random ``pos`` -- for the same number of steps and seeds, and both clocks
include everything a user waits for: sampling, JIT compiles and training.
Each side runs in its own child process (with JAX's persistent compilation
cache off), so compiles are counted and peak memory is each side's own.

* dm-clrs: for each seed, run.py's recipe -- ``make_multi_sampler``-style
  on-the-fly samplers (``track_max_steps`` on, as ``build_sampler`` defaults),
  ``BaselineModel`` with the ``gatv2`` processor, ``feedback`` once per step.
* nar_gap: :func:`nar_gap.training.train` with every seed in one step (the
  backend's seed strategy, ``--strategy`` to force one).  Its clock also
  includes the final validation and test-set evaluation that ``train``
  always does (dm-clrs's loop here does none), so the ratio is conservative.

Printed for each side: the wall time and seed-steps per second, the
steady-state time of one seed-step on a batch of the longest graphs (N = 16,
after compilation), the number of compilations of the train step, and peak
memory (resident set on CPU, the allocator's peak on accelerators).  For
nar_gap also the analytic FLOPs per step (:mod:`nar_gap.model.flops`), the
GFLOP/s they imply and their fraction of a float32 matmul measured in the
same run.  ``--json PATH`` writes everything.  From the repository root:

    .venv/bin/python benchmarks/train_throughput.py            # the paper's setting
    .venv/bin/python benchmarks/train_throughput.py --steps 50 --seeds 2   # quick look

The first gpu job ran its steps at half the rate this benchmark's steady step
reached on the same H200 (``benchmarks/results/gpu_h200_job_2026-11-26``).
That job's loop validates and checkpoints every 100 steps on one padded
shape.  The same loop here, against the bare one, on the GPU (add
``--side nar_gap --seeds 128 --steps 300 --shape 16 16`` to each)::

    python benchmarks/train_throughput.py ... --json bare.json
    python benchmarks/train_throughput.py ... --eval-every 100 --json validating.json
    python benchmarks/train_throughput.py ... --eval-every 100 --checkpoint-every 100
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STEADY_REPEATS = 5


def _peak_memory_bytes() -> dict[str, float]:
    """Peak resident memory of this process, and the device allocator's peak."""
    import jax

    peak = {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    stats = jax.devices()[0].memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        peak["peak_device_bytes"] = stats["peak_bytes_in_use"]
    return peak


def _quiet_jax() -> None:
    import jax

    jax.config.update("jax_enable_compilation_cache", False)


class CompileCounter(logging.Handler):
    """Counts JAX's "Compiling jit(NAME)" log records for one function name.

    With ``jax_log_compiles`` on, JAX logs every compilation by function
    name; the records are counted here and not printed.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.prefix = f"Compiling jit({name})"
        self.count = 0
        jax_logger = logging.getLogger("jax")
        jax_logger.addHandler(self)
        jax_logger.propagate = False
        import jax

        jax.config.update("jax_log_compiles", True)

    def emit(self, record: logging.LogRecord) -> None:
        """Count the record if it is a compilation of the function."""
        self.count += record.getMessage().startswith(self.prefix)


def time_train_step(
    config: Any, batch: Any, repeats: int = STEADY_REPEATS
) -> tuple[float, float]:
    """The first call of ``config``'s train step on ``batch``, and a steady one.

    Both in seconds; the first includes the compile unless the step was
    compiled already (by a run of the same configuration, say).
    """
    import jax
    import jax.numpy as jnp

    from nar_gap.model.seeds import init_stacked
    from nar_gap.training.step import make_optimizer, make_train_step, step_key

    step_fn = make_train_step(config)
    one = jax.tree_util.tree_map(lambda x: x[0], batch)
    params = init_stacked(config.network, one, config.seeds)
    opt_state = jax.vmap(make_optimizer(config).init)(params)
    keys = jnp.stack([step_key(s, 0) for s in config.seeds])
    begin = time.perf_counter()
    state = jax.block_until_ready(step_fn(params, opt_state, batch, keys))
    first = time.perf_counter() - begin
    begin = time.perf_counter()
    for _ in range(repeats):
        state = step_fn(state[0], state[1], batch, keys)
    jax.block_until_ready(state)
    return first, (time.perf_counter() - begin) / repeats


def run_nar_gap(args: argparse.Namespace) -> dict[str, Any]:
    """Train all seeds together; then time one steady-state step at N = 16."""
    _quiet_jax()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from flops import matmul_roof

    from nar_gap.model.config import NetworkConfig
    from nar_gap.model.flops import mean_flops, train_step_flops
    from nar_gap.training import TrainConfig, train
    from nar_gap.training.feed import seed_batches
    from nar_gap.training.step import seed_strategy_for

    config = TrainConfig(
        network=NetworkConfig(
            args.algorithm, hidden_size=args.hidden_size, num_heads=args.heads
        ),
        seeds=tuple(range(args.seeds)),
        steps=args.steps,
        batch_size=args.batch_size,
        train_lengths=tuple(args.lengths),
        eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every,
        seed_strategy=args.strategy,
        **(
            {"node_buckets": (args.shape[0],), "shape_buckets": (tuple(args.shape),)}
            if args.shape
            else {}
        ),
    )
    roof = matmul_roof()
    counter = CompileCounter("train_step")
    with tempfile.TemporaryDirectory(prefix="nar_gap-throughput-") as scratch:
        # Checkpoints need a run folder; without them none is written.
        out = Path(scratch) if args.checkpoint_every else None
        start = time.perf_counter()
        result = train(config, out_dir=out, progress=not args.quiet)
        seconds = time.perf_counter() - start
    compiles = counter.count

    # Steady state: the longest graphs' batch, compiled already or now (not timed).
    longest = next(
        s for s in range(len(args.lengths)) if args.lengths[s] == max(args.lengths)
    )
    batch = seed_batches(config, longest)
    _, steady = time_train_step(config, batch)
    steady_flops = train_step_flops(
        config.network, args.batch_size, batch.num_nodes, batch.num_steps
    )
    shapes = [shape for shape, count in result.shapes.items() for _ in range(count)]
    run_flops = mean_flops(config.network, args.batch_size, shapes) * len(config.seeds)
    return {
        "seconds": seconds,
        "strategy": seed_strategy_for(config.seed_strategy),
        "compiles": compiles,
        "shapes": {f"{n}x{t}": c for (n, t), c in result.shapes.items()},
        "steady_shape": [batch.num_nodes, batch.num_steps],
        "steady_seed_step_seconds": steady / len(config.seeds),
        "steady_flops_per_seed_step": steady_flops,
        "steady_gflops_per_s": steady_flops["total"] * len(config.seeds) / steady / 1e9,
        "run_gflops_per_s": run_flops * args.steps / seconds / 1e9,
        "eval_every": args.eval_every,
        "checkpoint_every": args.checkpoint_every,
        "matmul_roof_gflops_per_s": roof / 1e9,
        "mean_test_score": float(
            sum(m["test_score"] for m in result.metrics) / len(result.metrics)
        ),
        **_peak_memory_bytes(),
    }


def run_dm_clrs(args: argparse.Namespace) -> dict[str, Any]:
    """Train ``args.seeds`` seeds one after another, as run.py does."""
    _quiet_jax()
    import jax
    import numpy as np

    from nar_gap.tasks._clrs import full_clrs

    clrs = full_clrs()  # BaselineModel needs Haiku and TensorFlow
    from nar_gap.tasks.defaults import TRAIN_P

    counter = CompileCounter("_feedback")  # BaselineModel's train step
    start = time.perf_counter()
    steady = float("nan")
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
        longest = None
        for step in range(args.steps):
            key, step_key = jax.random.split(key)
            loss = model.feedback(step_key, feedback)
            if step % len(args.lengths) == args.lengths.index(max(args.lengths)):
                longest = feedback
            feedback = next(stream)
        jax.block_until_ready(loss)
        print(
            f"  dm-clrs seed {seed}: {time.perf_counter() - start:.1f} s so far",
            flush=True,
        )
    seconds = time.perf_counter() - start
    compiles = counter.count
    if longest is not None:  # steady state on the last longest batch (compiled)
        jax.block_until_ready(model.feedback(key, longest))
        begin = time.perf_counter()
        for _ in range(STEADY_REPEATS):
            loss = model.feedback(key, longest)
        jax.block_until_ready(loss)
        steady = (time.perf_counter() - begin) / STEADY_REPEATS
    return {
        "seconds": seconds,
        "compiles": compiles,
        "steady_seed_step_seconds": steady,
        **_peak_memory_bytes(),
    }


def _in_child(side: str, argv: list[str]) -> dict[str, Any]:
    """Run one side in a fresh process; its numbers come back through a file."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{side}.json"
        command = [sys.executable, __file__, *argv, "--side", side, "--json", str(out)]
        subprocess.run(command, check=True)
        return json.loads(out.read_text())


def _describe(name: str, numbers: dict[str, Any], work: int) -> None:
    memory = numbers.get("peak_device_bytes", numbers["peak_rss_bytes"]) / 2**30
    print(
        f"{name:8}: {numbers['seconds']:8.1f} s  {work / numbers['seconds']:7.2f} "
        f"seed·steps/s;  steady {numbers['steady_seed_step_seconds'] * 1e3:6.1f} ms "
        f"per seed-step;  {numbers['compiles']} compiles;  peak {memory:.1f} GiB",
        flush=True,
    )


def markdown_report(payload: dict[str, Any]) -> str:
    """docs/benchmark.md's table of one saved run (``--report PATH`` prints it)."""
    ours, theirs, args = payload["nar_gap"], payload["dm_clrs"], payload["args"]
    work = args["seeds"] * args["steps"]

    def memory(side: dict[str, Any]) -> str:
        return (
            f"{side.get('peak_device_bytes', side['peak_rss_bytes']) / 2**30:.1f} GiB"
        )

    flops = ours["steady_flops_per_seed_step"]
    rows = [
        (
            "wall time, compiles included",
            *(f"{x['seconds']:.0f} s" for x in (ours, theirs)),
        ),
        (
            "seed·steps per second",
            *(f"{work / x['seconds']:.2f}" for x in (ours, theirs)),
        ),
        (
            "steady state, one seed-step at N = 16",
            *(f"{x['steady_seed_step_seconds'] * 1e3:.0f} ms" for x in (ours, theirs)),
        ),
        (
            "compilations of the train step",
            str(ours["compiles"]),
            str(theirs["compiles"]),
        ),
        ("peak memory", memory(ours), memory(theirs)),
    ]
    lines = [
        f"{args['algorithm']}, hidden {args['hidden_size']}, batch "
        f"{args['batch_size']}, lengths {args['lengths']}, {args['seeds']} seeds x "
        f"{args['steps']} steps; {payload['cpu_count']} CPU cores "
        f"({payload['devices'][0]}):",
        "",
        "| | nar_gap | dm-clrs |",
        "|---|---|---|",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
        "",
        *(
            [
                f"dm-clrs trained {theirs['seeds_measured']} of the "
                f"{args['seeds']} seeds ({theirs['seconds_measured']:.0f} s) and its "
                "time is scaled to all of them: its seeds run one after another, "
                "each the same work.",
                "",
            ]
            if theirs.get("seeds_measured", args["seeds"]) < args["seeds"]
            else []
        ),
        f"Ratio: **{payload['ratio']:.2f}x** over the run, "
        f"{payload['steady_ratio']:.2f}x in the steady state.  nar_gap ran "
        f"`{ours['strategy']}` over seeds on shapes {ours['shapes']}; one "
        f"seed-step at {ours['steady_shape'][0]} nodes x {ours['steady_shape'][1]} "
        f"steps is {flops['total'] / 1e9:.2f} GFLOP by the analytic count "
        f"({flops['matmul'] / flops['total']:.0%} in matmuls), "
        f"{ours['steady_gflops_per_s']:.1f} GFLOP/s, "
        f"{ours['steady_gflops_per_s'] / ours['matmul_roof_gflops_per_s']:.0%} of "
        f"the {ours['matmul_roof_gflops_per_s']:.0f} GFLOP/s a 1024² float32 "
        "matmul reached in the same run.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run both sides, print seed-steps per second and their ratio."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algorithm", default="bfs")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--hidden-size", type=int, default=128)
    parser.add_argument("--heads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lengths", type=int, nargs="+", default=[4, 7, 11, 13, 16])
    parser.add_argument(
        "--strategy", default="auto", choices=("auto", "vmap", "map"), help="nar_gap's"
    )
    parser.add_argument(
        "--side", choices=("both", "nar_gap", "dm_clrs"), default="both"
    )
    parser.add_argument(
        "--eval-every",
        type=int,
        default=0,
        help="nar_gap's validation period (0: none); a job's loop validates",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        default=0,
        help="nar_gap's checkpoint period, written to a scratch folder (0: none)",
    )
    parser.add_argument(
        "--shape",
        type=int,
        nargs=2,
        metavar=("NODES", "STEPS"),
        help="pad every step to this one shape, as the gpu profile does",
    )
    parser.add_argument("--json", help="also write the numbers to this file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--report", help="print the docs table of a saved --json")
    parser.add_argument(
        "--dm-clrs-seeds",
        type=int,
        help="train only this many of the seeds with dm-clrs and scale its time "
        "to all of them (its seeds run one after another; default: all)",
    )
    parser.add_argument(
        "--nar-gap-numbers",
        help="a nar_gap side saved by --side nar_gap --json, used instead of "
        "training it again",
    )
    args = parser.parse_args(argv)

    if args.report:
        print(markdown_report(json.loads(Path(args.report).read_text())))
        return 0

    if args.side != "both":
        numbers = (run_nar_gap if args.side == "nar_gap" else run_dm_clrs)(args)
        Path(args.json).write_text(json.dumps(numbers, indent=2))
        return 0

    import jax

    work = args.seeds * args.steps
    print(
        f"{args.algorithm}: {args.seeds} seeds x {args.steps} steps, hidden "
        f"{args.hidden_size}, batch {args.batch_size}, lengths {args.lengths}; "
        f"{os.cpu_count()} CPU cores, JAX devices {jax.devices()}",
        flush=True,
    )
    child_argv = [
        *("--algorithm", args.algorithm, "--steps", str(args.steps)),
        *("--seeds", str(args.seeds), "--hidden-size", str(args.hidden_size)),
        *("--heads", str(args.heads), "--batch-size", str(args.batch_size)),
        *("--strategy", args.strategy, "--lengths", *map(str, args.lengths)),
        *(["--quiet"] if args.quiet else []),
    ]
    if args.nar_gap_numbers:
        ours = json.loads(Path(args.nar_gap_numbers).read_text())
    else:
        ours = _in_child("nar_gap", child_argv)
    _describe("nar_gap", ours, work)
    flops = ours["steady_flops_per_seed_step"]
    print(
        f"          seed strategy {ours['strategy']}; shapes {ours['shapes']}; "
        f"{flops['total'] / 1e9:.2f} GFLOP per seed-step at "
        f"{ours['steady_shape'][0]} nodes x {ours['steady_shape'][1]} steps "
        f"({flops['matmul'] / flops['total']:.0%} in matmuls): "
        f"{ours['steady_gflops_per_s']:.1f} GFLOP/s steady, "
        f"{ours['run_gflops_per_s']:.1f} over the run; matmul roof "
        f"{ours['matmul_roof_gflops_per_s']:.1f} GFLOP/s, so "
        f"{ours['steady_gflops_per_s'] / ours['matmul_roof_gflops_per_s']:.0%} "
        "of it steady",
        flush=True,
    )
    measured = min(args.dm_clrs_seeds or args.seeds, args.seeds)
    theirs = _in_child(
        "dm_clrs",
        [*child_argv, "--seeds", str(measured)],  # the last --seeds wins
    )
    theirs["seeds_measured"] = measured
    if measured < args.seeds:
        theirs["seconds_measured"] = theirs["seconds"]
        theirs["seconds"] *= args.seeds / measured
        print(f"          dm-clrs timed on {measured} of {args.seeds} seeds, scaled")
    _describe("dm-clrs", theirs, work)
    ratio = theirs["seconds"] / ours["seconds"]
    steady_ratio = theirs["steady_seed_step_seconds"] / ours["steady_seed_step_seconds"]
    print(
        f"ratio   : {ratio:.2f}x (nar_gap throughput / dm-clrs throughput, compiles "
        f"included); steady state per seed-step {steady_ratio:.2f}x"
    )
    if args.json:
        payload = {
            "args": vars(args),
            "nar_gap": ours,
            "dm_clrs": theirs,
            "ratio": ratio,
            "steady_ratio": steady_ratio,
            "machine": platform.platform(),
            "cpu_count": os.cpu_count(),
            "devices": [str(d) for d in jax.devices()],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
