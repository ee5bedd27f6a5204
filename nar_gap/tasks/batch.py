"""The :class:`Batch`: one batch of CLRS data as JAX sees it, and its shapes.

A :class:`Batch` is one batch in CLRS encoding, translated once at the
dm-clrs boundary (:mod:`nar_gap.tasks.feedback`) from dm-clrs's
``Feedback`` (lists of ``DataPoint``, float64, pointers as float indices) into
dicts of float32 arrays with int32 pointers, keyed and ordered as
:func:`nar_gap.tasks.specs.get_spec`.  Everything here is numpy; the
network jits on top.  Batches are shaped with :func:`pad_batch`,
:func:`concat_batches` and :func:`stack_seeds`.

Shape glossary: B batch, N nodes, T hint steps, C categories, S seeds.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from nar_gap.tasks.specs import ProbeSpec, Spec, get_spec
from nar_gap.tasks.vocabulary import NODE_AXES, Location, Stage, Type

# Algorithms whose samplers draw unweighted 0/1 graphs (an int64 `A` in dm-clrs).
UNWEIGHTED = frozenset({"bfs", "bfs_seq", "dfs", "dfs_light", "dfs_reverse"})

_PADDABLE_TYPES = frozenset(
    {Type.SCALAR, Type.MASK, Type.MASK_ONE, Type.CATEGORICAL, Type.POINTER}
)
_GROUPS = ("inputs", "hints", "outputs")
_GROUP_STAGE = {"inputs": Stage.INPUT, "hints": Stage.HINT, "outputs": Stage.OUTPUT}


# ----------------------------------------------------------------------------- Batch


@dataclasses.dataclass(frozen=True, eq=False)
class Batch:
    """One batch in CLRS encoding, time-major hints.

    Registered as a JAX pytree: every array in the three dicts, ``lengths`` and
    ``node_mask`` is a leaf; ``algorithm`` and the dict keys are static aux data.
    The flattening keeps the keys in spec order (JAX's own dict flattening would
    sort them, so ``tree_map`` would reorder ``pos, s, A, adj``), and names leaves
    ``.inputs['pos']`` etc. in key paths.

    dtypes: float32 everywhere (float64 for a float64 compiled run: see
    :data:`FLOAT_DTYPES`) except pointer-type probes (int32 node indices),
    ``lengths`` (int32) and ``node_mask`` (bool). Categorical probes keep their
    one-hot last axis C.

    Attributes:
        algorithm: one of :data:`nar_gap.tasks.specs.ALGORITHMS`.
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
    def sources(self) -> np.ndarray:
        """``[B]`` each sample's source node (input ``s``), -1 without one."""
        if "s" not in self.inputs:
            return np.full(self.batch_size, -1)
        return np.asarray(self.inputs["s"]).argmax(-1)

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


def stage_names(spec: Spec, stage: str) -> list[str]:
    """The probe names of one stage, in spec order."""
    return [name for name, (probe_stage, _, _) in spec.items() if probe_stage == stage]


# The floats a batch may hold: float32 (training, evaluation) or float64 (a
# compiled model run in float64, whose graph must not be rounded on the way in).
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def leaf_dtype(probe: ProbeSpec, float_dtype: Any = np.float32) -> np.dtype:
    """nar_gap's dtype for a probe: int32 node indices for pointers, else a float.

    ``float_dtype`` is float32 unless a float64 compiled run asks otherwise.
    """
    return np.dtype(np.int32) if probe[2] == Type.POINTER else np.dtype(float_dtype)


def clrs_dtype(algorithm: str, probe: ProbeSpec, name: str) -> np.dtype:
    """The dtype dm-clrs's samplers give a probe (checked by running them).

    Hints are float64 (``_batch_hints`` copies them into ``np.zeros``), pointer
    inputs/outputs int64 (built from ``np.arange``), the unweighted samplers'
    ``A`` int64 (a Bernoulli integer matrix), and everything else float64.
    """
    stage, _, type_ = probe
    if stage == Stage.HINT:
        return np.dtype(np.float64)
    if type_ == Type.POINTER or (name == "A" and algorithm in UNWEIGHTED):
        return np.dtype(np.int64)
    return np.dtype(np.float64)


