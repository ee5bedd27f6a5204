"""A network configuration with its parameters: what is compiled, trained, compared.

A :class:`Model` is what every layer above passes around when it means "this
network": an imported dm-clrs model (:class:`~nar_gap.model.from_dmclrs.ClrsModel`),
a compiled one (:class:`~nar_gap.compiler.compiled_model.CompiledModel`), one
seed of a training run, the centre of a loss landscape.  Many seeds of one
configuration travel as one stacked tree instead
(:class:`~nar_gap.analysis.models.Models`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import jax
import numpy as np

from nar_gap.model.activations import Cache, Patch, run_with_cache
from nar_gap.model.config import NetOutput, NetworkConfig
from nar_gap.model.seeds import forward
from nar_gap.tasks.batch import Batch


def parameter_count(params: Any) -> int:
    """How many numbers a parameter tree holds (what "a 500-parameter GAT" counts).

    Leaves may be arrays or ``jax.ShapeDtypeStruct`` (``param_shapes``: a
    count without running the initialiser).
    """
    leaves = jax.tree_util.tree_leaves(params)
    return int(
        sum(math.prod(getattr(leaf, "shape", np.shape(leaf))) for leaf in leaves)
    )


COMPONENTS = ("encoders", "processor", "bias", "decoders")


def component_of(path: tuple[str, ...]) -> str:
    """Which part of the network a parameter's path names.

    ``bias`` is the paper's N x N pre-attention bias alone (the processor's
    ``pre_att_bias``), counted apart because it grows with the graph size
    the model is built for while every other part grows with the width.
    """
    names = [n for n in path if n != "net"]
    if names and names[0].startswith("encoder_"):
        return "encoders"
    if names and names[0].startswith("decoder_"):
        return "decoders"
    if "pre_att_bias" in names:
        return "bias"
    return "processor"


def parameter_counts(params: Any) -> dict[str, int]:
    """:func:`parameter_count` by component (:data:`COMPONENTS`), and non-zero.

    Returns ``{"encoders": ..., "processor": ..., "bias": ..., "decoders":
    ..., "total": ..., "nonzero": ...}``: the paper's "500 parameters" names
    no component, so a comparison with it needs each.
    """
    counts = dict.fromkeys(COMPONENTS, 0)
    nonzero = 0
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        keys = tuple(str(getattr(k, "key", k)) for k in path)
        counts[component_of(keys)] += int(np.size(leaf))
        nonzero += int(np.count_nonzero(np.asarray(leaf)))
    return {**counts, "total": sum(counts.values()), "nonzero": nonzero}


@dataclasses.dataclass(frozen=True)
class Model:
    """``config`` and ``params``, with the jitted forward pass of the pair."""

    config: NetworkConfig
    params: Any

    # The matmul precision of apply(); compiled models need "highest".
    precision: ClassVar[str | None] = None

    def apply(self, batch: Batch, repred: bool = True) -> NetOutput:
        """The forward pass (evaluation mode unless ``repred=False``)."""
        return forward(self.config, repred, self.precision)(self.params, batch)

    def run_with_cache(
        self, batch: Batch, patches: Sequence[Patch] = (), teacher_forced: bool = False
    ) -> tuple[NetOutput, Cache]:
        """:func:`~nar_gap.model.activations.run_with_cache` of this model."""
        return run_with_cache(
            self.config, self.params, batch, patches, teacher_forced, self.precision
        )
