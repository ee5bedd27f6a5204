"""dm-clrs samplers -> :class:`Batch`: seeded, regenerated on the fly, never downloaded.

A :class:`Batch` is one batch in CLRS encoding, translated once at this boundary
from dm-clrs's ``Feedback`` (lists of ``DataPoint``, float64, pointers as float
indices) into dicts of float32 arrays with int32 pointers, keyed and ordered as
:func:`nar_gap.specs.get_spec`. Everything here is numpy; the network jits on top.

Shape glossary: B batch, N nodes, T hint steps, C categories, S seeds.

Ways to make batches:

- :func:`sample_batch`: one fixed batch from a dm-clrs sampler;
- :func:`clrs_split`: the CLRS-30 train/val/test split, regenerated exactly as
  dm-clrs generates its stored dataset;
- :class:`TrainStream`: the paper's on-the-fly training stream for one seed;
- :func:`batch_from_graph`: a user's weight matrix, run through the reference;

and to shape them: :func:`pad_batch`, :func:`concat_batches`, :func:`stack_seeds`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import jax
import numpy as np

from nar_gap._clrs import clrs, clrs_probing, clrs_samplers, clrs_specs
from nar_gap.specs import (
    ProbeSpec,
    Spec,
    check_algorithm,
    get_spec,
    has_source,
    reference_algorithm,
    sampler_class,
)

_Stage = clrs_specs.Stage
_Location = clrs_specs.Location
_Type = clrs_specs.Type

Split = Literal["train", "val", "test"]

TRAIN_LENGTHS: tuple[int, ...] = (4, 7, 11, 13, 16)
"""Graph sizes of the training stream, one batch each in turn (dm-clrs run.py)."""

TRAIN_P: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(1, 10))
"""Edge probabilities of the training stream; run.py's 0.1..0.9 grid, rounded."""

# Algorithms whose samplers draw unweighted 0/1 graphs (an int64 `A` in dm-clrs).
_UNWEIGHTED = frozenset({"bfs", "bfs_seq", "dfs", "dfs_light"})

# Mixed into the seed of sample_batch's random_pos stream, so that the pos
# uniforms do not replay the graph sampler's own RandomState(seed) stream.
_RANDOM_POS_STREAM = 0x706F73  # "pos"

_MAX_SEED = 2**32  # numpy RandomState accepts seeds in [0, 2**32)

_NODE_AXES = {_Location.NODE: 1, _Location.EDGE: 2, _Location.GRAPH: 0}
_PADDABLE_TYPES = frozenset(
    {_Type.SCALAR, _Type.MASK, _Type.MASK_ONE, _Type.CATEGORICAL, _Type.POINTER}
)
_GROUPS = ("inputs", "hints", "outputs")
_GROUP_STAGE = {"inputs": _Stage.INPUT, "hints": _Stage.HINT, "outputs": _Stage.OUTPUT}


# ----------------------------------------------------------------------------- Batch


@dataclasses.dataclass(frozen=True, eq=False)
class Batch:
    """One batch in CLRS encoding, time-major hints.

    Registered as a JAX pytree: every array in the three dicts, ``lengths`` and
    ``node_mask`` is a leaf; ``algorithm`` and the dict keys are static aux data.
    The flattening keeps the keys in spec order (JAX's own dict flattening would
    sort them, so ``tree_map`` would reorder ``pos, s, A, adj``), and names leaves
    ``.inputs['pos']`` etc. in key paths.

    dtypes: float32 everywhere except pointer-type probes (int32 node indices),
    ``lengths`` (int32) and ``node_mask`` (bool). Categorical probes keep their
    one-hot last axis C.

    Attributes:
        algorithm: one of :data:`nar_gap.specs.ALGORITHMS`.
        inputs: ``[B, ...]`` per input probe, in spec order.
        hints: ``[T, B, ...]`` per hint probe, in spec order; zero past ``lengths``.
        outputs: ``[B, ...]`` per output probe, in spec order.
        lengths: ``[B]`` number of hint steps of each sample (>= 1).
        node_mask: ``[B, N]`` True for real nodes, False for padding.

    After :func:`stack_seeds` every leaf has an extra leading seed axis S; the
    properties below read shapes from the trailing axes so they still hold.
    """

    algorithm: str
    inputs: dict[str, np.ndarray]
    hints: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    lengths: np.ndarray
    node_mask: np.ndarray

    @property
    def batch_size(self) -> int:
        """B, the number of samples."""
        return self.node_mask.shape[-2]

    @property
    def num_nodes(self) -> int:
        """N, the (padded) number of nodes."""
        return self.node_mask.shape[-1]

    @property
    def num_steps(self) -> int:
        """T, the (padded) number of hint steps."""
        first_hint = next(iter(self.hints.values()))
        return first_hint.shape[self.node_mask.ndim - 2]


