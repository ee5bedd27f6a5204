"""The ``nar-gap`` command line (also ``python -m nar_gap``).

Subcommands:

* ``nar-gap train ALGO --seeds 0 1 ... --steps S --out DIR [options]``: train
  the seeds together, every ``TrainConfig`` and ``NetworkConfig`` field a flag
  of its own name (:mod:`nar_gap.cli_flags`); writes per-seed checkpoints,
  ``metrics.csv`` and ``metrics.json``.
  Re-running the same command resumes an interrupted run.  With
  ``--coordinator HOST:PORT --num-processes P --process-id I`` on each of P
  processes, they share the seeds (:mod:`nar_gap.training.hosts`).
* ``nar-gap compile ALGO -o FILE [--hidden-size H] [options]``:
  compile a graph program (``bfs``, ``bellman_ford``) into GATv2 parameters
  (at the smallest width that fits, as ``nar-gap run`` does, unless
  ``--hidden-size`` asks for another) and save them; prints
  ``{"algorithm", "hidden_size", "parameters", "file"}`` as JSON.
* ``nar-gap run ALGO --graph FILE --source S [--params FILE] [--check]
  [--attention] [--max-memory M]``: run a compiled model (loaded from
  ``--params``, or compiled on the spot at the minimal size) on a graph file
  (see :mod:`nar_gap.tasks.graphs`) and print its outputs and hints as JSON.
  With ``--check`` the JSON says whether it matches dm-clrs exactly, lists
  near-ties (choices dm-clrs made by a score gap below the model's
  resolution, each with its gap: see :mod:`nar_gap.compiler.ties`), and the
  exit code is 1 on any other mismatch.  A run estimated to need more memory
  than is available (or than ``--max-memory``) is refused before it starts
  (:mod:`nar_gap.compiler.memory`).
* ``nar-gap plan [--profile P] [--notebook NN ...] [--target T] [--json]``: per
  notebook, the seed-steps, compiled programs, peak memory from XLA's
  analysis and a time estimate measured on this device, or priced on an
  accelerator (``--target h100``); and the rows the cpu run left undecided
  against the profile's sizes (:mod:`nar_gap.paper.tools.plan`).
* ``nar-gap info``: versions, devices, the commit and the backend self-check
  (:mod:`nar_gap.system.backend_check`); exit code 1 if the self-check fails.

Bad input (unknown algorithm, nonsense sizes, an unwritable output directory,
a corrupt checkpoint or compiled-model file, a malformed graph file, a graph
the compiled model cannot run) gives a one-line ``nar-gap: error: ...`` on
stderr and exit code 2; no traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nar_gap.system import collector

RUN_ALGORITHMS_HELP = "bfs, bellman_ford, dfs or dfs_reverse"
"""The compiled programs ``nar-gap run`` takes (programs.registry.PROGRAMS;
spelled here so that ``--help`` imports no program; a test keeps them equal)."""

EXIT_USAGE = 2
EXIT_MISMATCH = 1  # ``run --check``: the model's trace differs from dm-clrs's
EXIT_UNTRUSTED = 1  # ``info``: the backend self-check failed
EXIT_CUT = 143  # ``job``: stopped by SIGTERM (128 + 15), as a shell reports it


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (and still exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _int_at_least(minimum: int, what: str):
    """An argparse type: an integer >= ``minimum``, else a one-line error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


_positive = _int_at_least(1, "a positive integer")
_non_negative = _int_at_least(0, "an integer >= 0")


def _default(config_class: type, name: str) -> Any:
    """A configuration field's default: the CLI states no default of its own."""
    return {f.name: f.default for f in dataclasses.fields(config_class)}[name]


def _add_process_arguments(train: argparse.ArgumentParser) -> None:
    """The progress bar, and the processes that share the seeds."""
    train.add_argument("--quiet", action="store_true", help="no progress bar")
    train.add_argument(
        "--coordinator",
        help="several processes (one per machine): process 0's HOST:PORT; "
        "default $NAR_GAP_COORDINATOR",
    )
    train.add_argument(
        "--num-processes",
        type=_positive,
        help="processes sharing the seeds; default $NAR_GAP_NUM_PROCESSES",
    )
    train.add_argument(
        "--process-id",
        type=_non_negative,
        help="this process, 0..P-1 (0 writes the run's tables); "
        "default $NAR_GAP_PROCESS_ID",
    )


