"""dm-clrs ``Feedback`` <-> :class:`~nar_gap.tasks.batch.Batch`, in both directions.

The one place where dm-clrs's data types meet ours: DataPoints become dicts
of arrays in spec order with our dtypes (int32 pointers, float32 the rest),
and back again for the parity tests and :func:`nar_gap.from_clrs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nar_gap.tasks._clrs import clrs, clrs_probing
from nar_gap.tasks.batch import (
    Batch,
    check_batch,
    clrs_dtype,
    leaf_dtype,
    stage_names,
)
from nar_gap.tasks.specs import Spec, get_spec
from nar_gap.tasks.vocabulary import Location, Stage, Type

# ----------------------------------------------------------- dm-clrs Feedback <-> Batch


def _convert_points(
    points: Sequence[Any], spec: Spec, stage: str, algorithm: str, float_dtype: Any
) -> dict[str, np.ndarray]:
    """dm-clrs DataPoints of one stage -> name -> array, in spec order, our dtypes."""
    expected = stage_names(spec, stage)
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
        if probe[2] == Type.POINTER:
            indices = np.rint(data)
            if not np.array_equal(indices, data):
                raise ValueError(
                    f"{stage} pointer {name!r} of {algorithm}: expected whole node "
                    f"indices, found non-integer values"
                )
            data = indices
        converted[name] = data.astype(leaf_dtype(probe, float_dtype))
    return converted


def from_clrs_feedback(
    feedback: Any, algorithm: str, float_dtype: Any = np.float32
) -> Batch:
    """Translates a dm-clrs ``Feedback`` into a :class:`Batch` (no padded nodes).

    Args:
        feedback: ``clrs.Feedback(features=(inputs, hints, lengths), outputs)``,
            e.g. from a dm-clrs sampler's ``next()``.
        algorithm: the algorithm whose spec the feedback follows.
        float_dtype: the dtype of every non-pointer probe (float64 for a
            compiled model run in float64).

    Returns:
        The batch, with ``node_mask`` all True.

    Raises:
        UnknownAlgorithmError: if ``algorithm`` is not known.
        ValueError: if the probes do not match the spec (names, location, type,
            shapes) or pointers are not whole node indices.
    """
    spec = get_spec(algorithm)
    features = feedback.features
    convert = {"spec": spec, "algorithm": algorithm, "float_dtype": float_dtype}
    inputs = _convert_points(features.inputs, stage=Stage.INPUT, **convert)
    hints = _convert_points(features.hints, stage=Stage.HINT, **convert)
    outputs = _convert_points(feedback.outputs, stage=Stage.OUTPUT, **convert)
    raw_lengths = np.asarray(features.lengths)
    if not np.array_equal(np.rint(raw_lengths), raw_lengths):
        raise ValueError(f"expected whole-number lengths, found {raw_lengths}")
    lengths = raw_lengths.astype(np.int32)
    first_node_input = next(
        data for name, data in inputs.items() if spec[name][1] != Location.GRAPH
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
    check_batch(batch)
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
    check_batch(batch)
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
                    clrs_dtype(batch.algorithm, spec[name], name)
                ),
            )
            for name, data in getattr(batch, group).items()
        ]

    lengths = np.asarray(batch.lengths).astype(np.float64)
    features = clrs.Features(
        inputs=points("inputs"), hints=points("hints"), lengths=lengths
    )
    return clrs.Feedback(features=features, outputs=points("outputs"))
