"""dm-clrs run.py's training data, written once: graph sizes and edge probabilities.

Imports nothing, so configurations (and ``nar-gap --help``) can read these
without loading dm-clrs and TensorFlow.
"""

from __future__ import annotations

TRAIN_LENGTHS: tuple[int, ...] = (4, 7, 11, 13, 16)
"""Graph sizes of the training stream, one batch each in turn (dm-clrs run.py)."""

TRAIN_P: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(1, 10))
"""Edge probabilities of the training stream; run.py's 0.1..0.9 grid, rounded."""