def _flatten_with_keys(batch: Batch) -> tuple[list[tuple[Any, Any]], tuple]:
    children = [
        (jax.tree_util.GetAttrKey(f"{group}['{name}']"), value)
        for group in _GROUPS
        for name, value in getattr(batch, group).items()
    ]
    children.append((jax.tree_util.GetAttrKey("lengths"), batch.lengths))
    children.append((jax.tree_util.GetAttrKey("node_mask"), batch.node_mask))
    keys = tuple(tuple(getattr(batch, group)) for group in _GROUPS)
    return children, (batch.algorithm, keys)


def _flatten(batch: Batch) -> tuple[list[Any], tuple]:
    children, aux = _flatten_with_keys(batch)
    return [value for _, value in children], aux


def _unflatten(aux: tuple, children: Sequence[Any]) -> Batch:
    # No validation here: JAX unflattens with tracers and sentinel objects too.
    algorithm, keys = aux
    children = list(children)
    groups: dict[str, dict[str, Any]] = {}
    start = 0
    for group, names in zip(_GROUPS, keys, strict=True):
        groups[group] = dict(
            zip(names, children[start : start + len(names)], strict=True)
        )
        start += len(names)
    lengths, node_mask = children[start:]
    return Batch(algorithm, **groups, lengths=lengths, node_mask=node_mask)


jax.tree_util.register_pytree_with_keys(Batch, _flatten_with_keys, _unflatten, _flatten)


def _stage_names(spec: Spec, stage: str) -> list[str]:
    """The probe names of one stage, in spec order."""
    return [name for name, (probe_stage, _, _) in spec.items() if probe_stage == stage]


def _leaf_dtype(probe: ProbeSpec) -> np.dtype:
    """nar_gap's dtype for a probe: int32 node indices for pointers, else float32."""
    return np.dtype(np.int32) if probe[2] == _Type.POINTER else np.dtype(np.float32)


def _clrs_dtype(algorithm: str, probe: ProbeSpec, name: str) -> np.dtype:
    """The dtype dm-clrs's samplers give a probe (checked by running them).

    Hints are float64 (``_batch_hints`` copies them into ``np.zeros``), pointer
    inputs/outputs int64 (built from ``np.arange``), the unweighted samplers'
    ``A`` int64 (a Bernoulli integer matrix), and everything else float64.
    """
    stage, _, type_ = probe
    if stage == _Stage.HINT:
        return np.dtype(np.float64)
    if type_ == _Type.POINTER or (name == "A" and algorithm in _UNWEIGHTED):
        return np.dtype(np.int64)
    return np.dtype(np.float64)


def _validate_batch(batch: Batch) -> None:
    """Checks keys, order, dtypes and shapes of an unstacked batch, naming the probe.

    Raises:
        ValueError: on the first inconsistency found.
    """
    spec = get_spec(batch.algorithm)
    node_mask, lengths = np.asarray(batch.node_mask), np.asarray(batch.lengths)
    if node_mask.ndim != 2 or node_mask.dtype != np.bool_:
        raise ValueError(
            f"expected node_mask of shape [B, N] and dtype bool, "
            f"found shape {node_mask.shape} and dtype {node_mask.dtype}"
        )
    batch_size, num_nodes = node_mask.shape
    if lengths.shape != (batch_size,) or lengths.dtype != np.int32:
        raise ValueError(
            f"expected lengths of shape ({batch_size},) and dtype int32, "
            f"found shape {lengths.shape} and dtype {lengths.dtype}"
        )
    hint_steps = {np.shape(data)[0] for data in batch.hints.values()}
    if len(hint_steps) > 1:
        raise ValueError(
            f"expected one hint length T for all hints, found {hint_steps}"
        )
    num_steps = hint_steps.pop() if hint_steps else 0
    for group in _GROUPS:
        stage = _GROUP_STAGE[group]
        expected_names = _stage_names(spec, stage)
        found_names = list(getattr(batch, group))
        if found_names != expected_names:
            raise ValueError(
                f"expected {group} {expected_names} for {batch.algorithm} "
                f"(spec order), found {found_names}"
            )
        lead = (num_steps, batch_size) if stage == _Stage.HINT else (batch_size,)
        for name, data in getattr(batch, group).items():
            _validate_probe(
                f"{group}[{name!r}]", np.asarray(data), spec[name], lead, num_nodes
            )
    if lengths.size and (lengths.min() < 1 or lengths.max() > num_steps):
        raise ValueError(
            f"expected lengths in [1, T={num_steps}], found {lengths.min()}..."
            f"{lengths.max()}"
        )