def check_batch(batch: Batch) -> None:
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
        expected_names = stage_names(spec, stage)
        found_names = list(getattr(batch, group))
        if found_names != expected_names:
            raise ValueError(
                f"expected {group} {expected_names} for {batch.algorithm} "
                f"(spec order), found {found_names}"
            )
        lead = (num_steps, batch_size) if stage == Stage.HINT else (batch_size,)
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
    prefix = lead + (num_nodes,) * NODE_AXES[location]
    categorical = type_ == Type.CATEGORICAL
    if data.ndim != len(prefix) + categorical or data.shape[: len(prefix)] != prefix:
        raise ValueError(
            f"{label} ({location} {type_}): expected shape {prefix}"
            f"{' + (C,)' if categorical else ''}, found {data.shape}"
        )
    allowed = (leaf_dtype(probe),) if probe[2] == Type.POINTER else FLOAT_DTYPES
    if data.dtype not in allowed:
        raise ValueError(
            f"{label}: expected dtype {' or '.join(map(str, allowed))}, "
            f"found {data.dtype}"
        )
    if (
        type_ == Type.POINTER
        and data.size
        and (data.min() < 0 or data.max() >= num_nodes)
    ):
        raise ValueError(
            f"{label}: expected node indices in [0, {num_nodes}), found "
            f"{data.min()}..{data.max()}"
        )


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
        type_ == Type.POINTER and location == Location.EDGE
    ):
        raise NotImplementedError(f"pad_batch cannot pad {name!r}: {location} {type_}")
    first_node_axis = 2 if stage == Stage.HINT else 1
    widths = [(0, 0)] * data.ndim
    for axis in range(first_node_axis, first_node_axis + NODE_AXES[location]):
        widths[axis] = (0, num_nodes - data.shape[axis])
    if stage == Stage.HINT:
        widths[0] = (0, num_steps - data.shape[0])
    padded = np.pad(data, widths)  # zeros, in the data's dtype
    if type_ == Type.POINTER and location == Location.NODE:
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
    check_batch(batch)
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


def graph_range(batch: Batch, start: int, stop: int) -> Batch:
    """Graphs ``start:stop`` of ``batch``, hints cut to their own longest trace.

    A large batch measured in parts (:func:`~nar_gap.analysis.models.
    measure_against_compiled`) runs each part only as long as its graphs.
    """
    stop = min(stop, batch.batch_size)
    lengths = np.asarray(batch.lengths)[start:stop]
    steps = int(lengths.max())
    return Batch(
        batch.algorithm,
        {k: v[start:stop] for k, v in batch.inputs.items()},
        {k: v[:steps, start:stop] for k, v in batch.hints.items()},
        {k: v[start:stop] for k, v in batch.outputs.items()},
        lengths,
        batch.node_mask[start:stop],
    )


def first_graphs(batch: Batch, count: int) -> Batch:
    """The first ``count`` graphs of ``batch`` (all of them if it has fewer).

    The time axis keeps its length, so a cut batch runs the program of the
    whole one with a smaller batch axis (a dry run's evaluation).
    """
    if count >= batch.batch_size:
        return batch
    hints = {k: v[:, :count] for k, v in batch.hints.items()}
    rest = jax.tree_util.tree_map(lambda x: x[:count], (batch.inputs, batch.outputs))
    return Batch(
        batch.algorithm,
        rest[0],
        hints,
        rest[1],
        batch.lengths[:count],
        batch.node_mask[:count],
    )


def shape_template(batch: Batch, num_nodes: int) -> Batch:
    """One graph of ``num_nodes`` nodes and one hint step, zeros in ``batch``'s dtypes.

    What a network's parameters are made from: their shapes follow the
    probes' feature sizes, never the number of graphs, steps or nodes, so
    an ``init`` traced on this batch makes the parameters an ``init`` on
    ``batch`` makes, and compiles once for every batch of the algorithm
    (:func:`nar_gap.model.network.init_template`).  Its values mean
    nothing (pointers name node 0, every node is real, ``lengths`` 1).
    ``batch``'s leaves may be arrays or ``jax.ShapeDtypeStruct``.
    """
    spec = get_spec(batch.algorithm)

    def zeros(group: str) -> dict[str, np.ndarray]:
        made = {}
        for name, data in getattr(batch, group).items():
            stage, location, _ = spec[name]
            lead = (1, 1) if stage == Stage.HINT else (1,)
            rest = tuple(data.shape)[len(lead) + NODE_AXES[location] :]
            shape = lead + (num_nodes,) * NODE_AXES[location] + rest
            made[name] = np.zeros(shape, data.dtype)
        return made

    return Batch(
        batch.algorithm,
        zeros("inputs"),
        zeros("hints"),
        zeros("outputs"),
        np.ones(1, batch.lengths.dtype),
        np.ones((1, num_nodes), batch.node_mask.dtype),
    )
