"""Appendix D ablations: each a set of training configurations, one table each.

Every experiment is a tuple of :class:`Variant` (a label and a
:class:`~nar_gap.training.loop.TrainConfig`), built from a profile's sizes by
:func:`experiments`, trained by :func:`run_experiment` (resuming: finished
seeds are never retrained) and reported as the paper reports them, the test
score's ``mean ± std (max)`` over seeds, one row per variant.  Beside each
table, :func:`seeds_file` holds every arm's test score seed by seed (the arms
of a table share their seeds, so they compare paired), with how far the
pre-attention bias moved in the arms that have one
(:func:`~nar_gap.model.gatv2.bias_movement`).

- ``table11_edge_info`` (Table 11): Bellman-Ford with / without edge information;
  nar_gap's rows (the fork's parameter-free form, our reading of Eqs. 11-13)
  and the fork's learned form with its control, length-limited (below);
- ``table12_pre_att_bias`` (Table 12): BFS with / without the N x N bias;
- ``table13_length_limited`` (Table 13): Bellman-Ford trained and tested at one
  size (16), with both modifications / none; nar_gap's forms, and the pair
  again with the fork's forms (learned edge map and simplified pointer
  decoder, appendix A's ``simplify_decoders``);
- ``table14_no_hints`` (Table 14): BFS, DFS, Bellman-Ford, with / without hints;
- ``table17_sequential`` (Table 17, D.10): ``bfs_seq`` and ``dfs_light``, tested
  at N = 16 (a ``bfs_seq`` trace has one step per scanned edge: thousands at
  N = 64);
- ``table15_minimal`` (Table 15): hidden 4 "lottery tickets", BFS and
  Bellman-Ford, with / without the modifications;
- ``d1_regularisation`` (D.1): BFS hidden 4, plain, L1 1e-4, and L1 with
  extended training (grokking).

The N x N pre-attention bias fixes the graph size, so every variant that
uses it, and its control, is tested at N = 16 (the largest training size)
instead of 64; Table 13 also trains at that one size only ("length-limited").
The paper does not say how its length limit was set; training at the test
size is the only choice under which the bias is defined for every graph.

The authors' fork (``LSaldyt/clrs``) defines two more size-locked forms, the
learned edge map of commit cef64d2 (``edge_map="fork"``) and the simplified
pointer decoder of branch ``dfs_reverse`` (``simple_pointer_decoder="fork"``):
their weights have one entry per node, so they run at exactly one graph size.
Every arm that uses them trains, validates and tests at that one size (16, or
the profile's smaller test size), like Table 13, and is compared with a
control at the same size.  nar_gap's own forms (``channel``, ``eqs_11_13``,
the bilinear decoder) run at any size and keep the tables' other sizes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from nar_gap.analysis.stats import score_summary
from nar_gap.model.config import NetworkConfig
from nar_gap.model.gatv2 import BIAS_MOVEMENT_COLUMNS, bias_movement
from nar_gap.model.seeds import unstack_tree
from nar_gap.paper.experiments.profiles import OutputDirs, Profile
from nar_gap.paper.experiments.runs import final_test_scores, metadata, run_dir
from nar_gap.system import files
from nar_gap.training import TrainConfig, TrainResult, train

BIAS_NODES = 16  # side of the N x N bias: the largest training graph

# Each table's name, also its file's (:func:`table_file`).
EDGE_INFO_TABLE = "table11_edge_info"
PRE_ATT_BIAS_TABLE = "table12_pre_att_bias"
LENGTH_LIMITED_TABLE = "table13_length_limited"
NO_HINTS_TABLE = "table14_no_hints"
MINIMAL_TABLE = "table15_minimal"
SEQUENTIAL_TABLE = "table17_sequential"
REGULARISATION_TABLE = "d1_regularisation"


def table_file(name: str) -> str:
    """The ablation table ``name``'s file (its sidecar: every variant's config)."""
    return f"{name}.csv"


def seeds_file(name: str) -> str:
    """The ablation table ``name``'s per-seed file: its arms compared seed by seed."""
    return f"{name}_seeds.csv"