def _validate_probe(
    label: str,
    data: np.ndarray,
    probe: ProbeSpec,
    lead: tuple[int, ...],
    num_nodes: int,
) -> None:
    """Checks one probe's shape, dtype and (pointers) index range."""
    _, location, type_ = probe
    prefix = lead + (num_nodes,) * _NODE_AXES[location]
    categorical = type_ == _Type.CATEGORICAL
    if data.ndim != len(prefix) + categorical or data.shape[: len(prefix)] != prefix:
        raise ValueError(
            f"{label} ({location} {type_}): expected shape {prefix}"
            f"{' + (C,)' if categorical else ''}, found {data.shape}"
        )
    if data.dtype != _leaf_dtype(probe):
        raise ValueError(
            f"{label}: expected dtype {_leaf_dtype(probe)}, found {data.dtype}"
        )
    if (
        type_ == _Type.POINTER
        and data.size
        and (data.min() < 0 or data.max() >= num_nodes)
    ):
        raise ValueError(
            f"{label}: expected node indices in [0, {num_nodes}), found "
            f"{data.min()}..{data.max()}"
        )


# ----------------------------------------------------------- dm-clrs Feedback <-> Batch


def _convert_points(
    points: Sequence[Any], spec: Spec, stage: str, algorithm: str
) -> dict[str, np.ndarray]:
    """dm-clrs DataPoints of one stage -> name -> array, in spec order, our dtypes."""
    expected = _stage_names(spec, stage)
    by_name = {point.name: point for point in points}
    if sorted(by_name) != sorted(expected) or len(by_name) != len(points):
        raise ValueError(
            f"expected {stage} probes {expected} for {algorithm}, "
            f"found {[point.name for point in points]}"
        )
    converted = {}
    for name in expected:
        point, probe = by_name[name], spec[name]
        if (point.location, point.type_) != probe[1:]:
            raise ValueError(
                f"{stage} probe {name!r} of {algorithm}: expected {probe[1]} "
                f"{probe[2]}, found {point.location} {point.type_}"
            )
        data = np.asarray(point.data)
        if probe[2] == _Type.POINTER:
            indices = np.rint(data)
            if not np.array_equal(indices, data):
                raise ValueError(
                    f"{stage} pointer {name!r} of {algorithm}: expected whole node "
                    f"indices, found non-integer values"
                )
            data = indices
        converted[name] = data.astype(_leaf_dtype(probe))
    return converted


def from_clrs_feedback(feedback: Any, algorithm: str) -> Batch:
    """Translates a dm-clrs ``Feedback`` into a :class:`Batch` (no padded nodes).

    Args:
        feedback: ``clrs.Feedback(features=(inputs, hints, lengths), outputs)``,
            e.g. from a dm-clrs sampler's ``next()``.
        algorithm: the algorithm whose spec the feedback follows.

    Returns:
        The batch, with ``node_mask`` all True.

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
        ValueError: if the probes do not match the spec (names, location, type,
            shapes) or pointers are not whole node indices.
    """
    spec = get_spec(algorithm)
    features = feedback.features
    inputs = _convert_points(features.inputs, spec, _Stage.INPUT, algorithm)
    hints = _convert_points(features.hints, spec, _Stage.HINT, algorithm)
    outputs = _convert_points(feedback.outputs, spec, _Stage.OUTPUT, algorithm)
    raw_lengths = np.asarray(features.lengths)
    if not np.array_equal(np.rint(raw_lengths), raw_lengths):
        raise ValueError(f"expected whole-number lengths, found {raw_lengths}")
    lengths = raw_lengths.astype(np.int32)
    first_node_input = next(
        data for name, data in inputs.items() if spec[name][1] != _Location.GRAPH
    )
    batch_size, num_nodes = first_node_input.shape[:2]
    batch = Batch(
        algorithm=algorithm,
        inputs=inputs,
        hints=hints,
        outputs=outputs,
        lengths=lengths,
        node_mask=np.ones((batch_size, num_nodes), dtype=bool),
    )
    _validate_batch(batch)
    return batch


