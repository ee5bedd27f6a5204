"""Swap attention between models, and see what it does to the output.

Eq. 24 says how far a trained model's attention is from the compiled one's;
it cannot say whether that distance matters.  An intervention can: run a
model with another model's attention patched in (at every step, or at one)
and score its output.  If a trained seed keeps its accuracy with the
compiled attention, its own attention pattern is not what makes it right
(what its values carry adapts to either); if the compiled model keeps its
exactness with a trained seed's attention, that attention routes what the
compiled mechanism needs.  Two reference attentions make the measure able
to say the opposite: uniform over each receiver's neighbourhood, and self
only.  A model whose output survives those too does not use its attention.

Everything here is on one batch, model by model: the patch values are
inputs of :func:`~nar_gap.model.activations.run_with_cache`'s program, so
each architecture compiles once, whatever the seed, donor or steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nar_gap.analysis.faithfulness import self_attention, uniform_attention
from nar_gap.model.activations import Patch
from nar_gap.model.model import Model
from nar_gap.model.scores import output_scores
from nar_gap.tasks.batch import Batch

__all__ = [
    "ALL_STEPS",
    "head_matched",
    "own_attention",
    "patched_scores",
    "reference_attentions",
]

ALL_STEPS = None
"""A patch at every hint step (:class:`~nar_gap.model.activations.Patch`'s None)."""


def own_attention(model: Model, batch: Batch) -> tuple[float, np.ndarray]:
    """A model's output score on ``batch`` and its attention ``[S, B, H, N, N]``."""
    out, cache = model.run_with_cache(batch)
    score = float(output_scores(model.config, out, batch)["score"])
    return score, np.asarray(cache["attention"])


def head_matched(attention: np.ndarray, heads: int) -> np.ndarray:
    """``attention`` (``[S, B, H', N, N]``, or ``[S, B, N, N]``) with ``heads`` heads.

    Attention moves between models of different head counts as Eq. 24 sees
    it, averaged over heads: the donor's mean, given to every head.  A donor
    with the receiver's head count is passed through, head for head.
    """
    attention = np.asarray(attention, np.float32)
    if attention.ndim == 4:
        attention = attention[:, :, None]
    if attention.shape[2] == heads:
        return attention
    mean = attention.mean(axis=2, keepdims=True)
    return np.broadcast_to(mean, (*mean.shape[:2], heads, *mean.shape[3:]))


def reference_attentions(batch: Batch, num_steps: int) -> dict[str, np.ndarray]:
    """The controls, ``[S, B, N, N]``: uniform over neighbourhoods, and self only."""
    return {
        "uniform": uniform_attention(batch, num_steps),
        "self only": self_attention(batch, num_steps),
    }


def patched_scores(
    model: Model,
    batch: Batch,
    attention: np.ndarray,
    steps: Sequence[tuple[int, ...] | None] = (ALL_STEPS,),
) -> np.ndarray:
    """The output score with ``attention`` patched in, one per entry of ``steps``.

    ``attention``: another model's (or a reference's) attention on the same
    batch, ``[S, B, H', N, N]`` or ``[S, B, N, N]``; it is matched to the
    model's heads (:func:`head_matched`).  Each entry of ``steps`` is the
    hint steps patched (:data:`ALL_STEPS`: every one); the rollout goes on
    from the patched steps in the model's own predictions, as its test
    score does.
    """
    value = head_matched(attention, model.config.num_heads)
    scores = []
    for chosen in steps:
        out, _ = model.run_with_cache(batch, [Patch("attention", value, steps=chosen)])
        scores.append(float(output_scores(model.config, out, batch)["score"]))
    return np.array(scores, np.float64)
