"""A training step's batches for all seeds at once, the same bytes as ``train_batch``.

:func:`nar_gap.tasks.sampling.train_batch` draws one seed's batch through
dm-clrs: a Python loop per graph for the draws, the algorithm and its
probes.  A 128-seed step needs 128 of them (~0.7 s for BFS, 2 s for DFS on
one core) and then pads and stacks them.  Here the step is drawn whole:

1. :mod:`~nar_gap.tasks.fast_graphs` replays every seed's dm-clrs sampler
   from its raw random words, all seeds at once: the same graphs, sources
   and random ``pos``;
2. :mod:`~nar_gap.tasks.fast_traces` / :mod:`~nar_gap.tasks.fast_dfs` run
   the algorithm on all of the step's graphs as arrays, writing hints
   straight into the padded, stacked layout;
3. this module adds the inputs and wraps the arrays in a :class:`Batch`.

:func:`stacked_train_batches` equals ``pad_for_training([train_batch(seed,
step) for seed in seeds], ...)`` and :func:`train_batches` the list of
``train_batch``'s, byte for byte: every array, dtype and shape
(``tests/tasks/test_fast_sampling.py``).  Algorithms without an array
builder (``bfs_seq``), graphs above
:data:`~nar_gap.tasks.fast_graphs.MAX_NODES` nodes, and the astronomically
rare step whose random stream the replay cannot follow go through
``train_batch`` itself.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from nar_gap.tasks.batch import Batch, pad_batch, stack_seeds
from nar_gap.tasks.buckets import bucket_shape
from nar_gap.tasks.defaults import BATCH_SIZE, TRAIN_LENGTHS, TRAIN_P
from nar_gap.tasks.fast_dfs import dfs, dfs_light
from nar_gap.tasks.fast_graphs import (
    MAX_NODES,
    Graphs,
    draw_graphs,
    random_positions,
    stream_seeds,
)
from nar_gap.tasks.fast_traces import (
    Frame,
    FrameFor,
    Trace,
    bellman_ford,
    bfs,
    padded_nodes,
)
from nar_gap.tasks.sampling import (
    _RANDOM_POS_STREAM,
    _check_count,
    _check_lengths,
    _check_p,
    _check_seed,
    step_size,
    train_batch,
)
from nar_gap.tasks.specs import Stage, check_algorithm, get_spec, sampler_class
from nar_gap.tasks.vocabulary import NODE_AXES

ShapeFor = Callable[[int, int], tuple[int, int]]
"""``(nodes, steps)`` of a step's graphs and longest trace -> its padded shape."""


def _samples(values: np.ndarray) -> np.ndarray:
    """[L, B, ...] -> [M, ...] (lane-major)."""
    return values.reshape(-1, *values.shape[2:])


def _bfs(graphs: Graphs, frame_for: FrameFor) -> Trace:
    return bfs(_samples(graphs.edges), _samples(graphs.sources), frame_for)


def _bellman_ford(graphs: Graphs, frame_for: FrameFor) -> Trace:
    return bellman_ford(_samples(graphs.weights), _samples(graphs.sources), frame_for)


def _dfs(graphs: Graphs, frame_for: FrameFor) -> Trace:
    return dfs(_samples(graphs.edges), frame_for)


def _dfs_light(graphs: Graphs, frame_for: FrameFor) -> Trace:
    return dfs_light(_samples(graphs.edges), frame_for)


# The array builder of each algorithm that has one (bfs_seq has none).
_BUILDERS: dict[str, Callable[[Graphs, FrameFor], Trace]] = {
    "bfs": _bfs,
    "bellman_ford": _bellman_ford,
    "dfs": _dfs,
    "dfs_light": _dfs_light,
}

FAST_ALGORITHMS: tuple[str, ...] = tuple(_BUILDERS)
"""Algorithms whose traces are built as arrays; the others go through dm-clrs."""


def is_fast(algorithm: str, num_nodes: int) -> bool:
    """Whether a step of ``algorithm`` at ``num_nodes`` is drawn as arrays."""
    return algorithm in _BUILDERS and 2 <= num_nodes <= MAX_NODES


