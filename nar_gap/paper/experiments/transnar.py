"""Notebook 08: TransNAR with a trained and with a compiled NAR, on CLRS-Text.

Three models per algorithm, each over the same seeds and the same examples:
``transformer`` (the Transformer alone), ``transnar_trained`` (tokens read a
trained baseline of notebook 02, seed for seed) and ``transnar_compiled``
(tokens read the compiled network at hidden 128).  Each is scored with
TransNAR's shape, parse and CLRS scores at its training sizes and at larger
ones.  The files:

- ``transnar_<algorithm>.csv``: one row per model, seed and size: the three
  scores, ``content`` (``scores.content_score``) and ``shaped`` (answers of the
  right length, of ``graphs``);
- ``transnar_summary_<algorithm>.csv``: mean, std and seeds per model and size;
- ``transnar_reads_<algorithm>.csv``: what the cross-attention reads;
- ``transnar_rules_<algorithm>.csv``: per size, the CLRS score of two rules
  that need no search (``scores.rule_scores``) on the same graphs, the floor
  a model's score is read against;
- ``fig_transnar_<algorithm>``: CLRS score against size.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from nar_gap.analysis.models import Models
from nar_gap.compiler import DEFAULT_HIDDEN_SIZE
from nar_gap.compiler.compiling import compile as compile_algorithm
from nar_gap.model.model import Model
from nar_gap.paper import plots
from nar_gap.paper.experiments.profiles import DRY_SUFFIX, OutputDirs, Profile
from nar_gap.paper.experiments.runs import baseline_config, metadata, train_once
from nar_gap.paper.transnar.evaluation import (
    cross_attention_reads,
    evaluation_texts,
    score_size,
)
from nar_gap.paper.transnar.model import TransformerConfig
from nar_gap.paper.transnar.nar import embedder, nar_clrs_score
from nar_gap.paper.transnar.scores import SCORES, content_score, rule_scores
from nar_gap.paper.transnar.summary import MODEL_NAMES, question_rows, summarise
from nar_gap.paper.transnar.tokenizer import vocabulary_size
from nar_gap.paper.transnar.training import (
    TextTrainConfig,
    text_run_dir,
    train_text_model,
)
from nar_gap.system import files
from nar_gap.tasks.clrs_text import TEXT_ALGORITHMS

NAR_KINDS = ("none", "trained", "compiled")
COMPILED_HIDDEN = DEFAULT_HIDDEN_SIZE  # the compiled network the issue names
RESULTS_FILE = "transnar_{}.csv"
SUMMARY_FILE = "transnar_summary_{}.csv"
READS_FILE = "transnar_reads_{}.csv"
RULES_FILE = "transnar_rules_{}.csv"
FIGURE_STEM = "fig_transnar_{}"


@dataclasses.dataclass(frozen=True)
class TransNARSizes:
    """How notebook 08 is sized in a profile.

    Attributes:
      seeds: seeds per model (the trained NAR of seed ``k`` is baseline seed
        ``k`` of notebook 02).
      steps: optimiser steps per seed.
      batch_size: examples per step.
      train_sizes: graph sizes trained on (TransNAR trains on small graphs).
      test_sizes: sizes scored: the training sizes and larger ones.
      eval_graphs: graphs scored per size.
      width, layers, heads: the Transformer.
      max_position: randomised positions are drawn below it (above the
        longest test sequence).

    Nodes are named by labels drawn below :attr:`label_range`, the largest
    size scored, so no size asks for a label training never wrote
    (:mod:`nar_gap.tasks.clrs_text`).
    """

    seeds: int
    steps: int
    batch_size: int
    train_sizes: tuple[int, ...]
    test_sizes: tuple[int, ...]
    eval_graphs: int
    width: int = 64
    layers: int = 2
    heads: int = 4
    max_position: int = 4096

    @property
    def label_range(self) -> int:
        """Labels are drawn below the largest size scored (there: the indices)."""
        return max(self.test_sizes)

    def model_config(self, nar_width: int) -> TransformerConfig:
        """The Transformer, reading a NAR of ``nar_width`` (0: none)."""
        return TransformerConfig(
            vocab_size=vocabulary_size(),
            width=self.width,
            layers=self.layers,
            heads=self.heads,
            max_position=self.max_position,
            nar_width=nar_width,
        )


# Training on 4 and 5 nodes; scoring there, at 2x (10) and at 4x (20) the
# largest.  At 1 000 steps (the fresh-clone run at b60dd38: 1 068 s, the
# longest notebook) no model was competent in distribution and every row of
# the comparison was "not testable here"; 250 steps and 16 graphs per size
# keep every code path and the walkthrough at about a third of the time, and
# a competent TransNAR needs a larger profile than this one.  50 steps since
# the slower host kind (783 s at 250, 595 at 125): no row is testable at any.
_CPU_SIZES = TransNARSizes(
    seeds=3,
    steps=50,
    batch_size=16,
    train_sizes=(4, 5),
    test_sizes=(4, 5, 10, 20),
    eval_graphs=16,
)
SIZES: dict[str, TransNARSizes] = {
    "smoke": TransNARSizes(
        seeds=3,
        steps=8,
        batch_size=4,
        train_sizes=(4,),
        test_sizes=(4, 8, 16),
        eval_graphs=2,
        width=16,
        layers=1,
        heads=2,
    ),
    "cpu": _CPU_SIZES,
    # The gpu profile is sized for the paper's tables; notebook 08 keeps the
    # cpu sizes there.
    "gpu": _CPU_SIZES,
    "paper": TransNARSizes(
        seeds=5,
        steps=20_000,
        batch_size=32,
        train_sizes=(4, 5, 6, 7, 8),
        test_sizes=(4, 6, 8, 16, 32),
        eval_graphs=128,
        width=256,
        layers=6,
        heads=8,
        max_position=16_384,
    ),
}


def sizes_for(profile: Profile) -> TransNARSizes:
    """The notebook's sizes for ``profile`` (a dry run: one step, two graphs)."""
    if profile.name.endswith(DRY_SUFFIX):
        real = SIZES[profile.name.removesuffix(DRY_SUFFIX)]
        return dataclasses.replace(real, steps=1, eval_graphs=2)
    return SIZES[profile.name]