# Worked out from the training sizes unless given: the node bucket of the
# largest of --train-lengths (the fork's size-locked edge map only).
_DERIVED_NETWORK_FIELDS = {
    "pre_att_bias_nodes": "the node bucket of the largest --train-lengths",
    "fork_num_nodes": "with --edge-map fork, the node bucket of the largest "
    "--train-lengths",
}


def _add_train_parser(commands: Any) -> None:
    from nar_gap.cli_flags import add_config_flags
    from nar_gap.model.config import NetworkConfig
    from nar_gap.tasks.vocabulary import ALGORITHMS
    from nar_gap.training.config import TrainConfig

    train = commands.add_parser(
        "train",
        help="train GATv2 models on CLRS data, many seeds at once",
        description="Train the seeds of the CLRS GATv2 together (one jitted step). "
        "Every TrainConfig and NetworkConfig field is the flag of its name, with "
        "its default (the paper's) and its documentation.",
    )
    train.add_argument("algorithm", help=", ".join(ALGORITHMS))
    train.add_argument(
        "--out", required=True, help="run directory (resumed if it exists)"
    )
    add_config_flags(train, TrainConfig, skip=("network",))
    add_config_flags(
        train, NetworkConfig, skip=("algorithm",), derived=_DERIVED_NETWORK_FIELDS
    )
    _add_process_arguments(train)


def _add_compile_parser(commands: Any) -> None:
    from nar_gap.compiler.config import DEFAULT_HIDDEN_SIZE, CompilerConfig

    compiler = functools.partial(_default, CompilerConfig)
    compile_ = commands.add_parser(
        "compile",
        help="compile a graph program into GATv2 parameters and save them",
        description="Compile ALGO's graph program into the parameters of a GATv2 "
        "network and save them (nar_gap.compiler.save_compiled). Prints "
        '{"algorithm", "hidden_size", "parameters", "file"} as JSON.',
    )
    compile_.add_argument("algorithm", help="bfs or bellman_ford")
    compile_.add_argument(
        "--hidden-size",
        type=_positive,
        default=None,
        help="hidden size D (default: the smallest that fits, as nar-gap run "
        f"compiles; {DEFAULT_HIDDEN_SIZE} is the CLRS benchmark's, for comparing "
        "with trained networks)",
    )
    compile_.add_argument(
        "-o", "--output", required=True, help="the compiled-model file to write"
    )
    compile_.add_argument(
        "--max-weight",
        type=float,
        help="edge-weight range the constants are set for (default "
        f"{compiler('max_weight'):g}); a graph beyond it is compiled again for "
        "its own range when run",
    )
    compile_.add_argument(
        "--max-distance",
        type=float,
        help="shortest-distance range the constants are set for (bellman_ford; "
        f"default {compiler('max_distance'):g}); wider ranges cost resolution",
    )
    compile_.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        help="the float the compiled network runs in (default float32; float64 "
        "decides about 11x smaller distance gaps and keeps distances to 1e-16)",
    )
    compile_.add_argument(
        "--pre-att-bias-nodes",
        type=_positive,
        help="the paper's N x N pre-attention-bias variant for graphs up to N "
        "nodes (bfs and bellman_ford)",
    )


