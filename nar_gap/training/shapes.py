"""Training shapes: a step's seeds padded to one bucketed shape and stacked.

A step's batches are padded to the cheapest of a few ``(nodes, steps)`` shapes
that holds them (:func:`~nar_gap.tasks.buckets.bucket_shape`); batches
that none holds fall back to ``node_buckets`` and a ladder of trace lengths.
So a run compiles a handful of times instead of once per (size, length).
Padded nodes and steps are masked out exactly, so a bucketed batch computes
what the unpadded one does.
"""

from __future__ import annotations

from collections.abc import Sequence

from nar_gap.tasks.batch import Batch, pad_batch, stack_seeds
from nar_gap.tasks.buckets import bucket_shape


def pad_for_training(
    batches: Sequence[Batch],
    node_buckets: Sequence[int],
    time_buckets: Sequence[int] = (),
    shape_buckets: Sequence[tuple[int, int]] = (),
) -> Batch:
    """Pad each seed's batch to a common bucketed shape and stack along axis 0."""
    num_nodes, num_steps = bucket_shape(
        max(b.num_nodes for b in batches),
        max(b.num_steps for b in batches),
        shape_buckets,
        node_buckets,
        time_buckets,
    )
    padded = [pad_batch(b, num_nodes=num_nodes, num_steps=num_steps) for b in batches]
    return stack_seeds(padded)
