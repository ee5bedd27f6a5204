"""Training data: each seed's batch a pure function of ``(seed, step)``, drawn ahead.

Because a step's data depend on nothing but the seed and the step number, a
run resumes from a checkpoint without replaying the samplers, and the same
arguments give the same numbers.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from nar_gap.tasks.batch import Batch
from nar_gap.tasks.sampling import train_batch
from nar_gap.training.config import TrainConfig
from nar_gap.training.shapes import pad_for_training


def seed_batches(config: TrainConfig, step: int) -> Batch:
    """Every seed's batch of ``step``, padded to one bucketed shape and stacked."""
    batches = [
        train_batch(
            config.network.algorithm,
            seed,
            step,
            lengths=config.lengths_at(step),
            batch_size=config.batch_size,
            p=config.edge_probabilities,
            random_pos=config.random_pos,
        )
        for seed in config.seeds
    ]
    return pad_for_training(
        batches, config.node_buckets, config.time_buckets, config.usable_shape_buckets()
    )


def prefetch(make: Callable[[int], Any], steps: range, depth: int = 3) -> Iterator[Any]:
    """Yield ``make(step)`` for each step, computed ahead on a daemon thread.

    Sampling is Python (dm-clrs's probing); XLA releases the GIL while it
    computes, so the next batches are drawn while the current step runs.
    """
    buffer: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        try:
            for step in steps:
                if stop.is_set():
                    return
                buffer.put((step, make(step), None))
        except BaseException as error:  # surfaced in the consumer
            buffer.put((None, None, error))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    try:
        for _ in steps:
            step, item, error = buffer.get()
            if error is not None:
                raise error
            yield item
    finally:
        stop.set()