def _add_run_parser(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="run a compiled model on a graph file",
        description="Run a compiled model on one graph (an edge-list file, see "
        "nar_gap.tasks.graphs), from a source node for bfs and bellman_ford; "
        "prints outputs and hints as JSON. The model is --params if given, else "
        "ALGO compiled on the spot (dfs: for the graph's size).",
    )
    run.add_argument("algorithm", help=RUN_ALGORITHMS_HELP)
    run.add_argument(
        "--graph",
        required=True,
        help="edge-list file: lines 'u v [w]' (undirected), 'u -> v [w]' "
        "(directed, for dfs), 'nodes N'",
    )
    run.add_argument(
        "--source",
        type=int,
        help="the source node (bfs and bellman_ford; dfs takes none)",
    )
    run.add_argument("--params", help="a compiled-model file (from 'nar-gap compile')")
    run.add_argument(
        "--check",
        action="store_true",
        help="compare with dm-clrs; exit code 1 on any mismatch",
    )
    run.add_argument(
        "--hidden-size",
        type=_positive,
        default=None,
        help="hidden size when compiling on the spot (default: the minimal one)",
    )
    run.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        help="the float to run in when compiling on the spot (default float32); "
        "with --params it must be the file's",
    )
    run.add_argument(
        "--attention", action="store_true", help="include every step's attention"
    )
    run.add_argument(
        "--max-memory",
        type=_memory_size,
        help="refuse a run estimated to need more (bytes, or e.g. 8G, 512M); "
        "default: the memory available now",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nar-gap",
        description="Neural compilation of graph algorithms into GATv2, and the "
        "mechanistic gap to trained models.",
    )
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser
    )
    _add_train_parser(commands)
    _add_compile_parser(commands)
    _add_run_parser(commands)
    _add_plan_parser(commands)
    _add_job_parser(commands)
    render = commands.add_parser(
        "render",
        help="the results section of docs/results.md and README.md, from results/",
        description="Print the results section rendered from a results folder's "
        "tables, or, with --write, render it into each file between its markers "
        "(./run_all.sh does this after a cpu run).",
    )
    render.add_argument("results", nargs="?", default="results")
    render.add_argument(
        "--write",
        metavar="PATH",
        action="append",
        default=[],
        help="render into PATH between its markers (docs/results.md, README.md)",
    )
    commands.add_parser(
        "info", help="versions, devices and the backend self-check (known XLA bugs)"
    )
    check = commands.add_parser(
        "check-install",
        help="run every layer once, small and timed: does nar_gap work here?",
        description="The backend self-check, sampling every algorithm, the "
        "compiled BFS, Bellman-Ford and DFS against dm-clrs, a 20-step training "
        "run and its faithfulness: each stage's time, or one line at the first "
        "failure (exit 1). Run it on a new machine, a GPU node, or after "
        "installing the offline bundle.",
    )
    check.add_argument(
        "--out",
        default="nar_gap_check",
        help="folder for the check's run and check-install.json "
        "(default ./nar_gap_check)",
    )
    return parser


def _add_plan_parser(commands: Any) -> None:
    plan = commands.add_parser(
        "plan",
        help="before a run: seed-steps, programs, memory and time per notebook",
        description="Per notebook of a profile: the seed-steps it trains, the "
        "programs it compiles, the peak memory of each from XLA's own analysis, "
        "whether that fits this device (and how many seeds do), and the time "
        "from a short measured run here.",
    )
    plan.add_argument("--profile", default="cpu", help="smoke, cpu, gpu or paper")
    plan.add_argument(
        "--notebook", nargs="+", default=None, help="notebook numbers, e.g. 02 04"
    )
    plan.add_argument(
        "--target",
        default=None,
        help="price the time on this accelerator instead of measuring it here "
        "(h100): FLOPs at a stated utilisation, plus a stated time per compile",
    )
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument(
        "--no-time", action="store_true", help="memory only: run no measured steps"
    )


def _add_job_parser(commands: Any) -> None:
    job = commands.add_parser(
        "job",
        help="a profile's notebooks as one job, without Jupyter: an offline GPU node",
        description="Run the notebooks of a profile (its own list, or --only) as "
        "scripts: the parameters cell with the profile and folders, then every "
        "code cell but the teaching ones, in order. Finished notebooks are "
        "skipped on a rerun (--force runs them again) and training resumes. "
        "Writes job.json beside the tables (device, versions, precision, the "
        "time of each notebook, peak memory) and, with --archive, one .tar.gz "
        "of the tables, arrays and figures (at most 16 MiB) for "
        "./run_all.sh --results-from.",
    )
    job.add_argument("--profile", default="gpu", help="smoke, cpu, gpu or paper")
    job.add_argument("--only", nargs="+", default=(), help="notebook numbers, e.g. 02")
    job.add_argument(
        "--out", default="", help="tables to OUT/results, figures to OUT/figures"
    )
    job.add_argument(
        "--runs", default="", help="training runs (default build/runs/<profile>)"
    )
    job.add_argument("--archive", default="", help="write the archive here (.tar.gz)")
    job.add_argument("--force", action="store_true", help="rerun finished notebooks")
    job.add_argument(
        "--unpack",
        default="",
        metavar="ARCHIVE",
        help="run nothing: put a job's archive into the profile's folders "
        "(what ./run_all.sh --results-from does first)",
    )


