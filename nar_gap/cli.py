"""The ``nar-gap`` command line (also ``python -m nar_gap``).

Subcommands:

* ``nar-gap train ALGO --seeds K --steps S --out DIR [options]``: train K seeds
  together; writes per-seed checkpoints, ``metrics.csv`` and ``metrics.json``.
  Re-running the same command resumes an interrupted run.
* ``nar-gap info``: versions and devices.

Bad input (unknown algorithm, nonsense sizes, an unwritable output directory,
a corrupt checkpoint) gives a one-line ``nar-gap: error: ...`` on stderr and
exit code 2; no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

EXIT_USAGE = 2


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


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nar-gap",
        description="Neural compilation of graph algorithms into GATv2, and the "
        "mechanistic gap to trained models.",
    )
    commands = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser
    )

    train = commands.add_parser(
        "train",
        help="train GATv2 models on CLRS data, many seeds at once",
        description="Train K seeds of the CLRS GATv2 together (one vmapped step). "
        "Defaults are the paper's: hidden 128, 1 head, batch 32, lengths 4-16, "
        "Adam 1e-3, clipping 1.0, 10000 steps.",
    )
    train.add_argument("algorithm", help="bfs, bfs_seq, bellman_ford, dfs or dfs_light")
    train.add_argument(
        "--seeds", type=_positive, default=1, help="number of seeds (default 1)"
    )
    train.add_argument(
        "--first-seed", type=_non_negative, default=0, help="seeds are FIRST..FIRST+K-1"
    )
    train.add_argument("--steps", type=_non_negative, default=10_000)
    train.add_argument(
        "--out", required=True, help="run directory (resumed if it exists)"
    )
    train.add_argument("--hidden-size", type=_positive, default=128)
    train.add_argument("--heads", type=_positive, default=1)
    train.add_argument("--batch-size", type=_positive, default=32)
    train.add_argument("--learning-rate", type=float, default=1e-3)
    train.add_argument("--grad-clip", type=float, default=1.0)
    train.add_argument(
        "--l1", type=float, default=0.0, help="L1 penalty weight (paper: 1e-4)"
    )
    train.add_argument(
        "--hint-mode",
        choices=("encoded_decoded", "decoded_only", "none"),
        default="encoded_decoded",
    )
    train.add_argument(
        "--hint-repred-mode", choices=("soft", "hard", "hard_on_eval"), default="soft"
    )
    train.add_argument(
        "--use-edge-info", action="store_true", help="paper: edge values"
    )
    train.add_argument(
        "--use-pre-att-bias", action="store_true", help="paper: N x N bias"
    )
    train.add_argument("--no-layer-norm", action="store_true")
    train.add_argument(
        "--lengths",
        type=_positive,
        nargs="+",
        default=[4, 7, 11, 13, 16],
        help="train sizes",
    )
    train.add_argument("--eval-every", type=_non_negative, default=500)
    train.add_argument("--checkpoint-every", type=_non_negative, default=500)
    train.add_argument(
        "--test-size", type=_positive, default=64, help="test graph size"
    )
    train.add_argument("--quiet", action="store_true", help="no progress bar")

    commands.add_parser("info", help="versions and devices")
    return parser


def _train(args: argparse.Namespace) -> int:
    from nar_gap.network import NetworkConfig
    from nar_gap.train import TrainConfig, bucket_nodes, train

    buckets = TrainConfig.__dataclass_fields__["node_buckets"].default

    network = NetworkConfig(
        algorithm=args.algorithm,
        hidden_size=args.hidden_size,
        num_heads=args.heads,
        use_ln=not args.no_layer_norm,
        hint_mode=args.hint_mode,
        hint_repred_mode=args.hint_repred_mode,
        use_edge_info=args.use_edge_info,
        use_pre_att_bias=args.use_pre_att_bias,
        pre_att_bias_nodes=bucket_nodes(max(args.lengths), buckets),
    )
    config = TrainConfig(
        network=network,
        seeds=tuple(range(args.first_seed, args.first_seed + args.seeds)),
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        grad_clip_norm=args.grad_clip,
        l1_weight=args.l1,
        train_lengths=tuple(args.lengths),
        eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every,
        test_num_nodes=args.test_size,
    )
    result = train(config, args.out, progress=not args.quiet)
    print(f"{'seed':>6} {'test score':>11} {'best val':>9} {'at step':>8}")
    for row in result.metrics:
        print(
            f"{row['seed']:>6} {row['test_score']:>11.4f} {row['best_val_score']:>9.4f} "
            f"{row['best_val_step']:>8}"
        )
    print(f"wrote {args.out}/metrics.csv, metrics.json and seed_*/ checkpoints")
    return 0


def _info() -> int:
    from nar_gap import __version__
    from nar_gap.train import versions

    print(f"nar_gap {__version__}")
    for name, version in versions().items():
        print(f"  {name}: {version}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = _build_parser().parse_args(argv)
    try:
        if args.command == "train":
            return _train(args)
        return _info()
    except KeyboardInterrupt:
        print("nar-gap: interrupted; finished checkpoints are kept", file=sys.stderr)
        return 130
    except (ValueError, OSError) as error:
        # Our own errors (UnknownAlgorithmError, CheckpointError, GraphInputError,
        # invalid configs) are ValueErrors; OutputError and permission problems
        # are OSErrors.  Anything else is a bug and keeps its traceback.
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"nar-gap: error: {message}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
