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
from typing import Any, ClassVar

import jax
import numpy as np

from nar_gap.benchmark.batch import Batch
from nar_gap.model.config import NetOutput, NetworkConfig
from nar_gap.model.seeds import forward


def parameter_count(params: Any) -> int:
    """How many numbers a parameter tree holds (what "a 500-parameter GAT" counts).

    Leaves may be arrays or ``jax.ShapeDtypeStruct`` (``param_shapes``: a
    count without running the initialiser).
    """
    leaves = jax.tree_util.tree_leaves(params)
    return int(
        sum(math.prod(getattr(leaf, "shape", np.shape(leaf))) for leaf in leaves)
    )


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