def _inputs(
    algorithm: str,
    graphs: Graphs,
    positions: np.ndarray,
    frame: Frame,
) -> dict[str, np.ndarray]:
    """``pos``, ``s``, ``A``, ``adj`` as dm-clrs's probes give them, padded, float32.

    ``adj`` is ``probing.graph``: ``A + I != 0``, one on the diagonal.
    """
    num_nodes = graphs.edges.shape[-1]
    weights = graphs.edges if graphs.weights is None else graphs.weights
    diagonal = np.eye(num_nodes, dtype=bool)
    values = {
        "pos": positions,
        "s": None
        if graphs.sources is None
        else graphs.sources[..., None] == np.arange(num_nodes),
        "A": weights,
        "adj": graphs.edges | diagonal,
    }
    return {
        name: padded_nodes(
            _samples(values[name]).astype(np.float32),
            frame,
            node_axes=NODE_AXES[location],
        )
        for name, (stage, location, _) in get_spec(algorithm).items()
        if stage == Stage.INPUT
    }


def even_positions(lanes: int, batch_size: int, num_nodes: int) -> np.ndarray:
    """[L, B, N] ``pos`` as dm-clrs's probes give it unrandomised: ``i / N``."""
    even = np.arange(num_nodes) * 1.0 / num_nodes
    return np.broadcast_to(even, (lanes, batch_size, num_nodes))


def _positions(
    seeds: np.ndarray, batch_size: int, num_nodes: int, random_pos: bool
) -> np.ndarray:
    """[L, B, N] ``pos``: dm-clrs's ``i / N``, or ``process_random_pos``'s uniforms."""
    if random_pos:
        return random_positions(seeds, _RANDOM_POS_STREAM, batch_size, num_nodes)
    return even_positions(len(seeds), batch_size, num_nodes)


@dataclasses.dataclass(frozen=True)
class Step:
    """One training step of every seed, its arguments checked once.

    What :func:`stacked_train_batches` and
    :func:`nar_gap.tasks.mixing.stacked_mixed_batches` both draw from: the
    same checks, sizes and fallback, whatever else the step mixes in.
    """

    algorithm: str
    seeds: tuple[int, ...]
    step: int
    lengths: tuple[int, ...]
    batch_size: int
    p: tuple[float, ...]
    random_pos: bool
    shape_for: ShapeFor

    @classmethod
    def checked(
        cls,
        algorithm: str,
        seeds: Sequence[int],
        step: int,
        *,
        lengths: Sequence[int],
        batch_size: int,
        p: Sequence[float],
        random_pos: bool,
        shape_for: ShapeFor | None,
    ) -> Step:
        """The step, or a one-line ValueError naming the bad argument."""
        check_algorithm(algorithm)
        seeds = tuple(_check_seed(seed) for seed in seeds)
        if not seeds:
            raise ValueError("expected at least one seed, found none")
        return cls(
            algorithm=algorithm,
            seeds=seeds,
            step=_check_count(step, "step", 0),
            lengths=_check_lengths(lengths),
            batch_size=_check_count(batch_size, "batch_size", 1),
            p=_check_p(p),
            random_pos=random_pos,
            shape_for=shape_for or (lambda nodes, steps: (nodes, steps)),
        )

    @property
    def num_nodes(self) -> int:
        """The step's graph size (:func:`~nar_gap.tasks.sampling.step_size`)."""
        return step_size(self.lengths, self.step)

    @property
    def drawn_whole(self) -> bool:
        """Whether the step can be traced as arrays (else each seed via dm-clrs)."""
        return is_fast(self.algorithm, self.num_nodes) and agrees_with_dm_clrs(
            self.algorithm
        )

    @property
    def options(self) -> dict[str, Any]:
        """``train_batch``'s keyword arguments for each seed of the step."""
        return {
            "lengths": self.lengths,
            "batch_size": self.batch_size,
            "p": self.p,
            "random_pos": self.random_pos,
        }


def sampled_graphs(step: Step, batch_size: int) -> tuple[Graphs, np.ndarray] | None:
    """Each seed's ``batch_size`` sampled graphs of ``step``, and their ``pos``.

    What ``train_batch`` draws from dm-clrs's sampler, replayed as arrays,
    ``pos`` [L, B, N]; None if a seed's stream was not followed (the caller
    draws through ``train_batch`` instead).
    """
    sampler_seeds = stream_seeds(step.seeds, step.step)
    sampler = sampler_class(step.algorithm).__name__
    graphs = draw_graphs(sampler, sampler_seeds, step.num_nodes, batch_size, step.p)
    if not graphs.exact.all():
        return None
    return graphs, _positions(
        sampler_seeds, batch_size, step.num_nodes, step.random_pos
    )


