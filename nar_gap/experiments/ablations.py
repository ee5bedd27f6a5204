"""Appendix D ablations: each a set of training configurations, one table each.

Every experiment is a tuple of :class:`Variant` (a label and a
:class:`~nar_gap.train.TrainConfig`), built from a profile's sizes by
:func:`experiments`, trained by :func:`run_experiment` (resuming: finished
seeds are never retrained) and reported as the paper reports them, the test
score's ``mean ± std (max)`` over seeds, one row per variant.

- ``table11_edge_info`` (Table 11): Bellman-Ford with / without edge information;
- ``table12_pre_att_bias`` (Table 12): BFS with / without the N x N bias;
- ``table13_length_limited`` (Table 13): Bellman-Ford trained and tested at one
  size (16), with both modifications / none;
- ``table14_no_hints`` (Table 14): BFS, DFS, Bellman-Ford, with / without hints;
- ``d10_sequential`` (D.10): ``bfs_seq`` and ``dfs_light``, tested at N = 16
  (a ``bfs_seq`` trace has one step per scanned edge: thousands at N = 64);
- ``table15_minimal`` (Table 15): hidden 4 "lottery tickets", BFS and
  Bellman-Ford, with / without the modifications;
- ``d1_regularisation`` (D.1): BFS hidden 4, plain, L1 1e-4, and L1 with
  extended training (grokking).

The N x N pre-attention bias fixes the graph size, so every variant that
uses it, and its control, is tested at N = 16 (the largest training size)
instead of 64; Table 13 also trains at that one size only ("length-limited").
The paper does not say how its length limit was set; training at the test
size is the only choice under which the bias is defined for every graph.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nar_gap.network import NetworkConfig
from nar_gap.profiles import Profile
from nar_gap.statistics import score_summary
from nar_gap.train import TrainConfig, train

BIAS_NODES = 16  # side of the N x N bias: the largest training graph


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


def _net(algorithm: str, hidden: int, **flags: Any) -> NetworkConfig:
    if flags.get("use_pre_att_bias"):
        flags.setdefault("pre_att_bias_nodes", BIAS_NODES)
    return NetworkConfig(algorithm, hidden_size=hidden, **flags)


def experiments(profile: Profile) -> dict[str, Experiment]:
    """Every ablation at ``profile``'s sizes, by name."""
    p = profile
    hidden = p.hidden_size
    at16 = {"test_num_nodes": min(p.test_num_nodes, BIAS_NODES)}
    minimal = p.seed_list(p.minimal_seeds)

    def variant(label: str, network: NetworkConfig, seeds=None, **changes) -> Variant:
        return Variant(label, p.train_config(network, seeds, **changes))

    table = [
        Experiment(
            "table11_edge_info",
            "Bellman-Ford: edge information in the selected values",
            (
                variant("no edge information", _net("bellman_ford", hidden)),
                variant(
                    "edge information", _net("bellman_ford", hidden, use_edge_info=True)
                ),
            ),
        ),
        Experiment(
            "table12_pre_att_bias",
            "BFS: learned N x N pre-attention bias (tested at N = 16)",
            (
                variant("no bias", _net("bfs", hidden), **at16),
                variant(
                    "pre-attention bias",
                    _net("bfs", hidden, use_pre_att_bias=True),
                    **at16,
                ),
            ),
        ),
        Experiment(
            "table13_length_limited",
            "Bellman-Ford trained and tested at one size: both modifications",
            (
                variant(
                    "unmodified",
                    _net("bellman_ford", hidden),
                    train_lengths=(at16["test_num_nodes"],),
                    **at16,
                ),
                variant(
                    "edge information + bias",
                    _net(
                        "bellman_ford",
                        hidden,
                        use_edge_info=True,
                        use_pre_att_bias=True,
                    ),
                    train_lengths=(at16["test_num_nodes"],),
                    **at16,
                ),
            ),
        ),
        Experiment(
            "table14_no_hints",
            "Training with and without hints",
            tuple(
                variant(
                    f"{algorithm}, {label}", _net(algorithm, hidden, hint_mode=mode)
                )
                for algorithm in ("bfs", "dfs", "bellman_ford")
                for label, mode in (("hints", "encoded_decoded"), ("no hints", "none"))
            ),
        ),
        Experiment(
            "d10_sequential",
            "Sequential BFS (bfs_seq) against simplified DFS (dfs_light)",
            (
                variant("bfs_seq", _net("bfs_seq", hidden), **at16),
                variant("dfs_light", _net("dfs_light", hidden), **at16),
            ),
        ),
        Experiment(
            "table15_minimal",
            "Minimal models (hidden 4) over many seeds: lottery tickets",
            (
                variant("bfs", _net("bfs", 4), minimal, **at16),
                variant(
                    "bfs + bias", _net("bfs", 4, use_pre_att_bias=True), minimal, **at16
                ),
                variant("bellman_ford", _net("bellman_ford", 4), minimal, **at16),
                variant(
                    "bellman_ford + edge information + bias",
                    _net("bellman_ford", 4, use_edge_info=True, use_pre_att_bias=True),
                    minimal,
                    **at16,
                ),
            ),
        ),
        Experiment(
            "d1_regularisation",
            "BFS hidden 4: L1 regularisation and extended training (grokking)",
            (
                variant("plain", _net("bfs", 4)),
                variant("L1 1e-4", _net("bfs", 4), l1_weight=1e-4),
                variant(
                    f"L1 1e-4, {p.long_steps} steps",
                    _net("bfs", 4),
                    l1_weight=1e-4,
                    steps=p.long_steps,
                ),
            ),
        ),
    ]
    return {e.name: e for e in table}


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in label).strip("_")


def run_experiment(
    experiment: Experiment,
    runs_dir: str | os.PathLike,
    progress: bool = True,
    run_dir: Callable[[TrainConfig, Path], Path] | None = None,
) -> list[dict[str, Any]]:
    """Train every variant (resuming in ``runs_dir/<name>/<variant>``); one row each.

    ``run_dir(config, runs_dir)`` overrides where a variant trains
    (:func:`nar_gap.pipeline.run_dir` shares runs between tables).

    Columns: ``experiment``, ``variant``, ``algorithm``, ``hidden_size``,
    ``steps``, ``seeds``, ``performance`` (``mean ± std (max)`` of the test
    score), ``mean``, ``std``, ``max``, ``min``, ``test_num_nodes``.
    """
    rows = []
    for v in experiment.variants:
        out = (
            Path(runs_dir) / experiment.name / _slug(v.label)
            if run_dir is None
            else run_dir(v.config, Path(runs_dir))
        )
        result = train(v.config, out, progress=progress)
        rows.append(
            {
                "experiment": experiment.name,
                "variant": v.label,
                "algorithm": v.config.network.algorithm,
                "hidden_size": v.config.network.hidden_size,
                "steps": v.config.steps,
                **score_summary([m["test_score"] for m in result.metrics]),
                "test_num_nodes": v.config.test_num_nodes,
            }
        )
    return rows


def write_experiment(
    experiment: Experiment,
    rows: Sequence[Mapping[str, Any]],
    results_dir: str | os.PathLike,
    metadata: Mapping[str, Any] | None = None,
) -> Path:
    """``results/<name>.csv`` with its sidecar (configs of every variant)."""
    from nar_gap import io

    meta = {
        **(metadata or {}),
        "title": experiment.title,
        "variants": {v.label: v.config.to_dict() for v in experiment.variants},
    }
    return io.write_table(
        Path(results_dir) / f"{experiment.name}.csv", list(rows), meta
    )