def _job(args: argparse.Namespace) -> int:
    from nar_gap.paper.experiments import profiles
    from nar_gap.paper.tools import job

    out = Path(args.out) if args.out else None
    dirs = profiles.output_dirs(
        args.profile,
        args.runs,
        str(out / "results") if out else "",
        str(out / "figures") if out else "",
    )
    if args.unpack:
        unpacked = job.unpack_archive(Path(args.unpack), dirs)
        print(
            f"nar_gap job: {len(unpacked)} files from {args.unpack} into {dirs.results}"
        )
        return 0
    try:
        written = job.run_job(args.profile, dirs, args.only, force=args.force)
    except job.JobCut as cut:
        if args.archive:  # what finished comes back even from a cut job
            _write_job_archive(dirs, Path(args.archive))
        print(f"nar-gap: job cut: {cut}", file=sys.stderr)
        return EXIT_CUT
    print(f"nar_gap job: {written}")
    if args.archive:
        _write_job_archive(dirs, Path(args.archive))
    return 0


def _write_job_archive(dirs, path: Path) -> None:  # noqa: ANN001 (lazy import)
    from nar_gap.paper.tools import job

    archive = job.write_archive(dirs, path)
    size = archive.stat().st_size / 2**20
    print(f"nar_gap job: {archive} ({size:.1f} MiB)", flush=True)


def _plan(args: argparse.Namespace) -> int:
    import os

    import jax

    from nar_gap.paper.experiments import profiles
    from nar_gap.paper.tools import plan

    profile = profiles.get(args.profile)  # an unknown name: one-line error
    device = plan.target(args.target) if args.target else None
    # Compiling is most of a plan's time (a hidden-128 program: 15-36 s on 2
    # CPU cores), so its programs go to the compilation cache run_all.sh
    # uses: a second plan, or a plan after a run, finds them there.
    cache = profiles.checkout_root() / "build" / "jax-cache"
    jax.config.update(
        "jax_compilation_cache_dir",
        os.environ.get("JAX_COMPILATION_CACHE_DIR", str(cache)),
    )
    result = plan.make_plan(
        profile,
        args.notebook,
        timed=not args.no_time,
        progress=not args.json,
        device=device,
    )
    print(json.dumps(result.to_dict()) if args.json else plan.render(result))
    return 0


def _train(args: argparse.Namespace) -> int:
    from nar_gap.cli_flags import config_values
    from nar_gap.model.config import SIZE_LOCKED_EDGE_MAPS, NetworkConfig
    from nar_gap.tasks.buckets import bucket_nodes
    from nar_gap.training import TrainConfig, hosts, train
    from nar_gap.training.run_dir import METRICS_FILE, METRICS_TABLE

    # Before anything starts JAX's backend: jax.distributed's rule.
    hosts.initialize(
        hosts.hosts_from(args.coordinator, args.num_processes, args.process_id)
    )
    nodes = bucket_nodes(max(args.train_lengths), tuple(args.node_buckets))
    derived = {"pre_att_bias_nodes": nodes}
    if args.use_edge_info and args.edge_map in SIZE_LOCKED_EDGE_MAPS:
        derived["fork_num_nodes"] = nodes
    network = NetworkConfig(
        algorithm=args.algorithm,
        **{**derived, **config_values(args, NetworkConfig, skip=("algorithm",))},
    )
    config = TrainConfig(
        network=network, **config_values(args, TrainConfig, skip=("network",))
    )
    result = train(config, args.out, progress=not args.quiet)
    if args.quiet and result.plan is not None:
        print(f"nar_gap: {args.out}: {result.plan.describe()}")
    print(f"{'seed':>6} {'test score':>11} {'best val':>9} {'at step':>8}")
    for row in result.metrics:
        score, best = row["test_score"], row["best_val_score"]
        print(f"{row['seed']:>6} {score:>11.4f} {best:>9.4f} {row['selected_step']:>8}")
    print(f"wrote {args.out}/{METRICS_TABLE}, {METRICS_FILE} and seed_*/ checkpoints")
    return 0