# The per-seed file's columns and what each means (written to its sidecar).
SEED_COLUMNS = {
    "variant": "the arm: the summary table's variant",
    "seed": "the training seed; the arms of one table share their seeds",
    "test_score": "the seed's test score, of its selected parameters",
    "final_test_score": "the seed's test score at its final-step parameters "
    "(the control for the selection: first_best keeps an early step's "
    "parameters when validation saturates early)",
    "selected_step": "the training step of the selected parameters",
    "bias_max_abs": "max |B_ij| of the pre-attention bias B (0 at initialisation) "
    "over the N x N block the test graphs use; empty in an arm without B",
    "bias_rms": "root mean square of B over that block",
    "bias_logit_bound": "bias_max_abs times the largest L1 norm of a head vector: "
    "B moves no attention logit further, so no attention weight by more than a "
    "factor exp(2 bias_logit_bound)",
    "offset_rms": "root mean square over channels of the sum of the processor's "
    "other zero-initialised pre-attention offsets (sender, receiver, graph and "
    "edge biases): how far offsets that start at 0 moved in the same training",
}


@dataclasses.dataclass(frozen=True)
class Variant:
    """One row of an ablation table."""

    label: str
    config: TrainConfig


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One ablation table: a name (also its file name), a title and its rows."""

    name: str
    title: str
    variants: tuple[Variant, ...]


# Appendix A's settings for the paper's hidden-4 experiments (Table 15, D.1)
# include simplify_decoders; its list also names hint_mode none and training
# length 16, but the extraction lost which experiment each row belongs to, so
# those stay at the defaults here.
MINIMAL_HIDDEN_SIZE = 4


def _net(algorithm: str, hidden: int, **flags: Any) -> NetworkConfig:
    """Appendix A's minimal-model settings and the bias's side filled in."""
    if hidden == MINIMAL_HIDDEN_SIZE:
        flags.setdefault("simplify_decoders", True)
    if flags.get("use_pre_att_bias"):
        flags.setdefault("pre_att_bias_nodes", BIAS_NODES)
    return NetworkConfig(algorithm, hidden_size=hidden, **flags)


def _variant(
    profile: Profile, label: str, network: NetworkConfig, seeds=None, **changes: Any
) -> Variant:
    return Variant(label, profile.train_config(network, seeds, **changes))


def _at_16(profile: Profile) -> dict[str, int]:
    """Test at N = 16 (or the profile's smaller test size): the bias's size."""
    return {"test_num_nodes": min(profile.test_num_nodes, BIAS_NODES)}


def _one_size(profile: Profile) -> dict[str, Any]:
    """Train, validate and test at :func:`_at_16`'s size only: length-limited."""
    size = _at_16(profile)["test_num_nodes"]
    return {"train_lengths": (size,), "val_num_nodes": size, "test_num_nodes": size}


def _fork_net(p: Profile, algorithm: str, **flags: Any) -> NetworkConfig:
    """The fork's size-locked forms, built for the one size they run at."""
    size = _one_size(p)["test_num_nodes"]
    return _net(algorithm, p.hidden_size, fork_num_nodes=size, **flags)


# The fork's definitions (LSaldyt/clrs): its learned edge map (cef64d2) and its
# simplified pointer decoder (branch dfs_reverse).
FORK_EDGE_INFO = {"use_edge_info": True, "edge_map": "fork"}
FORK_DECODER = {"simplify_decoders": True, "simple_pointer_decoder": "fork"}
# The rows they add (``variant`` column): Table 11's arm and its control ...
FORK_EDGE_INFO_ARM = "edge information (fork, cef64d2), length-limited"
FORK_EDGE_INFO_CONTROL = "no edge information, length-limited"
# ... and Table 13's pair with the fork's simplified decoder.
FORK_BOTH_ARM = "edge information (fork, cef64d2) + bias, simplified decoder (fork)"
FORK_DECODER_CONTROL = "unmodified, simplified decoder (fork)"


def _edge_info(p: Profile) -> Experiment:
    return Experiment(
        EDGE_INFO_TABLE,
        "Bellman-Ford: edge information in the selected values",
        (
            _variant(p, "no edge information", _net("bellman_ford", p.hidden_size)),
            _variant(
                p,
                "edge information",
                _net("bellman_ford", p.hidden_size, use_edge_info=True),
            ),
            _variant(
                p,
                "edge information, learned map (Eqs. 11-13)",
                _net(
                    "bellman_ford",
                    p.hidden_size,
                    use_edge_info=True,
                    edge_map="eqs_11_13",
                ),
            ),
            *_fork_edge_info(p),
        ),
    )


def _fork_edge_info(p: Profile) -> tuple[Variant, ...]:
    """Table 11 in the fork's learned form, with its control, at one size.

    The form is size-locked, so both train and test at one size (the control
    is Table 13's "unmodified": one run).  None where the profile has no fork
    arms (smoke).
    """
    if not p.fork_arms:
        return ()
    return (
        _variant(
            p,
            FORK_EDGE_INFO_CONTROL,
            _net("bellman_ford", p.hidden_size),
            **_one_size(p),
        ),
        _variant(
            p,
            FORK_EDGE_INFO_ARM,
            _fork_net(p, "bellman_ford", **FORK_EDGE_INFO),
            **_one_size(p),
        ),
    )


def _pre_att_bias(p: Profile) -> Experiment:
    return Experiment(
        PRE_ATT_BIAS_TABLE,
        "BFS: learned N x N pre-attention bias (tested at N = 16)",
        (
            _variant(p, "no bias", _net("bfs", p.hidden_size), **_at_16(p)),
            _variant(
                p,
                "pre-attention bias",
                _net("bfs", p.hidden_size, use_pre_att_bias=True),
                **_at_16(p),
            ),
        ),
    )


def _length_limited(p: Profile) -> Experiment:
    one_size = _one_size(p)
    both = _net(
        "bellman_ford", p.hidden_size, use_edge_info=True, use_pre_att_bias=True
    )
    return Experiment(
        LENGTH_LIMITED_TABLE,
        "Bellman-Ford trained and tested at one size: both modifications",
        (
            _variant(p, "unmodified", _net("bellman_ford", p.hidden_size), **one_size),
            _variant(p, "edge information + bias", both, **one_size),
            *_fork_length_limited(p),
        ),
    )


def _fork_length_limited(p: Profile) -> tuple[Variant, ...]:
    """Table 13's pair in the fork's definitions (none without fork arms).

    With appendix A's simplified decoders, the fork's: size-locked like its
    learned edge map, which Table 13 already trains at one size.
    """
    if not p.fork_arms:
        return ()
    both = {"use_pre_att_bias": True, **FORK_EDGE_INFO, **FORK_DECODER}
    return (
        _variant(
            p,
            FORK_DECODER_CONTROL,
            _fork_net(p, "bellman_ford", **FORK_DECODER),
            **_one_size(p),
        ),
        _variant(
            p, FORK_BOTH_ARM, _fork_net(p, "bellman_ford", **both), **_one_size(p)
        ),
    )


def _no_hints(p: Profile) -> Experiment:
    return Experiment(
        NO_HINTS_TABLE,
        "Training with and without hints",
        tuple(
            _variant(
                p,
                f"{algorithm}, {label}",
                _net(algorithm, p.hidden_size, hint_mode=mode),
            )
            for algorithm in p.ablation_algorithms
            for label, mode in (("hints", "encoded_decoded"), ("no hints", "none"))
        ),
    )


def _sequential(p: Profile) -> Experiment:
    return Experiment(
        SEQUENTIAL_TABLE,
        "Sequential BFS (bfs_seq) against simplified DFS (dfs_light)",
        tuple(
            _variant(p, name, _net(name, p.hidden_size), **_at_16(p))
            for name in ("bfs_seq", "dfs_light")
        ),
    )


def _minimal(p: Profile) -> Experiment:
    seeds, at16 = p.seed_list(p.minimal_seeds), _at_16(p)
    # Each algorithm plain, then with the modifications the paper pairs with it.
    modified = {
        "bfs": ("bfs + bias", {"use_pre_att_bias": True}),
        "bellman_ford": (
            "bellman_ford + edge information + bias",
            {"use_edge_info": True, "use_pre_att_bias": True},
        ),
    }
    return Experiment(
        MINIMAL_TABLE,
        "Minimal models (hidden 4, simplified decoders) over many seeds: "
        "lottery tickets",
        tuple(
            variant
            for algorithm in p.ablation_algorithms
            if algorithm in modified
            for variant in (
                _variant(
                    p, algorithm, _net(algorithm, MINIMAL_HIDDEN_SIZE), seeds, **at16
                ),
                _variant(
                    p,
                    modified[algorithm][0],
                    _net(algorithm, MINIMAL_HIDDEN_SIZE, **modified[algorithm][1]),
                    seeds,
                    **at16,
                ),
            )
        ),
    )


def _regularisation(p: Profile) -> Experiment:
    """D.1 (the paper's Table 9): one BFS and one Bellman-Ford row each."""
    return Experiment(
        REGULARISATION_TABLE,
        "Hidden 4 (simplified decoders): L1 regularisation and extended "
        "training (grokking)",
        tuple(
            variant
            for algorithm in p.ablation_algorithms
            if algorithm != "dfs"  # D.1 has BFS and Bellman-Ford rows
            for variant in (
                _variant(
                    p, f"{algorithm}, plain", _net(algorithm, MINIMAL_HIDDEN_SIZE)
                ),
                _variant(
                    p,
                    f"{algorithm}, L1 1e-4",
                    _net(algorithm, MINIMAL_HIDDEN_SIZE),
                    l1_weight=1e-4,
                ),
                _variant(
                    p,
                    f"{algorithm}, L1 1e-4, {p.long_steps} steps",
                    _net(algorithm, MINIMAL_HIDDEN_SIZE),
                    l1_weight=1e-4,
                    steps=p.long_steps,
                ),
            )
        ),
    )


# One builder per table, in the order notebook 04 shows them.
_TABLES = (
    _edge_info,
    _pre_att_bias,
    _length_limited,
    _no_hints,
    _sequential,
    _minimal,
    _regularisation,
)


def experiments(profile: Profile) -> dict[str, Experiment]:
    """Every ablation at ``profile``'s sizes, by name."""
    built = (build(profile) for build in _TABLES)
    return {experiment.name: experiment for experiment in built}


def summary_row(
    experiment: Experiment, variant: Variant, result: TrainResult
) -> dict[str, Any]:
    """One variant's row of the table (the columns :func:`run_experiment` lists)."""
    config = variant.config
    return {
        "experiment": experiment.name,
        "variant": variant.label,
        "algorithm": config.network.algorithm,
        "hidden_size": config.network.hidden_size,
        "steps": config.steps,
        **score_summary([m["test_score"] for m in result.metrics]),
        "test_num_nodes": config.test_num_nodes,
    }


def seed_rows(variant: Variant, result: TrainResult) -> list[dict[str, Any]]:
    """One variant's rows of :func:`seeds_file`, one per seed (:data:`SEED_COLUMNS`).

    The bias columns are those of the selected parameters (the ones the test
    score is of), empty when the variant has no pre-attention bias.
    """
    config = variant.config
    final = final_test_scores(result)
    rows = []
    for index, metrics in enumerate(result.metrics):
        moved = (
            bias_movement(
                unstack_tree(result.params, index)["net"]["processor"],
                config.test_num_nodes,
            )
            if config.network.use_pre_att_bias
            else dict.fromkeys(BIAS_MOVEMENT_COLUMNS)
        )
        rows.append(
            {
                "variant": variant.label,
                "seed": int(metrics["seed"]),
                "test_score": float(metrics["test_score"]),
                "final_test_score": float(final[index]),
                "selected_step": int(metrics["selected_step"]),
                **moved,
            }
        )
    return rows


def bias_summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each bias arm of a per-seed file in one row: did ``B`` move at all?

    ``rows``: :func:`seeds_file`'s rows (as read back, strings, or as
    written).  Columns: ``variant``, ``seeds``, ``selected_steps`` (the
    smallest and largest over seeds), the largest ``bias_max_abs`` and
    ``bias_logit_bound`` over seeds, and the median ``offset_rms``.
    """
    arms: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row["bias_max_abs"] not in ("", None):
            arms.setdefault(row["variant"], []).append(row)

    def column(arm: list[Mapping[str, Any]], name: str) -> np.ndarray:
        return np.array([float(r[name]) for r in arm])

    return [
        {
            "variant": variant,
            "seeds": len(arm),
            "selected_steps": f"{int(column(arm, 'selected_step').min())}"
            f"-{int(column(arm, 'selected_step').max())}",
            "bias_max_abs": float(column(arm, "bias_max_abs").max()),
            "bias_logit_bound": float(column(arm, "bias_logit_bound").max()),
            "offset_rms": float(np.median(column(arm, "offset_rms"))),
        }
        for variant, arm in arms.items()
    ]


@dataclasses.dataclass(frozen=True)
class ExperimentRows:
    """A trained ablation's two files: one row per variant, one per seed."""

    table: list[dict[str, Any]]
    seeds: list[dict[str, Any]]


