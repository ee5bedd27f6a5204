"""CLRS batches sampled on the fly: fixed batches, CLRS-30 splits, the training stream.

Seeded, regenerated with dm-clrs's own samplers and seeds, never downloaded:

- :func:`sample_batch`: one fixed batch from a dm-clrs sampler;
- :func:`clrs_split`: the CLRS-30 train/val/test split, regenerated exactly as
  dm-clrs generates its stored dataset; :func:`eval_batch` the same recipe at
  another size;
- :func:`train_batch` and :class:`TrainStream`: the paper's on-the-fly
  training stream for one seed (dm-clrs run.py's sizes and edge probabilities).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np

from nar_gap.tasks._clrs import clrs, clrs_samplers, clrs_specs
from nar_gap.tasks.algorithms import reference_algorithm
from nar_gap.tasks.batch import Batch, first_graphs
from nar_gap.tasks.defaults import BATCH_SIZE, TRAIN_LENGTHS, TRAIN_P
from nar_gap.tasks.feedback import from_clrs_feedback
from nar_gap.tasks.specs import (
    check_algorithm,
    get_spec,
    sampler_class,
)

Split = Literal["train", "val", "test"]

# Mixed into the seed of sample_batch's random_pos stream, so that the pos
# uniforms do not replay the graph sampler's own RandomState(seed) stream.
_RANDOM_POS_STREAM = 0x706F73  # "pos"

_MAX_SEED = 2**32  # numpy RandomState accepts seeds in [0, 2**32)


# ------------------------------------------------------------------------ sampling


def _check_seed(seed: int, what: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValueError(f"expected an integer {what}, found {seed!r}")
    if not 0 <= seed < _MAX_SEED:
        raise ValueError(
            f"expected {what} in [0, 2**32) (numpy RandomState), found {seed}"
        )
    return int(seed)


def _check_count(value: int, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"expected an integer {what}, found {value!r}")
    if value < minimum:
        raise ValueError(f"expected {what} >= {minimum}, found {value}")
    return int(value)


def _check_num_nodes(num_nodes: int) -> int:
    # dm-clrs's probing.finalize squeezes size-1 axes, so its samplers emit broken
    # shapes for one-node graphs; batch_from_graph repairs those, samplers cannot.
    return _check_count(num_nodes, "num_nodes (dm-clrs samplers need 2 or more)", 2)


def _check_lengths(lengths: Sequence[int]) -> tuple[int, ...]:
    checked = tuple(_check_num_nodes(length) for length in lengths)
    if not checked:
        raise ValueError("expected at least one training length, found none")
    return checked


def _check_p(p: Sequence[float]) -> tuple[float, ...]:
    values = tuple(float(x) for x in p)
    if not values or not all(0.0 <= x <= 1.0 for x in values):
        raise ValueError(
            f"expected a non-empty tuple of edge probabilities in [0, 1], found {p!r}"
        )
    return values


def _make_sampler(
    algorithm: str,
    num_samples: int,
    num_nodes: int,
    seed: int,
    p: tuple[float, ...] | None,
) -> clrs_samplers.Sampler:
    """A dm-clrs sampler for ``algorithm``, built as ``clrs.build_sampler`` builds it.

    Built from the class directly so the variants can pass our algorithm function
    and spec; for dm-clrs's algorithms the result is identical to build_sampler's.
    ``p=None`` keeps the sampler's default (0.5,); it draws the same random numbers.
    """
    kwargs = {} if p is None else {"p": p}
    return sampler_class(algorithm)(
        reference_algorithm(algorithm),
        get_spec(algorithm),
        num_samples,
        seed=seed,
        track_max_steps=False,
        length=num_nodes,
        **kwargs,
    )


def _randomize_pos(feedback: Any, rng: np.random.RandomState) -> Any:
    """dm-clrs's ``process_random_pos`` applied to one feedback.

    Calls the library function itself so the semantics are exactly run.py's:
    per sample, N uniforms from ``rng``, sorted within each zero-delimited segment
    of ``pos`` (one segment for graphs), so node order is kept and spacing is
    random. It writes the new ``pos`` into the feedback's DataPoint in place; our
    callers own their feedback.
    """
    return next(clrs.process_random_pos(iter([feedback]), rng))


def _random_pos_rng(seed: int) -> np.random.RandomState:
    """sample_batch's random_pos stream: seeded by ``seed``, but not the sampler's."""
    return np.random.RandomState([seed, _RANDOM_POS_STREAM])


def sample_batch(
    algorithm: str,
    num_nodes: int,
    batch_size: int,
    seed: int,
    *,
    p: Sequence[float] = (0.5,),
    random_pos: bool = False,
) -> Batch:
    """One fixed batch drawn by a dm-clrs sampler.

    The sampler is built with ``num_samples=batch_size`` and read whole with
    ``next()``, which returns the samples in generation order (``next(batch_size)``
    would instead draw ``batch_size`` of them with replacement). So this equals
    ``clrs.build_sampler(algorithm, num_samples=batch_size, seed=seed,
    length=num_nodes, p=p).next()`` for dm-clrs's algorithms; the variants use the
    sampler of the algorithm they vary with our reference function.

    Args:
        algorithm: one of :data:`nar_gap.tasks.specs.ALGORITHMS`.
        num_nodes: N, at least 2.
        batch_size: B, at least 1.
        seed: the sampler's RandomState seed, in [0, 2**32).
        p: edge probabilities; each sample draws one (dm-clrs's default (0.5,)).
        random_pos: replace ``pos`` by sorted uniforms as ``clrs.process_random_pos``
            does, drawn from a RandomState derived from ``seed`` (but distinct from
            the sampler's own stream).

    Returns:
        A batch with hints zero-padded to the longest sample and no padded nodes.
    """
    check_algorithm(algorithm)
    sampler = _make_sampler(
        algorithm,
        _check_count(batch_size, "batch_size", 1),
        _check_num_nodes(num_nodes),
        _check_seed(seed),
        _check_p(p),
    )
    feedback = sampler.next()
    if random_pos:
        feedback = _randomize_pos(feedback, _random_pos_rng(seed))
    return from_clrs_feedback(feedback, algorithm)


def clrs_split(algorithm: str, split: Split) -> Batch:
    """The CLRS-30 split, regenerated exactly as dm-clrs generates its stored dataset.

    Follows ``clrs/_src/dataset.py``: seed, length and num_samples from
    ``clrs.CLRS30[split]`` (train: 1000 samples of N = 16, seed 1; val: 32, N = 16,
    seed 2; test: 32, N = 64, seed 3), times the per-algorithm multiplier for val
    and test (1 for these five), the sampler's default ``p``, no ``random_pos``,
    read whole with ``next()``. Nothing is downloaded. The variants have no stored
    dataset; they get the same recipe with their base algorithm's sampler, hence
    the same graphs and sources.

    Note: the train split runs the algorithm 1000 times (slow for ``bfs_seq``).

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
        ValueError: if ``split`` is not train, val or test.
    """
    check_algorithm(algorithm)
    if split not in clrs.CLRS30:
        raise ValueError(f"expected split 'train', 'val' or 'test', found {split!r}")
    config = clrs.CLRS30[split]
    num_samples = config["num_samples"]
    if split != "train":
        settings = clrs_specs.CLRS_30_ALGS_SETTINGS.get(algorithm, {})
        num_samples *= settings.get("num_samples_multiplier", 1)
    sampler = _make_sampler(
        algorithm, num_samples, config["length"], config["seed"], None
    )
    return from_clrs_feedback(sampler.next(), algorithm)


def step_size(lengths: Sequence[int], step: int) -> int:
    """The graph size training step ``step`` draws: ``lengths`` cycled one per step."""
    return tuple(lengths)[step % len(lengths)]


def train_batch(
    algorithm: str,
    seed: int,
    step: int,
    *,
    lengths: Sequence[int] = TRAIN_LENGTHS,
    batch_size: int = BATCH_SIZE,
    p: Sequence[float] = TRAIN_P,
    random_pos: bool = True,
) -> Batch:
    """Batch number ``step`` of seed ``seed``'s training data: a pure function of both.

    The paper's training data (dm-clrs ``run.py``): graph sizes cycle through
    ``lengths`` one batch each, samples are drawn on the fly by the dm-clrs
    sampler (``num_samples=-1``, ``track_max_steps=False``: each batch is padded
    in time only to its own longest sample; the trainer buckets shapes), one
    edge probability per sample from ``p``, and ``pos`` randomised as
    ``clrs.process_random_pos`` does.  Unlike run.py's stateful samplers, the
    sampler of every step is seeded from ``SeedSequence([seed, step])``, so step
    ``k`` can be drawn without drawing steps ``0 .. k-1``: a run resumes from a
    checkpoint in O(1) and any step can be inspected on its own.

    run.py's ``enforce_permutations`` and ``enforce_pred_as_input`` are left out:
    they rewrite ``should_be_permutation`` probes and ``pred_h`` hints, which none
    of the five algorithms has, so they would change nothing.

    Args:
        algorithm: one of :data:`nar_gap.tasks.specs.ALGORITHMS`.
        seed: the training seed, in [0, 2**32).
        step: the step index, >= 0.
        lengths: graph sizes, cycled one batch each (run.py's train_lengths).
        batch_size: samples per batch (run.py's default 32).
        p: edge probabilities (run.py's 0.1..0.9 grid).
        random_pos: randomize ``pos`` (run.py's default for training).
    """
    check_algorithm(algorithm)
    seed = _check_seed(seed)
    step = _check_count(step, "step", 0)
    lengths = _check_lengths(lengths)
    batch_size = _check_count(batch_size, "batch_size", 1)
    stream_seed = int(np.random.SeedSequence([seed, step]).generate_state(1)[0])
    sampler = _make_sampler(
        algorithm, -1, step_size(lengths, step), stream_seed, _check_p(p)
    )
    feedback = sampler.next(batch_size)
    if random_pos:
        feedback = _randomize_pos(feedback, _random_pos_rng(stream_seed))
    return from_clrs_feedback(feedback, algorithm)


class TrainStream(Iterator[Batch]):
    """One seed's training batches in order: ``train_batch(seed, 0)``, ``(seed, 1)``..

    Args are :func:`train_batch`'s; ``start`` is the first step to yield.
    """

    def __init__(
        self,
        algorithm: str,
        seed: int,
        *,
        lengths: Sequence[int] = TRAIN_LENGTHS,
        batch_size: int = BATCH_SIZE,
        p: Sequence[float] = TRAIN_P,
        random_pos: bool = True,
        start: int = 0,
    ) -> None:
        """Validates the arguments (by drawing nothing yet)."""
        self.algorithm = check_algorithm(algorithm)
        self.seed = _check_seed(seed)
        self.lengths = _check_lengths(lengths)
        self.batch_size = _check_count(batch_size, "batch_size", 1)
        self.p = _check_p(p)
        self.random_pos = bool(random_pos)
        self.step = _check_count(start, "start", 0)

    def __iter__(self) -> TrainStream:
        """The stream is its own iterator: it is endless and stateful."""
        return self

    def __next__(self) -> Batch:
        """The batch of the current step; then move to the next step."""
        batch = train_batch(
            self.algorithm,
            self.seed,
            self.step,
            lengths=self.lengths,
            batch_size=self.batch_size,
            p=self.p,
            random_pos=self.random_pos,
        )
        self.step += 1
        return batch


def eval_batch(algorithm: str, split: str, num_nodes: int, graphs: int = 0) -> Batch:
    """CLRS-30's val (N = 16) / test (N = 64) split, or the same recipe at N.

    ``graphs`` > 0 keeps only the split's first graphs (a dry run's cut
    evaluation: the same graphs and trace length, fewer of them).
    """
    recipe = clrs.CLRS30[split]
    if num_nodes == recipe["length"]:
        batch = clrs_split(algorithm, split)
    else:
        batch = sample_batch(
            algorithm, num_nodes, recipe["num_samples"], recipe["seed"]
        )
    return first_graphs(batch, graphs) if graphs > 0 else batch