def to_clrs_feedback(batch: Batch) -> Any:
    """Translates a :class:`Batch` back into a dm-clrs ``Feedback``.

    The inverse of :func:`from_clrs_feedback`: DataPoints in spec order with the
    spec's location and type, and dm-clrs's own dtypes (float64; int64 for pointer
    outputs and the unweighted samplers' ``A``; float ``lengths``). Values are
    exactly the batch's; scalars therefore carry float32 rounding, since a
    Batch stores float32.

    Raises:
        ValueError: if the batch has padded nodes (dm-clrs has no node mask, so
            padded nodes would be taken for real ones) or is malformed.
    """
    _validate_batch(batch)
    if not np.all(batch.node_mask):
        raise ValueError(
            "padded batches cannot go to dm-clrs: expected node_mask all True, found "
            f"{int(np.size(batch.node_mask) - np.sum(batch.node_mask))} padded node "
            "slots (dm-clrs has no node mask)"
        )
    spec = get_spec(batch.algorithm)

    def points(group: str) -> list[Any]:
        return [
            clrs_probing.DataPoint(
                name=name,
                location=spec[name][1],
                type_=spec[name][2],
                data=np.asarray(data).astype(
                    _clrs_dtype(batch.algorithm, spec[name], name)
                ),
            )
            for name, data in getattr(batch, group).items()
        ]

    lengths = np.asarray(batch.lengths).astype(np.float64)
    features = clrs.Features(
        inputs=points("inputs"), hints=points("hints"), lengths=lengths
    )
    return clrs.Feedback(features=features, outputs=points("outputs"))


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
        algorithm: one of :data:`nar_gap.specs.ALGORITHMS`.
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


def train_batch(
    algorithm: str,
    seed: int,
    step: int,
    *,
    lengths: Sequence[int] = TRAIN_LENGTHS,
    batch_size: int = 32,
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
        algorithm: one of :data:`nar_gap.specs.ALGORITHMS`.
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
        algorithm, -1, lengths[step % len(lengths)], stream_seed, _check_p(p)
    )
    feedback = sampler.next(batch_size)
    if random_pos:
        feedback = _randomize_pos(feedback, _random_pos_rng(stream_seed))
    return from_clrs_feedback(feedback, algorithm)