def train_experiment(
    experiment: Experiment, runs_dir: str | os.PathLike, progress: bool = True
) -> ExperimentRows:
    """Train every variant (resuming its content-addressed run); both files' rows.

    Variants train in :func:`nar_gap.paper.experiments.runs.run_dir`, so a
    configuration two tables share (the baselines, say) trains once.  Each
    variant's parameters are read for its per-seed rows and then dropped.
    """
    table, seeds = [], []
    for v in experiment.variants:
        result = train(v.config, run_dir(v.config, runs_dir), progress=progress)
        table.append(summary_row(experiment, v, result))
        seeds.extend(seed_rows(v, result))
    return ExperimentRows(table, seeds)


def run_experiment(
    experiment: Experiment, runs_dir: str | os.PathLike, progress: bool = True
) -> list[dict[str, Any]]:
    """The table's rows (:func:`train_experiment`), one per variant.

    Columns: ``experiment``, ``variant``, ``algorithm``, ``hidden_size``,
    ``steps``, ``seeds``, ``performance`` (``mean ± std (max)`` of the test
    score), ``mean``, ``std``, ``max``, ``min``, ``test_num_nodes``.
    """
    return train_experiment(experiment, runs_dir, progress).table


def write_experiment(
    experiment: Experiment,
    rows: Sequence[Mapping[str, Any]],
    results_dir: str | os.PathLike,
    sidecar: Mapping[str, Any] | None = None,
) -> Path:
    """``results/<name>.csv`` with its sidecar (configs of every variant)."""
    meta = {
        **(sidecar or {}),
        "title": experiment.title,
        "variants": {v.label: v.config.to_dict() for v in experiment.variants},
    }
    return files.write_table(
        Path(results_dir) / table_file(experiment.name), list(rows), meta
    )


