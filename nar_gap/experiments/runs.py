"""What the experiments share: content-addressed runs, profile metadata, graphs.

Runs are *content-addressed*: a configuration trains in
``<runs>/<algorithm>_<hash of its TrainConfig>``, so two notebooks (or two
ablation tables) that need the same configuration share one run, and a rerun
with the same seeds finds it finished.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import jax

from nar_gap.benchmark.batch import Batch
from nar_gap.benchmark.sampling import eval_batch
from nar_gap.experiments.profiles import Profile
from nar_gap.model.config import NetworkConfig
from nar_gap.training import TrainConfig, TrainResult, train


def run_dir(config: TrainConfig, runs_dir: str | os.PathLike) -> Path:
    """Where ``config`` trains: one directory per distinct configuration."""
    text = json.dumps(config.to_dict(), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return Path(runs_dir) / f"{config.network.algorithm}_{digest}"


def train_once(
    config: TrainConfig, runs_dir: str | os.PathLike, progress: bool = True
) -> TrainResult:
    """Train ``config`` in its own run directory (finished seeds are not redone)."""
    return train(config, run_dir(config, runs_dir), progress=progress)


def metadata(profile: Profile, **extra: Any) -> dict[str, Any]:
    """What every results sidecar records about the profile."""
    return {"profile": profile.name, "profile_sizes": profile.__dict__, **extra}


def baseline_config(profile: Profile, algorithm: str) -> TrainConfig:
    """The default architecture for ``algorithm`` at its baseline sizes."""
    sizes = profile.baseline_sizes(algorithm)
    return profile.train_config(
        NetworkConfig(algorithm, hidden_size=sizes.hidden_size),
        seeds=profile.seed_list(sizes.seeds),
        steps=sizes.steps,
    )


def faithfulness_batch(profile: Profile, algorithm: str) -> Batch:
    """The graphs of the faithfulness study: the test graphs training scores on."""
    batch = eval_batch(algorithm, "test", profile.test_num_nodes)
    return _first(batch, profile.faithfulness_graphs)


def _first(batch: Batch, count: int) -> Batch:
    if count >= batch.batch_size:
        return batch
    hints = {k: v[:, :count] for k, v in batch.hints.items()}
    rest = jax.tree_util.tree_map(lambda x: x[:count], (batch.inputs, batch.outputs))
    return Batch(
        batch.algorithm,
        rest[0],
        hints,
        rest[1],
        batch.lengths[:count],
        batch.node_mask[:count],
    )
