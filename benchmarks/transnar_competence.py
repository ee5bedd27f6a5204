r"""How long must notebook 08's Transformer train before it is competent?

TransNAR's claims compare models that first solve the task where they were
trained; the paper-vs-ours rows of notebook 08 are "not testable" below an
in-distribution CLRS score of 0.9 (``rules.COMPETENT_CLRS``).  This script
trains one seed of the Transformer alone on the labelled CLRS-Text of
notebook 08 (``label_range``: nodes named by labels drawn below the largest
size scored) and scores it every ``--every`` steps, in distribution and at
the larger sizes, on the evaluation graphs the notebook uses.  It prints one
JSON line per checkpoint and writes them, with the machine, to ``--out``:
the learning curve a profile's ``steps`` is chosen from, and the seconds per
step that price it.

The training is :func:`nar_gap.paper.transnar.training.train_text_model`
with ``stop_at`` (resumed bit for bit), so the curve is that of one run of
``--steps`` steps: the learning-rate schedule is the full run's throughout.
Times are wall-clock on this machine, other work included; say what else ran.

``--denser 2,4`` scores the training sizes again with positions drawn below
a half and a quarter of ``max_position``: as densely as a sequence 2 and 4
times longer has them, so a score that falls there was learned from how far
apart the positions lie, not from their order.  ``--windows`` trains on
positions drawn from random windows, every density
(:func:`nar_gap.paper.transnar.model.random_positions`).

``--nar compiled`` or ``--nar trained`` trains a hybrid instead of the
Transformer alone: reading the compiled NAR (notebook 08's
``transnar_compiled``), or notebook 02's baseline of the same seed
(``transnar_trained``: read from ``--nar-runs``, ``build/runs/<profile>``
by default, and trained there first if absent).  A hybrid's rows also say,
per size and layer, what the answer's tokens read (``reads``:
:func:`nar_gap.paper.transnar.evaluation.cross_attention_reads`, against
``chance``).

``--positions`` swaps TransNAR's randomised positions for a control
(:data:`nar_gap.paper.transnar.model.POSITION_SCHEMES`): the indices
``0 .. L-1``, or no encoding; ``--encoding rotary`` rotates queries and
keys by the positions (RoPE) instead of adding them to the embedding
(``sinusoidal_rotary``: both; ``--min-wavelength 1024`` keeps only the
sinusoidal frequencies that slow); ``--index-names`` trains and scores on
dm-clrs's own text (nodes named by index, no labels).  So one curve per
choice says what each costs in training, on the same graphs.  Every file
also holds, per size, the CLRS score of two rules on those graphs
(``rules``: :func:`nar_gap.paper.transnar.scores.rule_scores`), what a
score is read against.

    .venv/bin/python benchmarks/transnar_competence.py   # the cpu Transformer
    .venv/bin/python benchmarks/transnar_competence.py --width 128 --layers 4 \
        --steps 12000 --every 1000 --out FILE.json
    .venv/bin/python benchmarks/transnar_competence.py --steps 12000 \
        --every 2000 --denser 2,4 [--windows] --out FILE.json
    .venv/bin/python benchmarks/transnar_competence.py --steps 6000 \
        --every 1000 --positions indices [--index-names] --out FILE.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from nar_gap.paper.transnar.model import ENCODINGS, POSITION_SCHEMES


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", default="bfs", choices=("bfs", "bellman_ford"))
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument(
        "--until",
        type=int,
        default=0,
        help="stop measuring after this step (0: --steps)",
    )
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--graphs", type=int, default=32, help="graphs per size")
    parser.add_argument("--profile", default="cpu", help="sizes and label range")
    parser.add_argument(
        "--windows",
        action="store_true",
        help="train on positions drawn from random windows (every density)",
    )
    parser.add_argument(
        "--nar",
        default="none",
        choices=("none", "trained", "compiled"),
        help="the Transformer alone, or the hybrid reading this NAR",
    )
    parser.add_argument(
        "--nar-runs",
        default="",
        help="notebook 02's runs, for --nar trained ('': build/runs/<profile>)",
    )
    parser.add_argument(
        "--positions",
        default="randomised",
        choices=POSITION_SCHEMES,
        help="how positions are drawn and encoded (randomised: TransNAR's)",
    )
    parser.add_argument(
        "--encoding",
        default="sinusoidal",
        choices=ENCODINGS,
        help="how positions enter: added to the embedding, rotating "
        "queries and keys (RoPE), or both",
    )
    parser.add_argument(
        "--min-wavelength",
        type=int,
        default=0,
        help="keep only the sinusoidal frequencies this slow (0: all)",
    )
    parser.add_argument(
        "--index-names",
        action="store_true",
        help="dm-clrs's text: nodes named by index, no labels",
    )
    parser.add_argument(
        "--denser",
        default="",
        help="also score the training sizes with positions this many times "
        "denser, e.g. '2,4' (what a longer sequence's positions look like)",
    )
    parser.add_argument("--runs", default="", help="run folder ('': a temporary one)")
    parser.add_argument("--out", default="", help="JSON file to write ('': none)")
    return parser.parse_args(argv)


def _machine() -> dict[str, Any]:
    import jax

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "jax": jax.__version__,
        "device": str(jax.devices()[0]),
    }


def _scored(scored: Any) -> dict[str, Any]:
    """TransNAR's mean scores, and how long the answers' lists are.

    ``closed``: the share of answers whose list closes (within the decoding
    budget, 5 tokens past the longest true answer); ``length_error``: the
    mean absolute difference between items listed and nodes, over those
    (None if none closes).
    """
    import numpy as np

    from nar_gap.paper.transnar.scores import listed_length

    row = {k: round(float(v.mean()), 3) for k, v in scored.scores.items()}
    lengths = [listed_length(text) for text in scored.generated]
    closed = [abs(k - scored.num_nodes) for k in lengths if k is not None]
    row["closed"] = round(len(closed) / len(lengths), 3)
    row["length_error"] = round(float(np.mean(closed)), 3) if closed else None
    return row


def _nar(args: argparse.Namespace, profile: Any) -> Any:
    """The frozen NAR ``--nar`` names (None: the Transformer alone)."""
    from nar_gap.paper.experiments import transnar
    from nar_gap.paper.experiments.profiles import OutputDirs

    runs = Path(args.nar_runs or Path("build") / "runs" / profile.name)
    dirs = OutputDirs(runs=runs, results=runs, figures=runs)  # only runs is read
    return transnar.frozen_nar(profile, dirs, args.algorithm, args.nar, args.seed)


def measure(
    args: argparse.Namespace, runs: Path, out: Path | None = None
) -> dict[str, Any]:
    """The learning curve of one seed: a row per checkpoint.

    With ``out``, the curve so far is written there after every checkpoint,
    so a run cut by a time limit keeps the rows it finished.
    """
    from nar_gap.paper.experiments import profiles, transnar
    from nar_gap.paper.transnar.evaluation import (
        cross_attention_reads,
        evaluation_texts,
        score_size,
    )
    from nar_gap.paper.transnar.nar import embedder
    from nar_gap.paper.transnar.scores import rule_scores
    from nar_gap.paper.transnar.training import train_text_model
    from nar_gap.system import files

    profile = profiles.get(args.profile)
    sizes = dataclasses.replace(
        transnar.sizes_for(profile),
        width=args.width,
        layers=args.layers,
        heads=args.heads,
    )
    label_range = None if args.index_names else sizes.label_range
    # notebook 08's training of the Transformer alone or of the compiled
    # hybrid (its text, sizes and labels), with this run's architecture,
    # length and optimiser
    width = transnar.nar_width(profile, args.algorithm, args.nar)
    config = dataclasses.replace(
        transnar.text_train_config(profile, args.algorithm, args.nar, args.seed),
        model=dataclasses.replace(
            sizes.model_config(width),
            positions=args.positions,
            encoding=args.encoding,
            min_wavelength=args.min_wavelength,
        ),
        steps=args.steps,
        batch_size=args.batch_size,
        checkpoint_every=args.every,
        learning_rate=args.learning_rate,
        position_windows=args.windows,
        label_range=label_range,
    )
    embed = embedder(_nar(args, profile))
    denser = [int(f) for f in args.denser.split(",") if f]
    texts = {
        n: evaluation_texts(args.algorithm, n, args.graphs, label_range)
        for n in sizes.test_sizes
    }
    rules = {
        str(n): {k: round(v, 3) for k, v in rule_scores(batch.graphs).items()}
        for n, batch in texts.items()
    }
    rows: list[dict[str, Any]] = []
    machine = _machine()
    result: dict[str, Any] = {}
    for stop in range(args.every, (args.until or args.steps) + 1, args.every):
        start = time.perf_counter()
        params = train_text_model(config, runs, embed, progress=False, stop_at=stop)
        trained = time.perf_counter() - start
        row: dict[str, Any] = {"step": stop, "train_s": round(trained, 1)}
        for n, batch in texts.items():
            scored = score_size(config.model, params, batch, args.seed, embed)
            row[str(n)] = _scored(scored)
            if embed is not None:  # which node each layer's answer tokens read
                reads = cross_attention_reads(
                    config.model, params, batch, args.seed, embed
                )
                row[str(n)]["reads"] = [
                    {
                        k: round(v, 3) if isinstance(v, float) else v
                        for k, v in layer.items()
                    }
                    for layer in reads
                ]
        for factor in denser:  # key "4@1024": 4 nodes, positions below 1024
            dense = dataclasses.replace(
                config.model, max_position=config.model.max_position // factor
            )
            for n in sizes.train_sizes:
                scored = score_size(dense, params, texts[n], args.seed, embed)
                row[f"{n}@{dense.max_position}"] = _scored(scored)
        row["eval_s"] = round(time.perf_counter() - start - trained, 1)
        print(json.dumps(row), flush=True)
        rows.append(row)
        result = {
            "config": config.to_dict(),
            "test_sizes": list(sizes.test_sizes),
            "graphs_per_size": args.graphs,
            "machine": machine,
            "rules": rules,
            # where it wrote is this machine's business, not the result's
            "arguments": {
                k: v for k, v in vars(args).items() if k not in ("runs", "out")
            },
            "rows": rows,
        }
        if out is not None:
            files.write_json_atomic(out, result)
    return result


def main(argv: list[str] | None = None) -> None:
    """Measure, writing the curve where ``--out`` says as it grows."""
    args = _parse(argv)
    with tempfile.TemporaryDirectory() as scratch:
        measure(
            args,
            Path(args.runs or scratch) / "run",
            Path(args.out) if args.out else None,
        )


if __name__ == "__main__":
    main()