def _compile_model(algorithm: str, hidden_size: int | None, **options: Any):
    """``nar_gap.compiler.compiling``, with a CompileError's problems on one line."""
    from nar_gap.compiler import CompileError
    from nar_gap.compiler import compile as compile_algorithm

    try:
        return compile_algorithm(algorithm, hidden_size, **options)
    except CompileError as error:
        headline = str(error).splitlines()[0]
        problems = "; ".join(str(problem) for problem in error.problems)
        raise ValueError(f"{headline} {problems}") from None


def _compile(args: argparse.Namespace) -> int:
    import jax
    import numpy as np

    from nar_gap.compiler import save_compiled

    options = {
        name: value
        for name, value in (
            ("max_weight", args.max_weight),
            ("max_distance", args.max_distance),
            ("pre_att_bias_nodes", args.pre_att_bias_nodes),
            ("dtype", args.dtype),
        )
        if value is not None
    }
    # None: the smallest width that fits, the default of nar-gap run too
    model = _compile_model(args.algorithm, args.hidden_size, **options)
    path = save_compiled(model, args.output)
    parameters = sum(int(np.size(leaf)) for leaf in jax.tree.leaves(model.params))
    summary = {
        "algorithm": model.program.name,
        "hidden_size": model.layout.hidden_size,
        "parameters": parameters,
        "file": str(path),
    }
    print(json.dumps(summary))
    return 0


def _load_model(args: argparse.Namespace):
    """The model ``run`` uses: ``--params`` checked against ALGO, else compiled."""
    from nar_gap.compiler import load_compiled

    if args.params is None:
        options = {} if args.dtype is None else {"dtype": args.dtype}
        return _compile_model(args.algorithm, args.hidden_size, **options)
    model = load_compiled(args.params)
    if args.dtype is not None and args.dtype != model.dtype:
        raise ValueError(
            f"compiled-model file {args.params} runs in {model.dtype}, not "
            f"--dtype {args.dtype}; compile it again with --dtype {args.dtype}"
        )
    if model.program.name != args.algorithm:
        raise ValueError(
            f"compiled-model file {args.params} holds {model.program.name!r}, "
            f"not {args.algorithm!r}"
        )
    if args.hidden_size is not None and args.hidden_size != model.layout.hidden_size:
        raise ValueError(
            f"compiled-model file {args.params} has hidden size "
            f"{model.layout.hidden_size}, not --hidden-size {args.hidden_size}"
        )
    return model


def _as_json(values: Any, typ: str) -> list:
    """A probe's values as nested lists: pointers and masks int, the rest float."""
    import numpy as np

    if typ == "pointer" or typ.startswith("mask"):
        return np.asarray(values).astype(np.int64).tolist()
    return np.asarray(values, dtype=np.float64).tolist()