def trained_nars(profile: Profile, dirs: OutputDirs, algorithm: str) -> list[Model]:
    """Notebook 02's baseline seeds of ``algorithm`` (trained here if absent)."""
    run = train_once(baseline_config(profile, algorithm), dirs.runs, progress=False)
    return Models.from_run(run).each()


def nar_for(
    kind: str, seed_index: int, trained: Sequence[Model], compiled: Model
) -> Model | None:
    """The frozen NAR behind model ``kind`` for seed ``seed_index``."""
    if kind == "none":
        return None
    if kind == "compiled":
        return compiled
    if seed_index >= len(trained):
        raise ValueError(
            f"TransNAR seed {seed_index} needs baseline seed {seed_index}, but "
            f"notebook 02's run has {len(trained)} seeds"
        )
    return trained[seed_index]


def frozen_nar(
    profile: Profile, dirs: OutputDirs, algorithm: str, kind: str, seed: int
) -> Model | None:
    """Model ``kind``'s NAR for seed ``seed``, built or read back on its own.

    Only what ``kind`` needs: notebook 02's baselines (trained if absent)
    for ``trained``, the compiled network for ``compiled``, nothing for
    ``none``.
    """
    trained = trained_nars(profile, dirs, algorithm) if kind == "trained" else []
    compiled = (
        compile_algorithm(algorithm, COMPILED_HIDDEN) if kind == "compiled" else None
    )
    return nar_for(kind, seed, trained, compiled)


def nar_width(profile: Profile, algorithm: str, kind: str) -> int:
    """The width of ``kind``'s NAR embeddings (0: no NAR)."""
    if kind == "none":
        return 0
    if kind == "compiled":
        return COMPILED_HIDDEN
    return baseline_config(profile, algorithm).network.hidden_size


def text_train_config(
    profile: Profile, algorithm: str, kind: str, seed: int
) -> TextTrainConfig:
    """The training of model ``kind``'s seed ``seed`` at ``profile``'s sizes."""
    sizes = sizes_for(profile)
    return TextTrainConfig(
        algorithm=algorithm,
        model=sizes.model_config(nar_width(profile, algorithm, kind)),
        nar=kind,
        seed=seed,
        steps=sizes.steps,
        batch_size=sizes.batch_size,
        train_sizes=sizes.train_sizes,
        checkpoint_every=max(1, min(250, sizes.steps)),
        label_range=sizes.label_range,
    )


def trained_text_model(
    profile: Profile,
    dirs: OutputDirs,
    algorithm: str,
    kind: str,
    seed: int,
    progress: bool = False,
) -> tuple[TextTrainConfig, Any, Model | None]:
    """Model ``kind``'s seed ``seed``: its config, parameters and frozen NAR.

    Trained if absent, read back if finished (what the notebook's hands-on
    cell calls after the experiment ran).
    """
    nar = frozen_nar(profile, dirs, algorithm, kind, seed)
    config = text_train_config(profile, algorithm, kind, seed)
    params = train_text_model(
        config, text_run_dir(config, dirs.runs), embedder(nar), progress
    )
    return config, params, nar


