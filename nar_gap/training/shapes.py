"""Training shapes: a step's seeds padded to one bucketed shape and stacked.

Graph sizes are padded up to ``node_buckets`` and trace lengths to a short
ladder (:func:`~nar_gap.benchmark.batch.bucket_nodes`,
:func:`~nar_gap.benchmark.batch.bucket_steps`), so a run compiles a handful of
times instead of once per (size, length).  Padded nodes and steps are masked
out exactly, so a bucketed batch computes what the unpadded one does.
"""

from __future__ import annotations

from collections.abc import Sequence

from nar_gap.benchmark.batch import Batch, pad_batch, stack_seeds
from nar_gap.benchmark.shapes import bucket_nodes, bucket_steps


def pad_for_training(
    batches: Sequence[Batch],
    node_buckets: Sequence[int],
    time_buckets: Sequence[int] = (),
) -> Batch:
    """Pad each seed's batch to a common bucketed shape and stack along axis 0."""
    num_nodes = bucket_nodes(max(b.num_nodes for b in batches), node_buckets)
    num_steps = bucket_steps(max(b.num_steps for b in batches), time_buckets)
    padded = [pad_batch(b, num_nodes=num_nodes, num_steps=num_steps) for b in batches]
    return stack_seeds(padded)
