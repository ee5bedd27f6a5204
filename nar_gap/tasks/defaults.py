"""dm-clrs run.py's defaults, the paper's training protocol, written once.

The training data (graph sizes and edge probabilities), the batch, the
network's width, the optimiser and the number of steps: every configuration
(:class:`~nar_gap.model.config.NetworkConfig`,
:class:`~nar_gap.training.TrainConfig`) and the ``paper`` profile read them
from here.  Imports nothing, so configurations (and ``nar-gap --help``) can
read these without loading dm-clrs.
"""

from __future__ import annotations

TRAIN_LENGTHS: tuple[int, ...] = (4, 7, 11, 13, 16)
"""Graph sizes of the training stream, one batch each in turn (dm-clrs run.py)."""

TRAIN_P: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(1, 10))
"""Edge probabilities of the training stream; run.py's 0.1..0.9 grid, rounded."""

BATCH_SIZE = 32
"""Samples per training step and seed (run.py's ``batch_size``)."""

HIDDEN_SIZE = 128
"""The processor's width D (run.py's ``hidden_size``; the paper's baselines)."""

LEARNING_RATE = 1e-3
"""Adam's step size (run.py's ``learning_rate``; the paper's Appendix A)."""

GRAD_CLIP_NORM = 1.0
"""Global gradient norm clipped to before Adam (run.py's ``grad_clip_max_norm``)."""

TRAIN_STEPS = 10_000
"""Training steps per seed (run.py's ``train_steps``; the paper's)."""