class TrainStream(Iterator[Batch]):
    """One seed's training batches in order: ``train_batch(seed, 0)``, ``(seed, 1)``, ...

    Args are :func:`train_batch`'s; ``start`` is the first step to yield.
    """

    def __init__(
        self,
        algorithm: str,
        seed: int,
        *,
        lengths: Sequence[int] = TRAIN_LENGTHS,
        batch_size: int = 32,
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


# ----------------------------------------------------------------- a user's graph


class GraphInputError(ValueError):
    """A user's graph or source that the reference algorithm cannot run on."""


def _check_weights(weights: Any) -> np.ndarray:
    """The weight matrix as float64, or a GraphInputError naming the problem."""
    try:
        matrix = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise GraphInputError(
            f"expected a numeric (n, n) weight matrix, found {type(weights).__name__} "
            f"that numpy cannot read as numbers: {error}"
        ) from error
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise GraphInputError(
            f"expected a square (n, n) weight matrix, found shape {matrix.shape}"
        )
    if matrix.shape[0] == 0:
        raise GraphInputError(
            "expected at least one node, found an empty 0x0 weight matrix"
        )
    bad = np.argwhere(~np.isfinite(matrix))
    if len(bad):
        i, j = bad[0]
        raise GraphInputError(
            f"expected finite weights, found {matrix[i, j]} at ({i}, {j}) "
            f"({len(bad)} non-finite entries)"
        )
    negative = np.argwhere(matrix < 0)
    if len(negative):
        i, j = negative[0]
        raise GraphInputError(
            f"expected non-negative weights (0 = no edge), found {matrix[i, j]} at "
            f"({i}, {j}) ({len(negative)} negative entries): BFS counts only A > 0 as "
            "edges while adj counts A != 0, and Bellman-Ford never stops on a negative "
            "cycle (an undirected negative edge is one)"
        )
    return matrix


def _check_source(algorithm: str, source: Any, num_nodes: int) -> int | None:
    """The source node for algorithms that take one; None for those that do not."""
    if not has_source(algorithm):
        if source is not None:
            raise GraphInputError(
                f"{algorithm} takes no source node (it starts from every unvisited "
                f"node in index order), found source={source!r}"
            )
        return None
    if source is None:
        raise GraphInputError(
            f"{algorithm} needs a source node: pass source=<0..{num_nodes - 1}>"
        )
    if isinstance(source, bool) or not isinstance(source, numbers.Integral):
        raise GraphInputError(f"expected an integer source node, found {source!r}")
    if not 0 <= source < num_nodes:
        raise GraphInputError(
            f"source {source} is out of range: expected 0..{num_nodes - 1} for a graph "
            f"of {num_nodes} nodes"
        )
    return int(source)


def _restore_batch_shape(point: Any, num_nodes: int) -> Any:
    """Undoes dm-clrs's squeeze of size-1 axes in inputs/outputs of one-node graphs.

    ``probing.finalize`` squeezes every size-1 axis of inputs and outputs, which for
    N = 1 also removes the node axes; reshape to ``[1, N...(, C)]`` by location.
    """
    prefix = (1,) + (num_nodes,) * _NODE_AXES[point.location]
    data = np.asarray(point.data)
    shape = prefix + (
        (data.size // math.prod(prefix),) if point.type_ == _Type.CATEGORICAL else ()
    )
    return clrs_probing.DataPoint(
        point.name, point.location, point.type_, data.reshape(shape)
    )


def batch_from_graph(algorithm: str, weights: Any, source: int | None = None) -> Batch:
    """A user's graph as a batch of one, with hints and outputs from the reference.

    Inputs are built as dm-clrs's probing does (``pos = i / n``, ``s`` one-hot,
    ``A``, ``adj = [A + I != 0]``) by running the reference probing function
    itself (:func:`nar_gap.specs.reference_algorithm`), so hints and outputs are
    dm-clrs's. On a sampled graph and source this equals that sample of
    :func:`sample_batch` (with hints cut to its length).

    - ``bfs``, ``bfs_seq``, ``dfs``, ``dfs_light`` are unweighted: their samplers
      give 0/1 matrices, so ``A`` becomes ``[weights != 0]`` (every nonzero weight
      is an edge of weight 1), matching the training distribution.
    - ``bellman_ford`` keeps the weights as ``A``.
    - ``A[u, v]`` is the edge u -> v; directed (asymmetric) input is accepted and
      run as given, although the bfs/bellman_ford samplers only draw symmetric
      graphs. Diagonal entries are self loops, as in the samplers.

    Args:
        algorithm: one of :data:`nar_gap.specs.ALGORITHMS`.
        weights: (n, n) array-like; 0 = no edge, nonzero = edge weight.
        source: the source node for bfs, bfs_seq and bellman_ford; must be None
            for dfs and dfs_light (rejected rather than ignored, so a caller who
            expects a search from that node finds out).

    Returns:
        A batch of one sample with ``N = n`` and ``T`` = its own hint length.

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
        GraphInputError: (a ValueError) if ``weights`` is not a square non-empty
            numeric matrix, has NaN/inf or negative entries, or ``source`` is
            missing, not an integer, out of range, or given to dfs/dfs_light.
    """
    check_algorithm(algorithm)
    matrix = _check_weights(weights)
    num_nodes = matrix.shape[0]
    source = _check_source(algorithm, source, num_nodes)
    if algorithm in _UNWEIGHTED:
        adjacency = (matrix != 0).astype(np.int64)
    else:
        adjacency = matrix
    args = (adjacency,) if source is None else (adjacency, source)
    _, probes = reference_algorithm(algorithm)(*args)
    inputs, outputs, hints = clrs_probing.split_stages(probes, get_spec(algorithm))
    lengths = np.array([hints[0].data.shape[0]], dtype=np.float64)
    features = clrs.Features(
        inputs=[_restore_batch_shape(point, num_nodes) for point in inputs],
        hints=hints,
        lengths=lengths,
    )
    feedback = clrs.Feedback(
        features=features,
        outputs=[_restore_batch_shape(point, num_nodes) for point in outputs],
    )
    return from_clrs_feedback(feedback, algorithm)


# ---------------------------------------------------------------- padding, stacking


def _pad_probe(
    data: np.ndarray,
    probe: ProbeSpec,
    name: str,
    num_nodes: int,
    num_steps: int,
    node_mask: np.ndarray,
) -> np.ndarray:
    """Pads one probe's node axes to ``num_nodes`` and (hints) time to ``num_steps``."""
    stage, location, type_ = probe
    if type_ not in _PADDABLE_TYPES or (
        type_ == _Type.POINTER and location == _Location.EDGE
    ):
        raise NotImplementedError(f"pad_batch cannot pad {name!r}: {location} {type_}")
    first_node_axis = 2 if stage == _Stage.HINT else 1
    widths = [(0, 0)] * data.ndim
    for axis in range(first_node_axis, first_node_axis + _NODE_AXES[location]):
        widths[axis] = (0, num_nodes - data.shape[axis])
    if stage == _Stage.HINT:
        widths[0] = (0, num_steps - data.shape[0])
    padded = np.pad(data, widths)  # zeros, in the data's dtype
    if type_ == _Type.POINTER and location == _Location.NODE:
        # Padded nodes point to themselves; node_mask [B, N] broadcasts over T.
        own_index = np.arange(num_nodes, dtype=padded.dtype)
        padded = np.where(node_mask, padded, own_index)
    return padded


def pad_batch(
    batch: Batch, *, num_nodes: int | None = None, num_steps: int | None = None
) -> Batch:
    """Pads the node axis to ``num_nodes`` and the hint time axis to ``num_steps``.

    Padding rules (the network relies on each of them):

    1. Padded nodes get ``node_mask`` False; real nodes keep True.
    2. Scalars, masks, mask_ones and categoricals of padded nodes are zero, at node
       and edge locations alike (so a categorical of a padded node is all-zero,
       not a class; a mask_one keeps its single 1 on a real node). In particular
       ``adj`` gets **no** self loop for padded nodes, and ``A`` no edges.
    3. Node pointers of padded nodes point to themselves (index = own index) in
       inputs, hints and outputs, at every time step, including padded ones, so a
       padded node's pointer one-hot never touches a real node. Real nodes never
       point to padded ones (their indices are unchanged).
    4. Padded time steps (past the old T) are zero, exactly like dm-clrs's own time
       padding: real nodes' pointer hints point to node 0 there, masks are 0. They
       lie past ``lengths``, which masks them; rule 3 still holds for padded nodes.
    5. ``lengths`` are unchanged. Graph-location probes have no node axis.

    Slicing a padded batch back (``[..., :N]`` node axes, ``[:T]`` time) gives the
    original. Padding an already padded batch is consistent with padding once.

    Args:
        batch: an unstacked batch (no seed axis).
        num_nodes: new N, at least the current one; None keeps it.
        num_steps: new T, at least the current one; None keeps it.

    Returns:
        The padded batch (a new one; the input is not changed).

    Raises:
        ValueError: if a target is smaller than the current size or the batch is
            malformed.
    """
    _validate_batch(batch)
    new_nodes = batch.num_nodes if num_nodes is None else num_nodes
    new_steps = batch.num_steps if num_steps is None else num_steps
    for value, current, what in (
        (new_nodes, batch.num_nodes, "num_nodes"),
        (new_steps, batch.num_steps, "num_steps"),
    ):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"expected an integer {what}, found {value!r}")
        if value < current:
            raise ValueError(
                f"{what}={value} is smaller than the batch's {current}; pad_batch only "
                "pads (slice to shrink)"
            )
    spec = get_spec(batch.algorithm)
    node_mask = np.pad(batch.node_mask, ((0, 0), (0, new_nodes - batch.num_nodes)))

    def pad_group(group: str) -> dict[str, np.ndarray]:
        return {
            name: _pad_probe(
                np.asarray(data), spec[name], name, new_nodes, new_steps, node_mask
            )
            for name, data in getattr(batch, group).items()
        }

    return Batch(
        algorithm=batch.algorithm,
        inputs=pad_group("inputs"),
        hints=pad_group("hints"),
        outputs=pad_group("outputs"),
        lengths=np.array(batch.lengths, dtype=np.int32),
        node_mask=node_mask,
    )


def concat_batches(batches: Sequence[Batch]) -> Batch:
    """Concatenates batches along the batch axis, padding time to the longest first.

    Args:
        batches: unstacked batches of one algorithm with the same number of nodes
            (pad nodes first with :func:`pad_batch` to mix graph sizes).

    Returns:
        One batch with ``B = sum of batch sizes`` and ``T = max of num_steps``.

    Raises:
        ValueError: if ``batches`` is empty, or algorithms or node counts differ.
    """
    batches = list(batches)
    if not batches:
        raise ValueError("expected at least one batch to concatenate, found none")
    algorithms = sorted({batch.algorithm for batch in batches})
    if len(algorithms) > 1:
        raise ValueError(f"expected batches of one algorithm, found {algorithms}")
    node_counts = [batch.num_nodes for batch in batches]
    if len(set(node_counts)) > 1:
        raise ValueError(
            f"expected batches with the same number of nodes, found {node_counts}; "
            "pad_batch(batch, num_nodes=...) them first"
        )
    num_steps = max(batch.num_steps for batch in batches)
    padded = [pad_batch(batch, num_steps=num_steps) for batch in batches]

    def join(group: str, axis: int) -> dict[str, np.ndarray]:
        names = getattr(padded[0], group)
        return {
            name: np.concatenate([getattr(b, group)[name] for b in padded], axis=axis)
            for name in names
        }

    return Batch(
        algorithm=algorithms[0],
        inputs=join("inputs", 0),
        hints=join("hints", 1),
        outputs=join("outputs", 0),
        lengths=np.concatenate([b.lengths for b in padded]),
        node_mask=np.concatenate([b.node_mask for b in padded]),
    )


def stack_seeds(batches: Sequence[Batch]) -> Batch:
    """Stacks batches on a new leading seed axis S, for vmapped multi-seed training.

    Every leaf gets shape ``[S, ...]`` (hints ``[S, T, B, ...]``); vmapping over
    axis 0 hands each seed an ordinary batch.

    Args:
        batches: batches of one algorithm with identical leaf shapes and dtypes
            (pad them to common N and T first with :func:`pad_batch`).

    Returns:
        The stacked batch.

    Raises:
        ValueError: if ``batches`` is empty, algorithms differ, or a leaf's shape
            or dtype differs (the message names the leaf and both shapes).
    """
    batches = list(batches)
    if not batches:
        raise ValueError("expected at least one batch to stack, found none")
    reference = jax.tree_util.tree_flatten_with_path(batches[0])
    reference_leaves, reference_tree = reference
    for index, batch in enumerate(batches[1:], start=1):
        if batch.algorithm != batches[0].algorithm:
            raise ValueError(
                f"expected batches of one algorithm, found {batches[0].algorithm!r} "
                f"(batch 0) and {batch.algorithm!r} (batch {index})"
            )
        leaves, tree = jax.tree_util.tree_flatten_with_path(batch)
        if tree != reference_tree:
            raise ValueError(
                f"batch {index} has other probes than batch 0: "
                f"{tree} vs {reference_tree}"
            )
        for (path, first), (_, leaf) in zip(reference_leaves, leaves, strict=True):
            first, leaf = np.asarray(first), np.asarray(leaf)
            if first.shape != leaf.shape or first.dtype != leaf.dtype:
                raise ValueError(
                    f"cannot stack {jax.tree_util.keystr(path)}: batch 0 has "
                    f"{first.shape} {first.dtype}, batch {index} has {leaf.shape} "
                    f"{leaf.dtype}; pad_batch them to common num_nodes/num_steps first"
                )
    return jax.tree_util.tree_map(lambda *leaves: np.stack(leaves), *batches)