def traced_batch(
    algorithm: str, graphs: Graphs, positions: np.ndarray, shape_for: ShapeFor
) -> Batch:
    """The stacked batch of ``graphs`` ([L, B] of them, ``pos`` ``positions``).

    Hints and outputs are the array builders' traces of the graphs, inputs
    dm-clrs's probes of them, everything padded to ``shape_for(N, longest
    trace)``: what padding and stacking dm-clrs's batch of each lane gives,
    whoever drew the graphs.
    """
    lanes, batch_size, num_nodes = graphs.edges.shape[:3]

    def frame_for(num_steps: int) -> Frame:
        return Frame(lanes, batch_size, *shape_for(num_nodes, num_steps))

    trace = _BUILDERS[algorithm](graphs, frame_for)
    frame = trace.frame
    spec = get_spec(algorithm)
    node_mask = np.zeros((lanes, batch_size, frame.num_nodes), dtype=bool)
    node_mask[..., :num_nodes] = True
    return Batch(
        algorithm=algorithm,
        inputs=_inputs(algorithm, graphs, positions, frame),
        hints={
            name: trace.hints[name]
            for name, probe in spec.items()
            if probe[0] == Stage.HINT
        },
        outputs={
            name: trace.outputs[name]
            for name, probe in spec.items()
            if probe[0] == Stage.OUTPUT
        },
        lengths=trace.lengths,
        node_mask=node_mask,
    )


def _draw_stacked(step: Step) -> Batch | None:
    """The step as one stacked batch, or None if a seed's stream was not followed."""
    drawn = sampled_graphs(step, step.batch_size)
    return (
        None if drawn is None else traced_batch(step.algorithm, *drawn, step.shape_for)
    )


def _same_bytes(first: Batch, second: Batch) -> bool:
    """Same probes in the same order, and every array the same dtype, shape, bytes."""
    groups = ("inputs", "hints", "outputs")
    arrays = [
        (getattr(first, group)[name], getattr(second, group).get(name))
        for group in groups
        for name in getattr(first, group)
    ]
    arrays += [(first.lengths, second.lengths), (first.node_mask, second.node_mask)]
    return all(
        list(getattr(first, group)) == list(getattr(second, group)) for group in groups
    ) and all(
        b is not None
        and (a.dtype, a.shape) == (b.dtype, b.shape)
        and a.tobytes() == b.tobytes()
        for a, b in arrays
    )


@functools.cache
def agrees_with_dm_clrs(algorithm: str) -> bool:
    """Whether the array path gives dm-clrs's bytes in this process, on a small step.

    Checked once per process and algorithm (a few ms), before the path is
    trusted: the tests compare many steps, but a process may run another
    numpy or dm-clrs than they did.  If it disagrees, a warning says so and
    :func:`stacked_train_batches` goes through ``train_batch`` instead.
    """
    step = Step(
        algorithm=algorithm,
        seeds=(0, 2**32 - 1),
        step=0,
        lengths=(5,),
        batch_size=4,
        p=(0.3, 0.8),
        random_pos=True,
        shape_for=lambda n, t: (n, t),
    )
    fast = _draw_stacked(step)
    agree = fast is None or all(
        _same_bytes(
            unstack_lane(fast, lane), train_batch(algorithm, seed, 0, **step.options)
        )
        for lane, seed in enumerate(step.seeds)
    )
    if not agree:
        warnings.warn(
            f"nar_gap's array sampling of {algorithm} differs from dm-clrs's in this "
            "environment (another numpy or dm-clrs than tested?); drawing every "
            "batch through dm-clrs instead, which is 30-50x slower",
            RuntimeWarning,
            stacklevel=2,
        )
    return agree


