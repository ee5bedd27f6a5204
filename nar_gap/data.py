"""The data API in one place: CLRS batches, sampled on the fly, and your graphs.

``from nar_gap import data`` then ``data.sample_batch(...)``: the names below
are re-exported from the tasks layer, where each lives (``batch.py``,
``sampling.py``, ``feedback.py``, ``graphs.py``).
"""

from nar_gap.tasks.batch import Batch, concat_batches, pad_batch, stack_seeds
from nar_gap.tasks.buckets import bucket_nodes, bucket_steps
from nar_gap.tasks.feedback import from_clrs_feedback, to_clrs_feedback
from nar_gap.tasks.graphs import GraphInputError, batch_from_graph, read_edge_list
from nar_gap.tasks.sampling import (
    TRAIN_LENGTHS,
    TRAIN_P,
    Split,
    TrainStream,
    clrs_split,
    eval_batch,
    sample_batch,
    train_batch,
)

__all__ = [
    "TRAIN_LENGTHS",
    "TRAIN_P",
    "Batch",
    "GraphInputError",
    "Split",
    "TrainStream",
    "batch_from_graph",
    "bucket_nodes",
    "bucket_steps",
    "clrs_split",
    "concat_batches",
    "eval_batch",
    "from_clrs_feedback",
    "pad_batch",
    "read_edge_list",
    "sample_batch",
    "stack_seeds",
    "to_clrs_feedback",
    "train_batch",
]