def run_algorithm(
    profile: Profile, dirs: OutputDirs, algorithm: str, progress: bool = True
) -> dict[str, list[dict[str, Any]]]:
    """Train and score the three models of ``algorithm``; write its files.

    Reading (``dirs.reading``): its three tables, typed (the question's
    tests compare the numbers); its figure is the one already there.
    """
    if dirs.reading:
        return {
            "rows": dirs.read_back(RESULTS_FILE.format(algorithm), typed=True),
            "summary": dirs.read_back(SUMMARY_FILE.format(algorithm), typed=True),
            "reads": dirs.read_back(READS_FILE.format(algorithm), typed=True),
            "rules": dirs.read_back(RULES_FILE.format(algorithm), typed=True),
        }
    sizes = sizes_for(profile)
    trained = trained_nars(profile, dirs, algorithm)
    compiled = compile_algorithm(algorithm, COMPILED_HIDDEN)
    texts = {
        n: evaluation_texts(algorithm, n, sizes.eval_graphs, sizes.label_range)
        for n in sizes.test_sizes
    }
    rows, reads = [], []
    jobs = [(k, s) for k in NAR_KINDS for s in range(sizes.seeds)]
    for kind, seed in tqdm(jobs, desc=f"TransNAR {algorithm}", disable=not progress):
        nar = nar_for(kind, seed, trained, compiled)
        config = text_train_config(profile, algorithm, kind, seed)
        embed = embedder(nar)
        # one bar for the whole study: the runs' own bars would nest inside it
        params = train_text_model(config, text_run_dir(config, dirs.runs), embed, False)
        for num_nodes, batch in texts.items():
            scored = score_size(config.model, params, batch, seed, embed)
            rows.append(
                {
                    "model": MODEL_NAMES[kind],
                    "nar": kind,
                    "seed": seed,
                    "num_nodes": num_nodes,
                    "in_distribution": num_nodes in sizes.train_sizes,
                    "graphs": batch.batch_size,
                    **{name: float(scored.scores[name].mean()) for name in SCORES},
                    "content": content_score(scored.scores),
                    "shaped": int(scored.scores["shape"].sum()),
                    "nar_clrs": nar_clrs_score(nar, batch),
                }
            )
            if nar is not None:
                for read in cross_attention_reads(
                    config.model, params, batch, seed, embed
                ):
                    reads.append(
                        {"model": MODEL_NAMES[kind], "seed": seed,
                         "num_nodes": num_nodes, **read}
                    )  # fmt: skip
    summary = summarise(rows)
    rules = rule_rows(texts, sizes.train_sizes)
    meta = metadata(profile, transnar=files.to_jsonable(dataclasses.asdict(sizes)))
    results = Path(dirs.results)
    files.write_table(results / RESULTS_FILE.format(algorithm), rows, meta)
    files.write_table(results / SUMMARY_FILE.format(algorithm), summary, meta)
    files.write_table(results / READS_FILE.format(algorithm), reads, meta)
    files.write_table(results / RULES_FILE.format(algorithm), rules, meta)
    fig = plots.plot_transnar_scores(summary, algorithm, max(sizes.train_sizes), rules)
    files.save_figure(fig, Path(dirs.figures) / FIGURE_STEM.format(algorithm))
    plots.close(fig)
    return {"rows": rows, "summary": summary, "reads": reads, "rules": rules}


def rule_rows(
    texts: dict[int, Any], train_sizes: Sequence[int]
) -> list[dict[str, Any]]:
    """Per size, each rule's CLRS score on the graphs the models are scored on."""
    return [
        {
            "num_nodes": n,
            "in_distribution": n in train_sizes,
            "graphs": batch.batch_size,
            **rule_scores(batch.graphs),
        }
        for n, batch in texts.items()
    ]


def run_transnar(
    profile: Profile,
    dirs: OutputDirs,
    algorithms: Sequence[str] = TEXT_ALGORITHMS,
    progress: bool = True,
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Notebook 08's experiment for every algorithm."""
    return {a: run_algorithm(profile, dirs, a, progress) for a in algorithms}


QUESTION_FILE = "transnar_question.csv"


def write_question(
    rows_by_algorithm: dict[str, Sequence[dict[str, Any]]],
    dirs: OutputDirs,
    profile: Profile,
) -> Path:
    """``results/transnar_question.csv``: :func:`question_rows`, with its sidecar."""
    return files.write_table(
        Path(dirs.results) / QUESTION_FILE,
        question_rows(rows_by_algorithm),
        metadata(profile),
    )


def read_results(results: str | Path, algorithm: str) -> list[dict[str, str]]:
    """``transnar_<algorithm>.csv`` as written."""
    return files.read_table(Path(results) / RESULTS_FILE.format(algorithm))