def stacked_train_batches(
    algorithm: str,
    seeds: Sequence[int],
    step: int,
    *,
    lengths: Sequence[int] = TRAIN_LENGTHS,
    batch_size: int = BATCH_SIZE,
    p: Sequence[float] = TRAIN_P,
    random_pos: bool = True,
    shape_for: ShapeFor | None = None,
) -> Batch:
    """Every seed's :func:`train_batch` of ``step``, padded to one shape and stacked.

    Equals ``stack_seeds([pad_batch(train_batch(algorithm, seed, step, ...),
    *shape) for seed in seeds])`` byte for byte, where ``shape =
    shape_for(N, longest trace)`` (default: no padding beyond the longest
    trace), which is what the trainer's ``pad_for_training`` computes when
    ``shape_for`` is its bucketing.

    Args:
        algorithm: one of :data:`nar_gap.tasks.specs.ALGORITHMS`.
        seeds: the seeds, one batch each (distinct or not).
        step: the step, >= 0.
        lengths: graph sizes, cycled one step each (:func:`train_batch`'s).
        batch_size: samples per seed.
        p: edge probabilities.
        random_pos: randomise ``pos`` as :func:`train_batch` does.
        shape_for: ``(nodes, steps) -> (padded nodes, padded steps)``, each at
            least its argument (e.g. :func:`nar_gap.tasks.buckets.bucket_shape`
            with a run's buckets).

    Returns:
        A batch whose leaves have a leading seed axis S = ``len(seeds)``.
    """
    checked = Step.checked(
        algorithm,
        seeds,
        step,
        lengths=lengths,
        batch_size=batch_size,
        p=p,
        random_pos=random_pos,
        shape_for=shape_for,
    )
    return stacked_step(checked)


def stacked_step(step: Step) -> Batch:
    """:func:`stacked_train_batches` of a checked :class:`Step`."""
    stacked = _draw_stacked(step) if step.drawn_whole else None
    if stacked is not None:
        return stacked
    batches = [
        train_batch(step.algorithm, seed, step.step, **step.options)
        for seed in step.seeds
    ]
    return padded_stack(batches, step.shape_for)


def padded_stack(batches: Sequence[Batch], shape_for: ShapeFor) -> Batch:
    """Seeds' batches of one size, padded to ``shape_for(N, longest trace)``.

    Stacked: what the array path gives, for the steps drawn through dm-clrs.
    """
    nodes, steps = shape_for(
        batches[0].num_nodes, max(batch.num_steps for batch in batches)
    )
    return stack_seeds(
        [pad_batch(b, num_nodes=nodes, num_steps=steps) for b in batches]
    )


def unstack_lane(stacked: Batch, lane: int) -> Batch:
    """Seed ``lane``'s batch of an unpadded stack, cut to its own longest trace.

    What ``train_batch`` returns for that seed, when ``stacked`` came from
    :func:`stacked_train_batches` without padding.
    """
    lengths = stacked.lengths[lane]
    steps = int(lengths.max())
    return Batch(
        algorithm=stacked.algorithm,
        inputs={name: value[lane] for name, value in stacked.inputs.items()},
        hints={name: value[lane, :steps] for name, value in stacked.hints.items()},
        outputs={name: value[lane] for name, value in stacked.outputs.items()},
        lengths=lengths,
        node_mask=stacked.node_mask[lane],
    )


def train_batches(
    algorithm: str,
    seeds: Sequence[int],
    step: int,
    *,
    lengths: Sequence[int] = TRAIN_LENGTHS,
    batch_size: int = BATCH_SIZE,
    p: Sequence[float] = TRAIN_P,
    random_pos: bool = True,
) -> list[Batch]:
    """``[train_batch(algorithm, seed, step, ...) for seed in seeds]``, drawn at once.

    The same bytes as that list (every array, dtype and shape); see
    :func:`stacked_train_batches`.
    """
    stacked = stacked_train_batches(
        algorithm,
        seeds,
        step,
        lengths=lengths,
        batch_size=batch_size,
        p=p,
        random_pos=random_pos,
    )
    return [unstack_lane(stacked, lane) for lane in range(len(seeds))]


def bucketed(
    shape_buckets: Sequence[tuple[int, int]],
    node_buckets: Sequence[int],
    time_buckets: Sequence[int] = (),
) -> ShapeFor:
    """A picklable ``shape_for`` that pads as the trainer's ``pad_for_training``."""
    return functools.partial(
        bucket_shape,
        shape_buckets=tuple(shape_buckets),
        node_buckets=tuple(node_buckets),
        time_buckets=tuple(time_buckets),
    )
