"""Training data: each seed's batch a pure function of ``(seed, step)``, drawn ahead.

Because a step's data depend on nothing but the seed and the step number, a
run resumes from a checkpoint without replaying the samplers, and the same
arguments give the same numbers.  For the same reason a step can be drawn
anywhere: :func:`draw_ahead` draws the coming steps on a thread, or, for
long runs, on worker processes (:mod:`nar_gap.tasks.prefetch`).

Each step is drawn whole, every seed at once, by
:func:`nar_gap.tasks.mixing.stacked_mixed_batches`: the same bytes as
padding and stacking each seed's :func:`~nar_gap.tasks.mixing.mixed_train_batch`
(:func:`~nar_gap.tasks.sampling.train_batch` when no families are mixed in),
30-50x faster.  Two environment switches, read when a run starts, change
how (never what) is drawn:

- ``NAR_GAP_FAST_SAMPLING=0``: each seed's batch through dm-clrs, as before
  (for debugging and for comparing);
- ``NAR_GAP_SAMPLING_WORKERS=K``: K worker processes (0: the thread);
  default ``auto``, see :func:`sampling_workers`.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from nar_gap.system.provenance import usable_cores
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.fast_sampling import bucketed
from nar_gap.tasks.mixing import mixed_train_batch, stacked_mixed_batches
from nar_gap.tasks.prefetch import prefetch_in_processes
from nar_gap.training.config import TrainConfig
from nar_gap.training.shapes import pad_for_training

FAST_SAMPLING_ENV = "NAR_GAP_FAST_SAMPLING"
SAMPLING_WORKERS_ENV = "NAR_GAP_SAMPLING_WORKERS"

# Below this many seed-steps a run draws its data on the thread: the fast
# path draws a seed-step in 0.1-0.4 ms (BFS to DFS), so such a run spends
# 5-20 s drawing in all, while the workers cost ~1-2 s to start, and memory.
WORKER_MIN_SEED_STEPS = 50_000
MAX_WORKERS = 16  # a GPU node's cores; more would only hold finished steps


def fast_sampling() -> bool:
    """Whether steps are drawn whole (``NAR_GAP_FAST_SAMPLING`` is not ``0``)."""
    return os.environ.get(FAST_SAMPLING_ENV, "1").strip() != "0"


def seed_batches(config: TrainConfig, step: int, fast: bool | None = None) -> Batch:
    """Every seed's batch of ``step``, padded to one bucketed shape and stacked.

    ``fast`` (default: :func:`fast_sampling`) draws the step whole; the bytes
    are the same either way (``tests/tasks/test_fast_sampling.py``,
    ``tests/training/test_feed.py``).
    """
    if fast is None:
        fast = fast_sampling()
    nodes, times = config.node_buckets, config.time_buckets
    shapes = config.usable_shape_buckets()
    if not fast:
        batches = [drawn_batches(config, seed, [step])[0] for seed in config.seeds]
        return pad_for_training(batches, nodes, times, shapes)
    return stacked_mixed_batches(
        config.network.algorithm,
        config.seeds,
        step,
        families=config.train_families,
        share=config.family_share,
        shape_for=bucketed(shapes, nodes, times),
        **_draw_options(config, step),
    )


def _draw_options(config: TrainConfig, step: int) -> dict[str, Any]:
    """The sampler's options at ``step``: sizes, batch size, ``p``, ``pos``."""
    return {
        "lengths": config.lengths_at(step),
        "batch_size": config.batch_size,
        "p": config.edge_probabilities,
        "random_pos": config.random_pos,
    }


def drawn_batches(config: TrainConfig, seed: int, steps: Sequence[int]) -> list[Batch]:
    """The batches seed ``seed``'s training drew at ``steps``, each at its own shape.

    What a model was trained on, for measuring the training distribution
    itself (how long its traces ask a node to hold a pointer, say): the
    same draws as :func:`seed_batches` (the step's sizes, ``config``'s edge
    probabilities and ``pos``, its share of ``train_families``), not padded
    to the trainer's buckets.
    """
    return [
        mixed_train_batch(
            config.network.algorithm,
            seed,
            step,
            families=config.train_families,
            share=config.family_share,
            **_draw_options(config, step),
        )
        for step in steps
    ]


def sampling_workers(config: TrainConfig, num_steps: int) -> int:
    """How many worker processes draw a run's steps (0: a thread).

    ``NAR_GAP_SAMPLING_WORKERS`` decides if set to a number.  Otherwise
    (``auto``): none for runs under :data:`WORKER_MIN_SEED_STEPS`
    seed-steps, or off POSIX; else every usable core but the trainer's, at
    most :data:`MAX_WORKERS`.
    """
    value = os.environ.get(SAMPLING_WORKERS_ENV, "auto").strip().lower()
    if value != "auto":
        try:
            return max(0, int(value))
        except ValueError:
            raise ValueError(
                f"{SAMPLING_WORKERS_ENV} must be a number of workers or 'auto', "
                f"got {value!r}"
            ) from None
    if os.name != "posix" or len(config.seeds) * num_steps < WORKER_MIN_SEED_STEPS:
        return 0
    return max(0, min(usable_cores() - 1, MAX_WORKERS))


def draw_ahead(config: TrainConfig, steps: Sequence[int]) -> Iterator[Batch]:
    """:func:`seed_batches` of each step, in order, drawn ahead of the trainer.

    On :func:`sampling_workers` processes, or on a thread when that is 0.
    """
    make = functools.partial(seed_batches, config, fast=fast_sampling())
    workers = sampling_workers(config, len(steps))
    if workers:
        return prefetch_in_processes(make, steps, workers)
    return prefetch(make, steps)


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
