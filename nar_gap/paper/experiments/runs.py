"""What the experiments share: content-addressed runs, profile metadata, graphs.

Runs are *content-addressed*: a configuration trains in
``<runs>/<algorithm>_<hash of its TrainConfig>``, so two notebooks (or two
ablation tables) that need the same configuration share one run, and a rerun
with the same seeds finds it finished.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from nar_gap.model.config import NetworkConfig
from nar_gap.model.seeds import score_seeds
from nar_gap.paper.experiments.profiles import Profile
from nar_gap.system import files
from nar_gap.tasks.batch import Batch, first_graphs
from nar_gap.tasks.sampling import eval_batch
from nar_gap.training import TrainConfig, TrainResult, load_run, train

# Fields added to TrainConfig (or its NetworkConfig) after runs were first
# hashed, with their defaults: at the default they are left out of the hash,
# so every run made before they existed keeps its directory (and is resumed,
# not trained again).
_LATER_FIELDS = {
    "optimizer": "adam",
    "network.edge_map": "channel",
    "network.simplify_decoders": False,
    "attention_weight": 0.0,
    "state_weight": 0.0,
    "network.state_probe_size": 0,
    "selection": "first_best",
    "supervision_until": 0,
    "supervision_schedule": "linear",
    "curriculum_steps": 0,
    "eval_graphs": 0,
    "network.simple_pointer_decoder": "bilinear",
    "network.simple_pointer_scale": 1000.0,
    "network.fork_num_nodes": 16,
    "train_families": [],
    "family_share": 0.0,
}


def _hashed_fields(payload: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    kept = {}
    for key, value in payload.items():
        name = f"{prefix}{key}"
        if name in _LATER_FIELDS and value == _LATER_FIELDS[name]:
            continue
        kept[key] = (
            _hashed_fields(value, f"{name}.") if isinstance(value, dict) else value
        )
    return kept


def run_dir(config: TrainConfig, runs_dir: str | os.PathLike) -> Path:
    """Where ``config`` trains: one directory per distinct configuration."""
    fields = _hashed_fields(config.to_dict())
    text = json.dumps(fields, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return Path(runs_dir) / f"{config.network.algorithm}_{digest}"


def train_once(
    config: TrainConfig, runs_dir: str | os.PathLike, progress: bool = True
) -> TrainResult:
    """Train ``config`` in its own run directory (finished seeds are not redone)."""
    return train(config, run_dir(config, runs_dir), progress=progress)


def metadata(profile: Profile, **extra: Any) -> dict[str, Any]:
    """What every results sidecar records about the profile."""
    sizes = files.to_jsonable(dataclasses.asdict(profile))
    return {"profile": profile.name, "profile_sizes": sizes, **extra}


def baseline_config(
    profile: Profile, algorithm: str, edge_info: bool = False
) -> TrainConfig:
    """The default architecture for ``algorithm`` at its baseline sizes.

    ``edge_info``: the paper's modified network (edge information in the
    selected values, Table 11), at the same sizes and seeds: the trained
    counterpart of a compiled network that uses edge information, as the
    compiled Bellman-Ford does, so the two are compared like for like.
    """
    sizes = profile.baseline_sizes(algorithm)
    return profile.train_config(
        NetworkConfig(
            algorithm, hidden_size=sizes.hidden_size, use_edge_info=edge_info
        ),
        seeds=profile.seed_list(sizes.seeds),
        steps=sizes.steps,
    )


def faithfulness_batch(profile: Profile, algorithm: str) -> Batch:
    """The graphs of the faithfulness study: the test graphs training scores on."""
    batch = eval_batch(algorithm, "test", profile.test_num_nodes)
    return first_graphs(batch, profile.faithfulness_graphs)


def final_test_scores(result: TrainResult) -> np.ndarray:
    """Each seed's test score at its final-step parameters (the same test split).

    Where a seed selected its last step, the parameters are the same and so
    is the score, without scoring again.
    """
    config = result.config
    selected = np.array([m["test_score"] for m in result.metrics], np.float64)
    if all(int(m["selected_step"]) == config.steps for m in result.metrics):
        return selected
    if result.out_dir is None:  # trained in memory: no final parameters kept
        return np.full(selected.shape, np.nan)
    final = load_run(result.out_dir, parameters="final")
    test = eval_batch(
        config.network.algorithm, "test", config.test_num_nodes, config.eval_graphs
    )
    return np.asarray(score_seeds(config.network, final.params, test)["score"])
