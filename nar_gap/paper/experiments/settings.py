"""Appendix A's settings (the paper's Table 8), generated from the profiles.

The paper trains with CLRS's defaults and lists them in Table 8; its
extracted text lost that table's values.  Here the table is written from
the configurations the code actually runs, one column per profile, so a
reader sees side by side what the ``paper`` profile sets (the paper's
protocol as we read it) and how ``cpu`` and ``smoke`` shrink it.  Nothing is
typed twice: every value is read from a
:class:`~nar_gap.paper.experiments.profiles.Profile` and the
:class:`~nar_gap.training.TrainConfig` it builds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nar_gap.paper.experiments.profiles import PROFILES, Profile
from nar_gap.paper.experiments.runs import baseline_config
from nar_gap.system import files
from nar_gap.training import TrainConfig

SETTINGS_FILE = "table8_settings.csv"
BASELINE_ALGORITHMS = ("bfs", "bellman_ford", "dfs")


def _sizes(profile: Profile, algorithm: str) -> str:
    sizes = profile.baseline_sizes(algorithm)
    return f"{sizes.seeds} x {sizes.steps}, hidden {sizes.hidden_size}"


def _baseline(read: Callable[[TrainConfig], Any]) -> Callable[[Profile], Any]:
    """A setting of the BFS baseline's configuration (the same for all three)."""
    return lambda p: read(baseline_config(p, "bfs"))


# (setting, how a profile sets it): the order of the table's rows.
SETTINGS: tuple[tuple[str, Callable[[Profile], Any]], ...] = (
    *(
        (f"baseline {a}: seeds x steps", lambda p, a=a: _sizes(p, a))
        for a in BASELINE_ALGORITHMS
    ),
    ("optimizer", _baseline(lambda c: c.optimizer)),
    ("learning_rate", _baseline(lambda c: c.learning_rate)),
    ("grad_clip_norm", _baseline(lambda c: c.grad_clip_norm)),
    ("batch_size", _baseline(lambda c: c.batch_size)),
    ("train_lengths", _baseline(lambda c: " ".join(map(str, c.train_lengths)))),
    (
        "sequential train_lengths (dfs)",
        lambda p: " ".join(map(str, p.sequential_lengths)),
    ),
    (
        "edge probabilities",
        _baseline(lambda c: " ".join(map(str, c.edge_probabilities))),
    ),
    ("random_pos", _baseline(lambda c: c.random_pos)),
    ("validation N (CLRS val)", _baseline(lambda c: c.val_num_nodes)),
    ("test N (CLRS test)", _baseline(lambda c: c.test_num_nodes)),
    ("eval_every", _baseline(lambda c: c.eval_every)),
    ("model selection", _baseline(lambda c: c.selection)),
    ("processor", lambda p: "GATv2, 1 message-passing step"),
    ("num_heads", _baseline(lambda c: c.network.num_heads)),
    ("layer norm", _baseline(lambda c: c.network.use_ln)),
    ("hint_mode", _baseline(lambda c: c.network.hint_mode)),
    ("hint reprediction", _baseline(lambda c: c.network.hint_repred_mode)),
    ("hint_teacher_forcing", _baseline(lambda c: c.network.hint_teacher_forcing)),
    ("dropout", _baseline(lambda c: c.network.dropout_prob)),
    ("encoder init", _baseline(lambda c: c.network.encoder_init)),
    (
        "ablations: seeds, steps, hidden",
        lambda p: f"{p.seeds}, {p.steps}, {p.hidden_size}",
    ),
    ("minimal (hidden 4) seeds", lambda p: p.minimal_seeds),
    ("extended training steps", lambda p: p.long_steps),
    ("training on from compiled: data orders", lambda p: p.stability_orders),
    ("loss landscape grid", lambda p: f"{p.landscape_points} x {p.landscape_points}"),
    ("faithfulness graphs (test split)", lambda p: p.faithfulness_graphs),
)


def settings_rows(
    profiles: Sequence[Profile] = tuple(PROFILES.values()),
) -> list[dict[str, Any]]:
    """One row per setting, one column per profile."""
    return [
        {"setting": name, **{p.name: read(p) for p in profiles}}
        for name, read in SETTINGS
    ]


def write_settings(
    results_dir: str | os.PathLike, metadata: dict[str, Any] | None = None
) -> Path:
    """``results/table8_settings.csv`` (with its sidecar)."""
    return files.write_table(
        Path(results_dir) / SETTINGS_FILE, settings_rows(), metadata
    )