def write_seeds(
    experiment: Experiment,
    rows: Sequence[Mapping[str, Any]],
    results_dir: str | os.PathLike,
    sidecar: Mapping[str, Any] | None = None,
) -> Path:
    """``results/<name>_seeds.csv`` with its sidecar (what each column means)."""
    meta = {
        **(sidecar or {}),
        "title": f"{experiment.title}: each arm's seeds",
        "summary_table": table_file(experiment.name),
        "columns": SEED_COLUMNS,
    }
    return files.write_table(
        Path(results_dir) / seeds_file(experiment.name),
        list(rows),
        meta,
        columns=list(SEED_COLUMNS),
    )


def run_ablations(
    profile: Profile,
    dirs: OutputDirs,
    names: Sequence[str] | None = None,
    progress: bool = True,
) -> dict[str, list[dict[str, Any]]]:
    """Every ablation table (or ``names``), each written to ``results/<name>.csv``.

    Each also writes its per-seed file (:func:`seeds_file`); the summary rows
    are returned.  Reading (``dirs.reading``): each table's rows, as written.
    """
    known = experiments(profile)
    unknown = sorted(set(names or ()) - set(known))
    if unknown:
        raise ValueError(
            f"unknown ablations {unknown}; known: {', '.join(sorted(known))}"
        )
    if dirs.reading:
        return {name: dirs.read_back(table_file(name)) for name in names or known}
    tables = {}
    for name in names or list(known):
        experiment = known[name]
        rows = train_experiment(experiment, dirs.runs, progress=progress)
        write_experiment(experiment, rows.table, dirs.results, metadata(profile))
        write_seeds(experiment, rows.seeds, dirs.results, metadata(profile))
        tables[name] = rows.table
        # A kernel that trains every table holds dozens of configurations'
        # executables; drop them between tables (the on-disk compilation cache
        # brings back any one needed again).
        jax.clear_caches()
    return tables