def _memory_size(text: str) -> int:
    from nar_gap.compiler.memory import parse_memory

    try:
        return parse_memory(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _run_within_memory(model: Any, weights: Any, args: argparse.Namespace) -> Any:
    """``model.run``, refused before it starts if it would not fit in memory.

    Twice, each with the JSON this command prints: what is known of the run
    before dm-clrs's trace is made (one step; DFS: its whole trace), then,
    with that trace, the whole run before the network starts.
    """
    from nar_gap.compiler.compiled_model import trace_steps
    from nar_gap.compiler.memory import check_fits, steps_before_trace

    num_nodes = int(weights.shape[0])
    known = steps_before_trace(model.program.algorithm, num_nodes)
    needed = model.memory_needed(num_nodes, known, args.attention, as_json=True)
    check_fits(needed, args.max_memory)
    batch = model.graph_batch(weights, args.source)
    model = model.fitted(batch)
    needed = model.memory_needed(
        num_nodes, trace_steps(batch), args.attention, as_json=True
    )
    check_fits(needed, args.max_memory)
    return model.run_batch(batch, args.attention, args.max_memory)


def _run(args: argparse.Namespace) -> int:
    from nar_gap.programs.registry import get_program
    from nar_gap.tasks.graphs import read_edge_list
    from nar_gap.tasks.specs import get_spec

    get_program(args.algorithm)  # an unknown name fails before any file is read
    weights = read_edge_list(args.graph)
    model = _load_model(args)
    result = _run_within_memory(model, weights, args)
    spec = get_spec(model.program.algorithm)
    report: dict[str, Any] = {
        "algorithm": model.program.name,
        "num_nodes": int(weights.shape[0]),
        "source": args.source,
        "outputs": {n: _as_json(v, spec[n][2]) for n, v in result.outputs.items()},
        "hints": {n: _as_json(v, spec[n][2]) for n, v in result.hints.items()},
    }
    if args.attention:
        report["attention"] = _as_json(result.attention, "scalar")
    if args.check:
        report["exact"] = not result.mismatches
        report["mismatches"] = [str(m) for m in result.mismatches]
        report["ties"] = [str(t) for t in result.ties]
        report["constants"] = {
            "dtype": result.compiler_config.dtype,
            "max_weight": result.compiler_config.max_weight,
            "max_distance": result.compiler_config.max_distance,
            "resolution": result.resolution,
        }
    print(json.dumps(report))
    if args.check and result.mismatches:
        count = len(result.mismatches)
        print(
            f"nar-gap: {count} mismatch{'es' if count > 1 else ''} with dm-clrs; "
            f"first: {result.mismatches[0]}",
            file=sys.stderr,
        )
        return EXIT_MISMATCH
    return 0


def _info() -> int:
    """Versions, devices, the commit, and the backend self-check's verdict.

    Exit code 1 when the self-check fails: this JAX computes wrong numbers.
    A run expected on an NVIDIA GPU that JAX runs on the CPU is one warning
    line on stderr (:mod:`nar_gap.system.accelerator`).
    """
    import os

    from nar_gap.system import accelerator, backend_check, provenance

    expected = accelerator.expected_accelerator(os.environ)
    print("nar_gap: versions")
    for name, version in provenance.versions().items():
        print(f"  {name}: {version}")
    git = provenance.git_state()
    if git["commit"] is not None:
        dirty = " (with uncommitted changes)" if git["dirty"] else ""
        print(f"  commit: {git['commit']}{dirty}")
    found = provenance.backend()
    print(f"nar_gap: JAX devices (default backend: {found['platform']})")
    for line in accelerator.describe_devices(found["devices"]):
        print(f"  {line}")
    warning = accelerator.accelerator_warning(expected, found["platform"])
    if warning is not None:
        print(warning, file=sys.stderr)
    verdict = backend_check.self_check(crash_checks=True)
    print(f"nar_gap: {verdict.message}")
    for check in verdict.checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"  {mark} {check.name} ({check.upstream}): {check.detail}")
    return 0 if verdict.ok else EXIT_UNTRUSTED


def _render(args: argparse.Namespace) -> int:
    from nar_gap.paper.report import readme_results

    for path in args.write:
        readme_results.write_rendered(path, args.results)
    if not args.write:
        print(readme_results.render(args.results))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    collector.collect_less_often()  # tracing's garbage: system/collector.py
    try:
        parser = _build_parser()  # reads the configs' defaults: loads dm-clrs
    except ImportError as error:  # dm-clrs, or a package it needs, is missing
        print(f"nar-gap: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return EXIT_USAGE
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help()  # bare `nar-gap`: the commands, not an error
        return 0
    args = parser.parse_args(argv)
    try:
        if args.command == "train":
            return _train(args)
        if args.command == "compile":
            return _compile(args)
        if args.command == "run":
            return _run(args)
        if args.command == "plan":
            return _plan(args)
        if args.command == "job":
            return _job(args)
        if args.command == "render":
            return _render(args)
        if args.command == "check-install":
            from nar_gap.paper.tools.install_check import main as check_install

            return check_install(args.out)
        return _info()
    except KeyboardInterrupt:
        print("nar-gap: interrupted; finished checkpoints are kept", file=sys.stderr)
        return 130
    except (ValueError, OSError) as error:
        # Our own errors (UnknownAlgorithmError, CheckpointError, GraphInputError,
        # GraphFileError, CompiledFileError, invalid configs) are ValueErrors;
        # OutputError and permission problems are OSErrors.  Anything else is a
        # bug and keeps its traceback.
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"nar-gap: error: {message}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
