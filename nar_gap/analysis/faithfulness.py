"""Faithfulness: how far a model's trace and attention are from the compiled ones.

The paper's two measures (§4.1), made precise where its extracted text lost
the equations:

**External faithfulness (Eq. 25)** scores predicted hints against the ground
truth trace.  Step t's prediction (of ``hint[t + 1]``) matches a node when it
is within a margin for its type (:class:`Margins`): scalars ``|Δ| <= ε``,
masks thresholded at probability 0.5 (logit > 0), pointers / categoricals /
one-hot masks by equal argmax.  A step's score is the fraction of real nodes
that match (``strict``: 1 only when all match); a sample's score is the mean
over its steps ``t < L_b - 1``; a model's is the mean over samples and, for the
single number ``external``, over the spec's hints.  Padded steps and nodes
never count.

**External faithfulness before the output** (``external_pre_output``, ours):
Eq. 25 over a shorter window.  dm-clrs's BFS, Bellman-Ford and DFS push a
last hint ``pi_h`` that is a copy of the output ``pi`` (a hint's *output
twin*, :func:`output_twins`), predicted from the same last processor state
as the output: the last counted step scores the output a second time, so
``external`` tracks accuracy by construction (BFS: r = +0.99 across seeds).
The variant counts only the steps that predict a hint before the last one
equal to its output twin, read per sample off the ground-truth trace
(:func:`~nar_gap.tasks.counted_steps.pre_output_steps`; on these algorithms: all
steps but ``t = L_b - 2``).  Every hint, with a twin or not, is averaged over
that one window, per sample then over samples that keep a step; the number
is NaN when no sample of the batch keeps one (every trace has two hints).

**Internal faithfulness (Eq. 24)** is the L1 distance between two models'
attention time series on the same graphs, each rolling out on its *own*
predictions (``repred=True``, as at evaluation).  Every receiver's attention
row is a probability distribution over its neighbours and itself (heads are
averaged into one distribution), so its L1 distance lies in [0, 2].  We divide
the sum over time and the two node axes by ``2 x (steps x real receivers)``:
the result is the mean total-variation distance per receiver and step, **0 for
identical attention, 1 for disjoint supports**.  The steps that count are
``t < max(1, L_b - 1)``: the steps that predict a real hint, or the single step
of a one-hint trace (whose output the network still returns).  Per-step series
(Figure 2) use the same normalisation at each step.

:func:`measure_one` computes both for one parameter set (pure, unjitted);
:func:`nar_gap.analysis.models.measure_models` runs it over a stack of
parameter sets as one vmapped, jitted computation in chunks, and
:func:`pairwise_internal_distances` compares every pair of learned solutions
(Figure 5).  :mod:`nar_gap.analysis.stats` (correlations, fitted line,
clusters) and :mod:`nar_gap.paper.experiments.faithfulness_study` (the whole study,
its files) build on it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nar_gap.model.activations import teacher_forced
from nar_gap.model.config import NetworkConfig
from nar_gap.model.network import Network
from nar_gap.model.scores import output_scores
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.counted_steps import (
    external_steps,
    internal_step_count,
    internal_steps,
    last_equal_step,
    pre_output_steps,
)
from nar_gap.tasks.vocabulary import MASKED, Location, Stage, Type

__all__ = [
    "DEFAULT_MARGINS",
    "GAP_MEASURES",
    "MAX_UNIFORM_BINS",
    "Margins",
    "SHARPENING_TEMPERATURES",
    "argmax_agreement",
    "argmax_rows",
    "calibrated_measures",
    "neighbourhood",
    "output_twins",
    "pre_output_window",
    "self_attention",
    "sharpened",
    "uniform_attention",
    "unnormalised_l1",
    "external_scores",
    "external_steps",
    "head_averaged",
    "internal_distance",
    "internal_step_count",
    "internal_steps",
    "measure_one",
    "pairwise_internal_distances",
    "receiver_l1",
    "step_matches",
    "forward_pass",
    "uniform_bins",
    "uniform_timescale",
]

MAX_UNIFORM_BINS = 10  # most bins of the normalised timescale (Figure 4)


@dataclasses.dataclass(frozen=True)
class Margins:
    """Per-type margins of Eq. 25 that turn a prediction into match / no match.

    Attributes:
      scalar: absolute tolerance ε on numerical hints (Bellman-Ford's ``d``,
        which lies in [0, ~8] on CLRS graphs).  0.05 is a tenth of the mean
        edge weight CLRS samples (≈ 0.6), so a matching distance has the right
        path up to rounding in most graphs; the lightest edges (≥ 0.032) can
        still hide inside it.  The compiled models are within 1e-4.
      mask_threshold: a mask predicts 1 when ``sigmoid(logit) > threshold``.
    """

    scalar: float = 0.05
    mask_threshold: float = 0.5

    def __post_init__(self) -> None:
        if not self.scalar >= 0:
            raise ValueError(f"Margins.scalar must be >= 0, got {self.scalar}")
        if not 0.0 < self.mask_threshold < 1.0:
            raise ValueError(
                f"Margins.mask_threshold must be in (0, 1), got {self.mask_threshold}"
            )


DEFAULT_MARGINS = Margins()


# --------------------------------------------------------------------------- #
# Which steps count.
# --------------------------------------------------------------------------- #


def output_twins(config: NetworkConfig) -> dict[str, str]:
    """``{hint: output}`` for every hint that mirrors an output of the spec.

    dm-clrs names a hint that carries an output's value during the trace
    ``<output>_h`` (``pi_h`` for ``pi`` in BFS, Bellman-Ford, DFS and the
    fork's variants); a twin must also share the output's location and type.
    Hints without a twin (``reach_h``, ``d``, ``color``...) get none.
    """
    entries = config.spec_entries()
    outputs = {
        name: (loc, typ) for name, stage, loc, typ in entries if stage == Stage.OUTPUT
    }
    return {
        name: name[: -len("_h")]
        for name, stage, loc, typ in entries
        if stage == Stage.HINT
        and name.endswith("_h")
        and outputs.get(name[: -len("_h")]) == (loc, typ)
    }


def pre_output_window(config: NetworkConfig, batch: Batch, num_steps: int) -> jax.Array:
    """``[S, B]`` the steps of ``external_pre_output``, one window for every hint.

    Per sample, the earliest :func:`~nar_gap.tasks.counted_steps.last_equal_step`
    over the spec's twins cuts the trace (:func:`output_twins`); a spec
    without twins keeps every external step.
    """
    locations = {name: loc for name, _, loc, _ in config.spec_entries()}
    cut = jnp.full(jnp.asarray(batch.lengths).shape, -1)
    for hint, output in output_twins(config).items():
        real = batch.node_mask if locations[hint] == Location.NODE else None
        last = last_equal_step(
            batch.hints[hint], batch.outputs[output], batch.lengths, real
        )
        cut = jnp.where((cut < 0) | ((last >= 0) & (last < cut)), last, cut)
    return pre_output_steps(batch.lengths, cut, num_steps)


# --------------------------------------------------------------------------- #
# External faithfulness (Eq. 25).
# --------------------------------------------------------------------------- #


def _element_matches(
    typ: str, pred: jax.Array, truth: jax.Array, margins: Margins
) -> tuple[jax.Array, jax.Array]:
    """(match, valid) per element of one step: ``[B, N]`` or ``[B]``."""
    if typ == Type.POINTER:
        return jnp.argmax(pred, -1) == truth, jnp.ones(truth.shape, bool)
    if typ == Type.SCALAR:
        return jnp.abs(pred - truth) <= margins.scalar, jnp.ones(truth.shape, bool)
    if typ == Type.MASK:
        logit_threshold = np.log(margins.mask_threshold / (1 - margins.mask_threshold))
        return (pred > logit_threshold) == (truth > 0.5), truth != MASKED
    if typ in (Type.MASK_ONE, Type.CATEGORICAL):
        valid = jnp.all(truth != MASKED, axis=-1)
        return jnp.argmax(pred, -1) == jnp.argmax(truth, -1), valid
    raise NotImplementedError(f"no external-faithfulness margin for type {typ!r}")


def step_matches(
    config: NetworkConfig,
    hint_preds: Mapping[str, jax.Array],
    batch: Batch,
    margins: Margins = DEFAULT_MARGINS,
) -> dict[str, tuple[jax.Array, jax.Array]]:
    """Per hint: ``(node_fraction, all_match)``, each ``[S, B]``, and NaN-free.

    ``node_fraction[t, b]`` is the fraction of sample b's real nodes whose
    step-t prediction matches ``hint[t + 1]``; ``all_match`` is 1 when every
    one does.  Values at steps that do not count (see :func:`external_steps`)
    are meaningless and must be masked by the caller.
    """
    result = {}
    for name, stage, loc, typ in config.spec_entries():
        if stage != Stage.HINT:
            continue
        preds = hint_preds[name]  # [S, B, ...]
        num_steps = preds.shape[0]
        truth = jnp.asarray(batch.hints[name])[1 : num_steps + 1]
        if truth.shape[0] < num_steps:  # a one-hint batch: nothing to predict
            pad = [(0, num_steps - truth.shape[0])] + [(0, 0)] * (truth.ndim - 1)
            truth = jnp.pad(truth, pad)
        match, valid = jax.vmap(
            lambda p, t, typ=typ: _element_matches(typ, p, t, margins)
        )(preds, truth)
        # A mask_one hint is one choice over the nodes: one element per
        # sample, as a graph hint is ([S, B] after the argmax).
        if loc == Location.NODE and typ != Type.MASK_ONE:  # [S, B, N]: real nodes
            valid = valid & jnp.asarray(batch.node_mask)[None]
            count = jnp.sum(valid, -1)
            hits = jnp.sum(match & valid, -1)
            fraction = hits / jnp.maximum(count, 1)
            every = hits == count
        else:  # graph-located or mask_one: one element per sample
            fraction = (match & valid).astype(jnp.float32)
            every = match | ~valid
        result[name] = (fraction.astype(jnp.float32), every.astype(jnp.float32))
    return result


def _trace_mean(values: jax.Array, valid: jax.Array) -> jax.Array:
    """Mean over each sample's valid steps, then over samples that have one."""
    weight = valid.astype(jnp.float32)
    steps = jnp.sum(weight, 0)  # [B]
    per_sample = jnp.sum(values * weight, 0) / jnp.maximum(steps, 1)
    has_steps = (steps > 0).astype(jnp.float32)
    return jnp.sum(per_sample * has_steps) / jnp.maximum(jnp.sum(has_steps), 1)


def _window_mean(values: jax.Array, valid: jax.Array) -> jax.Array:
    """:func:`_trace_mean`, but NaN when no sample keeps a step (not a 0)."""
    kept = jnp.any(jnp.asarray(valid, bool))
    return jnp.where(kept, _trace_mean(values, valid), jnp.nan)


def external_scores(
    config: NetworkConfig,
    hint_preds: Mapping[str, jax.Array],
    batch: Batch,
    margins: Margins = DEFAULT_MARGINS,
) -> dict[str, jax.Array]:
    """Eq. 25 and its pre-output variant from hint predictions ``[S, B, ...]``.

    Pure and unjitted (:func:`measure_one` calls it on the network's
    predictions; tests on hand-made ones).  Keys: ``external`` and
    ``external_strict`` (means over hints), per hint ``external_<hint>``,
    ``_strict``, ``_along_time`` and ``_steps`` (``[S, B]``); and
    ``external_pre_output`` with ``external_pre_output_<hint>`` over
    :func:`pre_output_window`'s steps.
    """
    result: dict[str, jax.Array] = {}
    matches = step_matches(config, hint_preds, batch, margins)
    if not matches:
        return result
    num_steps = next(iter(matches.values()))[0].shape[0]
    valid = external_steps(batch.lengths, num_steps)
    window = pre_output_window(config, batch, num_steps)
    per_hint, strict, before = [], [], []
    for name, (fraction, every) in matches.items():
        result[f"external_{name}"] = _trace_mean(fraction, valid)
        result[f"external_{name}_strict"] = _trace_mean(every, valid)
        result[f"external_{name}_along_time"] = _along_time(fraction, valid)
        result[f"external_{name}_steps"] = fraction  # [S, B], for rescaling
        result[f"external_pre_output_{name}"] = _window_mean(fraction, window)
        per_hint.append(result[f"external_{name}"])
        strict.append(result[f"external_{name}_strict"])
        before.append(result[f"external_pre_output_{name}"])
    result["external"] = jnp.mean(jnp.stack(per_hint))
    result["external_strict"] = jnp.mean(jnp.stack(strict))
    result["external_pre_output"] = jnp.mean(jnp.stack(before))
    return result


def _along_time(values: jax.Array, valid: jax.Array) -> jax.Array:
    """``[S]`` mean over the samples for which each step counts (NaN if none)."""
    weight = valid.astype(jnp.float32)
    count = jnp.sum(weight, 1)
    return jnp.where(
        count > 0, jnp.sum(values * weight, 1) / jnp.maximum(count, 1), jnp.nan
    )


# --------------------------------------------------------------------------- #
# Internal faithfulness (Eq. 24).
# --------------------------------------------------------------------------- #


def head_averaged(attention: jax.Array) -> jax.Array:
    """``[S, B, H, N, N] -> [S, B, N, N]``: one distribution per receiver."""
    return jnp.mean(attention, axis=2)


def receiver_l1(att_a: jax.Array, att_b: jax.Array) -> jax.Array:
    """``[S, B, N]`` L1 distance of every receiver's attention row, in [0, 2]."""
    return jnp.sum(jnp.abs(att_a - att_b), axis=-1)


def internal_distance(
    att_a: jax.Array, att_b: jax.Array, lengths: jax.Array, node_mask: jax.Array
) -> dict[str, jax.Array]:
    """Normalised Eq. 24 between two head-averaged attention series ``[S, B, N, N]``.

    Returns:
      ``distance``: the mean over samples of each sample's normalised distance;
      ``along_time``: ``[S]``, the same normalisation per step over the samples
      for which the step counts (NaN where none does);
      ``per_sample``: ``[B]``.
    """
    num_steps = att_a.shape[0]
    l1 = receiver_l1(att_a, att_b)  # [S, B, N]
    receivers = jnp.asarray(node_mask).astype(jnp.float32)  # [B, N]
    steps = internal_steps(lengths, num_steps).astype(jnp.float32)  # [S, B]
    per_step_sample = jnp.sum(l1 * receivers[None], -1)  # [S, B]
    n_real = jnp.sum(receivers, -1)  # [B]
    per_sample = jnp.sum(per_step_sample * steps, 0) / (
        2.0 * jnp.maximum(jnp.sum(steps, 0) * n_real, 1)
    )
    denominators = jnp.sum(steps * n_real[None], 1)  # [S]
    along_time = jnp.where(
        denominators > 0,
        jnp.sum(per_step_sample * steps, 1) / (2.0 * jnp.maximum(denominators, 1)),
        jnp.nan,
    )
    return {
        "distance": jnp.mean(per_sample),
        "along_time": along_time,
        "per_sample": per_sample,
    }


# --------------------------------------------------------------------------- #
# Calibrating the internal distance: what does 0.75 mean?
#
# Eq. 24 compares whole attention rows, so a model that attends mostly to the
# compiled model's choice but spreads the rest of its mass (a soft, unsharp
# row) is "far" although it picks the same sender.  The measures below tell
# the two apart: which sender wins (argmax agreement), the distance once the
# model's rows are sharpened (to the argmax, or at a temperature), the paper's
# unnormalised sum, and reference attentions built from the graph alone.
# --------------------------------------------------------------------------- #

SHARPENING_TEMPERATURES = (0.5, 0.1)  # besides 0 (the argmax); ours, documented
# The names :func:`calibrated_measures` returns, in the order tables show them.
GAP_MEASURES = (
    "internal",
    "internal_argmax",
    *(f"internal_t{t:g}" for t in SHARPENING_TEMPERATURES),
    "argmax_agreement",
    "l1_unnormalised",
)
TIE_TOLERANCE = 1e-6  # senders within this of a row's maximum share the argmax


def _counted(lengths: jax.Array, node_mask: jax.Array, num_steps: int) -> jax.Array:
    """``[S, B, N]`` weight 1 on every counted step of every real receiver."""
    steps = internal_steps(lengths, num_steps).astype(jnp.float32)  # [S, B]
    receivers = jnp.asarray(node_mask).astype(jnp.float32)  # [B, N]
    return steps[:, :, None] * receivers[None]


def _sample_mean(values: jax.Array, weight: jax.Array) -> jax.Array:
    """Mean over each sample's counted (step, receiver) cells, then over samples."""
    per_sample = jnp.sum(values * weight, (0, 2)) / jnp.maximum(
        jnp.sum(weight, (0, 2)), 1
    )
    return jnp.mean(per_sample)


def argmax_rows(attention: jax.Array, tolerance: float = TIE_TOLERANCE) -> jax.Array:
    """One-hot rows on each receiver's most-attended sender, ties shared equally.

    A compiled row is one-hot already; sharing ties keeps a uniform row
    uniform instead of handing it to the lowest index.
    """
    top = jnp.max(attention, axis=-1, keepdims=True)
    winners = (attention >= top - tolerance).astype(attention.dtype)
    return winners / jnp.sum(winners, axis=-1, keepdims=True)


def sharpened(attention: jax.Array, temperature: float) -> jax.Array:
    """Each row raised to ``1 / temperature`` and renormalised (0: :func:`argmax_rows`).

    Temperature 1 is the row itself; towards 0 the mass moves to the row's
    maximum.  Computed as a softmax of ``log(a) / temperature`` so small
    temperatures do not underflow; zero entries (non-neighbours) stay zero.
    """
    if temperature == 0:
        return argmax_rows(attention)
    logs = jnp.where(attention > 0, jnp.log(jnp.maximum(attention, 1e-38)), -jnp.inf)
    return jax.nn.softmax(logs / temperature, axis=-1)


def argmax_agreement(
    attention: jax.Array,
    reference: jax.Array,
    lengths: jax.Array,
    node_mask: jax.Array,
    tolerance: float = TIE_TOLERANCE,
) -> jax.Array:
    """Fraction of receivers whose most-attended sender is one the reference picks.

    Over counted steps and real receivers, averaged per sample then over
    samples, like :func:`internal_distance`.  A receiver agrees when the
    model's most-attended sender is among its reference row's maxima (within
    ``tolerance``); a tie in the model's row counts as a random choice among
    its tied senders (agreement = the share of them the reference picks), so
    a uniform row over k neighbours agrees 1/k of the time with a one-hot one.
    """
    picked = argmax_rows(reference, tolerance) > 0
    agrees = jnp.sum(argmax_rows(attention, tolerance) * picked, axis=-1)
    return _sample_mean(agrees, _counted(lengths, node_mask, attention.shape[0]))


def unnormalised_l1(
    att_a: jax.Array, att_b: jax.Array, lengths: jax.Array, node_mask: jax.Array
) -> jax.Array:
    """The paper's Eq. 24 as a plain sum, ``Σ_t Σ_i Σ_j |a - b|``, mean over samples.

    Counted steps and real receivers only.  It grows with the graph size and
    the trace length, so it compares models on the same graphs only; the
    normalised :func:`internal_distance` is this divided by
    ``2 x steps x receivers`` per sample.
    """
    weight = _counted(lengths, node_mask, att_a.shape[0])
    return jnp.mean(jnp.sum(receiver_l1(att_a, att_b) * weight, (0, 2)))


def calibrated_measures(
    attention: jax.Array,
    reference: jax.Array,
    lengths: jax.Array,
    node_mask: jax.Array,
    temperatures: tuple[float, ...] = SHARPENING_TEMPERATURES,
) -> dict[str, jax.Array]:
    """Every gap measure of one attention series against a reference, by name.

    ``internal`` (Eq. 24, normalised), ``internal_argmax`` (after sharpening
    the model's rows to their argmax), ``internal_t<T>`` (at temperature T),
    ``argmax_agreement`` and ``l1_unnormalised``.
    """

    def distance(att: jax.Array) -> jax.Array:
        return internal_distance(att, reference, lengths, node_mask)["distance"]

    result = {
        "internal": distance(attention),
        "internal_argmax": distance(sharpened(attention, 0.0)),
        "argmax_agreement": argmax_agreement(attention, reference, lengths, node_mask),
        "l1_unnormalised": unnormalised_l1(attention, reference, lengths, node_mask),
    }
    for temperature in temperatures:
        result[f"internal_t{temperature:g}"] = distance(
            sharpened(attention, temperature)
        )
    return result


def neighbourhood(batch: Batch) -> np.ndarray:
    """``[B, N, N]`` bool: the senders a receiver may attend to at step 0.

    Edges in either direction and self loops, on real nodes (GATv2's support
    before any fed-back pointer joins the adjacency).
    """
    adj = np.asarray(batch.inputs["adj"]) > 0
    real = np.asarray(batch.node_mask, bool)
    n = adj.shape[-1]
    support = adj | np.swapaxes(adj, 1, 2) | np.eye(n, dtype=bool)[None]
    return support & real[:, None, :] & real[:, :, None]


def uniform_attention(batch: Batch, num_steps: int) -> np.ndarray:
    """Reference point: each receiver attends evenly to its whole neighbourhood.

    ``[S, B, N, N]``, the same rows at every step (the graph's support; a
    trained model's later steps may also attend along fed-back pointers).
    Padded receivers attend to themselves.
    """
    support = neighbourhood(batch)
    n = support.shape[-1]
    support = (
        support
        | (~np.asarray(batch.node_mask, bool))[:, :, None] & np.eye(n, dtype=bool)[None]
    )
    rows = support / support.sum(-1, keepdims=True)
    return np.broadcast_to(rows[None], (num_steps, *rows.shape)).astype(np.float32)


def self_attention(batch: Batch, num_steps: int) -> np.ndarray:
    """Reference point: every receiver attends only to itself, ``[S, B, N, N]``."""
    b, n = np.asarray(batch.node_mask).shape
    eye = np.broadcast_to(np.eye(n, dtype=np.float32), (num_steps, b, n, n))
    return np.array(eye)


def forward_pass(
    config: NetworkConfig, params: Any, batch: Batch, forced: bool = False
) -> Any:
    """The network on ``batch``: its own rollout, or (``forced``) teacher-forced.

    Teacher forcing at rate 1 draws no coins and dropout is off, so the forced
    pass needs no random streams.
    """
    if not forced:
        return Network(config).apply({"params": params}, batch, repred=True)
    return Network(teacher_forced(config)).apply(
        {"params": params}, batch, repred=False
    )


def measure_one(
    config: NetworkConfig,
    params: Any,
    batch: Batch,
    reference_attention: jax.Array | None,
    margins: Margins = DEFAULT_MARGINS,
    forced: bool = False,
) -> dict[str, Any]:
    """Accuracy, external and internal faithfulness of one parameter set.

    Unjitted and pure: :func:`~nar_gap.analysis.models.measure_models` vmaps
    and jits it over seeds.
    ``reference_attention`` is the compiled model's head-averaged attention on
    the same batch (``[S, B, N, N]``), run the same way; None skips the
    internal measure.  ``forced``: teacher-forced
    (:func:`~nar_gap.model.activations.teacher_forced`), so the attention is
    read on the true trace; accuracy is then the output
    score given the true hints.
    """
    out = forward_pass(config, params, batch, forced)
    attention = head_averaged(out.attention)
    result: dict[str, Any] = {
        "accuracy": output_scores(config, out, batch)["score"],
        "attention": attention,
    }
    if config.decode_hints:
        result.update(external_scores(config, out.hint_preds, batch, margins))
    if reference_attention is not None:
        if reference_attention.shape != attention.shape:
            raise ValueError(
                f"reference attention has shape {reference_attention.shape}, the "
                f"model's {attention.shape}: run both on the same batch"
            )
        internal = internal_distance(
            attention, reference_attention, batch.lengths, batch.node_mask
        )
        result.update(
            calibrated_measures(
                attention, reference_attention, batch.lengths, batch.node_mask
            )
        )
        result["internal_along_time"] = internal["along_time"]
    return result


def uniform_bins(valid: np.ndarray) -> int:
    """Bins of the normalised timescale: the longest counted trace, at most 10.

    More bins than the longest trace has steps would leave bins empty by
    construction (on CLRS's test graphs, BFS traces have only 2-3 steps).
    """
    longest = int(np.asarray(valid, bool).sum(0).max(initial=1))
    return int(np.clip(longest, 1, MAX_UNIFORM_BINS))


def uniform_timescale(values: np.ndarray, valid: np.ndarray, bins: int) -> np.ndarray:
    """``[S, B]`` per-step values -> ``[bins]`` on each trace's own [0, 1] clock.

    Step t of a sample with ``m`` counted steps sits at ``(t + 0.5) / m``;
    every bin averages the (step, sample) pairs that fall in it, so long and
    short traces contribute on one uniform timescale (Figure 4).  Empty bins
    are NaN.
    """
    values = np.asarray(values, np.float64)
    valid = np.asarray(valid, bool)
    counted = valid.sum(0)  # [B]
    steps = np.arange(values.shape[0])[:, None]
    position = (steps + 0.5) / np.maximum(counted, 1)[None, :]
    index = np.minimum((position * bins).astype(int), bins - 1)
    total = np.zeros(bins)
    count = np.zeros(bins)
    np.add.at(total, index[valid], values[valid])
    np.add.at(count, index[valid], 1)
    with np.errstate(invalid="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


@functools.partial(jax.jit, static_argnames=())
def _distance_row(
    att: jax.Array, row: jax.Array, lengths: jax.Array, node_mask: jax.Array
) -> jax.Array:
    return jax.vmap(lambda other: internal_distance(row, other, lengths, node_mask))(
        att
    )["distance"]


def pairwise_internal_distances(
    attention: np.ndarray, lengths: np.ndarray, node_mask: np.ndarray
) -> np.ndarray:
    """``[K, K]`` normalised Eq. 24 between every pair of ``[K, S, B, N, N]`` series.

    One jitted call per row, vmapped over the other seeds; symmetric with a
    zero diagonal by construction of the L1 distance.
    """
    att = jnp.asarray(attention)
    lengths, node_mask = jnp.asarray(lengths), jnp.asarray(node_mask)
    rows = [
        np.asarray(_distance_row(att, att[k], lengths, node_mask))
        for k in range(att.shape[0])
    ]
    matrix = np.stack(rows).astype(np.float64)
    matrix = 0.5 * (matrix + matrix.T)  # float32 sums may differ in the last bit
    np.fill_diagonal(matrix, 0.0)
    return matrix
