"""A network's hint loop one step at a time, for memory of one step, not the trace.

:class:`~nar_gap.model.network.Network` scans its
:class:`~nar_gap.model.network.Step` over the whole trace and returns every
step's attention, pointer logits, hidden state and decoder inputs, ``[S, B,
N, N]`` and up: about 44 bytes per step and node pair, which on DFS's
``S = 3N`` steps took a 600-node graph past 24 GB.  A compiled model run on
a user's graph keeps only the decoded hints (``[S, B, N]``).  :class:`Stepper`
applies the same ``Step`` module to the same parameters, one jitted call per
step, and hands each step's decoded hints and attention to its caller, who
keeps what it needs; the outputs are decoded once, from the inputs of each
sample's output step (:func:`~nar_gap.model.network.output_steps`), as the
network decodes them.  Its numbers are the scan's bit for bit
(``tests/compiler/test_stepping.py``), which is what ties this module to
``Network.__call__``: the constants, the first carry and the output step
are built as it builds them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nar_gap.model.config import NetworkConfig
from nar_gap.model.decoders import placeholder_preds, postprocess, to_dense
from nar_gap.model.network import (
    DecoderInputs,
    Step,
    _Constants,
    _OutputDecoders,
    output_steps,
)
from nar_gap.tasks.batch import Batch
from nar_gap.tasks.vocabulary import Stage, Type

Params = Any


@dataclasses.dataclass(frozen=True)
class StepOut:
    """One hint step: step ``index`` predicts hint ``index + 1``.

    Attributes:
      index: the step, ``0 .. S - 1``.
      hints: ``{name: [B, ...]}`` the decoded predictions (hard
        post-processing: pointers as node indices, masks 0/1), on the host,
        pointers as ints and everything else float64.
      attention: ``[B, H, N, N]`` this step's attention, on the device, if
        the :class:`Stepper` was asked for it (else None); kept only as long
        as the caller holds it.
    """

    index: int
    hints: dict[str, np.ndarray]
    attention: jax.Array | None


# Steps per compiled chunk: enough that a step's buffers are reused many
# times; with the attention handed out, as many as fit ATTENTION_CHUNK_BYTES.
MAX_CHUNK = 64
ATTENTION_CHUNK_BYTES = 64 * 2**20


def chunk_length(batch: Batch, num_steps: int, heads: int) -> int:
    """Steps per chunk: :data:`MAX_CHUNK`, fewer where the attention would not fit.

    ``heads``: attention heads handed out per step (0: none).  Never more
    than the trace, so a short trace compiles one chunk of its
    own length and runs no step it does not need.
    """
    if not heads:
        return min(num_steps, MAX_CHUNK)
    batch_size, num_nodes = np.shape(batch.node_mask)
    per_step = batch_size * heads * num_nodes**2 * 8  # at most 8 bytes a float
    return max(1, min(num_steps, MAX_CHUNK, ATTENTION_CHUNK_BYTES // per_step))


def clrs_value(typ: str, decoded: Any) -> np.ndarray:
    """A decoded probe on the host: pointers as they are, the rest float64."""
    value = np.asarray(decoded)
    return value if typ == Type.POINTER else value.astype(np.float64)


def _keep_rows(chosen: DecoderInputs, inputs: DecoderInputs, rows: jax.Array):
    """``chosen`` with the samples in ``rows`` (``[B]`` bool) taken from ``inputs``.

    The edge kernel and bias come from the parameters, the same at every step.
    """

    def pick(old: jax.Array, new: jax.Array) -> jax.Array:
        return jnp.where(rows.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)

    edges = dataclasses.replace(
        inputs.edges, scalars=pick(chosen.edges.scalars, inputs.edges.scalars)
    )
    return DecoderInputs(
        pick(chosen.h_t, inputs.h_t), edges, pick(chosen.graph_fts, inputs.graph_fts)
    )


@functools.lru_cache(maxsize=16)
def _chunk_function(
    config: NetworkConfig, precision: str | None, length: int, attention: bool
) -> Callable:
    """The jitted run of ``length`` steps from step ``start``, one per shape.

    A ``lax.scan`` over the steps, as the network's own, so that XLA reuses
    one step's buffers across the chunk (a call per step allocated and
    zeroed them anew: most of a 600-node run's time went to the kernel).
    Per step it hands out the decoded hints, the attention only if
    ``attention``, and carries the output step's decoder inputs
    (:func:`_keep_rows`).
    """
    step = Step(config, repred=True)
    types = {name: typ for name, stage, _, typ in config.spec_entries()}

    def run_chunk(params, state, start, hints, consts, output_steps):
        def one_step(state, index):
            carry, chosen = state
            carry, (preds, weights, _, inputs) = step.apply(
                {"params": params}, carry, (index, hints), consts
            )
            chosen = _keep_rows(chosen, inputs, output_steps == index)
            decoded = {n: postprocess(types[n], v, hard=True) for n, v in preds.items()}
            return (carry, chosen), (decoded, weights if attention else None)

        with jax.default_matmul_precision(precision):
            return jax.lax.scan(one_step, state, start + jnp.arange(length))

    return jax.jit(run_chunk)


@functools.lru_cache(maxsize=16)
def _output_function(config: NetworkConfig, precision: str | None) -> Callable:
    """The jitted output decoders, applied to each sample's output step."""
    types = {name: typ for name, stage, _, typ in config.spec_entries()}

    def decode_outputs(params, chosen, consts):
        with jax.default_matmul_precision(precision):
            raw = _OutputDecoders(config, parent=None).apply(
                {"params": params}, chosen, consts
            )
        return {n: postprocess(types[n], v, hard=True) for n, v in raw.items()}

    return jax.jit(decode_outputs)


class Stepper:
    """A network's evaluation-mode hint loop on one batch, a step per iteration.

    Iterate it for the :class:`StepOut` of every step, then read
    :meth:`outputs`.  Run it inside the model's numerics (x64 for a float64
    model): the batch is read in the dtype JAX gives it there, as the
    network's own forward pass reads it.
    """

    def __init__(
        self,
        config: NetworkConfig,
        params: Params,
        batch: Batch,
        precision: str | None = None,
        attention: bool = False,
    ) -> None:
        if batch.algorithm != config.algorithm:
            raise ValueError(
                f"network built for {config.algorithm!r} got a {batch.algorithm!r} "
                "batch"
            )
        self.config, self.params, self.batch = config, params, batch
        self.precision = precision
        self.num_steps = max(1, next(iter(batch.hints.values())).shape[0] - 1)
        self.output_steps = np.asarray(
            output_steps(np.asarray(batch.lengths), self.num_steps)
        )
        self._types = {name: typ for name, _, _, typ in config.spec_entries()}
        self._consts = self._constants()
        self._chosen: DecoderInputs | None = None
        self.with_attention = attention
        self.chunk = chunk_length(
            batch, self.num_steps, config.num_heads if attention else 0
        )

    def _class_sizes(self) -> dict[str, int]:
        batch = self.batch
        return {
            name: int(data.shape[-1])
            for group in (batch.inputs, batch.hints, batch.outputs)
            for name, data in group.items()
            if self._types.get(name) == Type.CATEGORICAL
        }

    def _constants(self) -> _Constants:
        num_nodes = self.batch.node_mask.shape[1]
        return _Constants(
            inputs={
                n: to_dense(jnp.asarray(d), self._types[n], num_nodes)
                for n, d in self.batch.inputs.items()
            },
            lengths=jnp.asarray(self.batch.lengths),
            node_mask=jnp.asarray(self.batch.node_mask),
            class_sizes=tuple(sorted(self._class_sizes().items())),
        )

    def _first_hints(self) -> dict[str, jax.Array]:
        """Dense ground-truth hint 0, fed at every step.

        In evaluation mode only step 0 encodes the ground truth
        (:func:`~nar_gap.model.encoders.hints_to_encode` selects the fed-back
        predictions at every later step), so later steps' truth would be
        computed and thrown away: hint 0 stands in for it, with the same
        result.
        """
        if not self.config.encode_hints:
            return {}
        num_nodes = self.batch.node_mask.shape[1]
        return {
            n: to_dense(jnp.asarray(d[0]), self._types[n], num_nodes)
            for n, d in self.batch.hints.items()
        }

    def _first_carry(self) -> tuple[jax.Array, dict[str, jax.Array]]:
        cfg = self.config
        batch_size, num_nodes = self.batch.node_mask.shape
        sizes = (batch_size, num_nodes, self._class_sizes())
        preds = (
            placeholder_preds(cfg.spec_entries(), Stage.HINT, *sizes)
            if cfg.decode_hints
            else {}
        )
        return jnp.zeros((batch_size, num_nodes, cfg.hidden_size)), preds

    def _first_chosen(self, carry, hints) -> DecoderInputs:
        """Zeros shaped as one step's decoder inputs (each sample's output step's)."""
        step = Step(self.config, repred=True)
        index = jnp.asarray(0)
        shapes = jax.eval_shape(
            lambda: step.apply(
                {"params": self.params["net"]}, carry, (index, hints), self._consts
            )[1][3]
        )
        return jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    def __iter__(self) -> Iterator[StepOut]:
        """Every step, a chunk at a time, each chunk read once the next is under way.

        JAX dispatches a chunk and returns; reading its hints waits for it.
        Reading chunk ``c`` after chunk ``c + 1`` is dispatched keeps the
        device busy while Python reads.  The last chunk runs past the trace
        to the chunk's length (at most ``chunk - 1`` steps, thrown away:
        one compiled length).
        """
        net, hints = self.params["net"], self._first_hints()
        carry = self._first_carry()
        state = (carry, self._first_chosen(carry, hints))
        run = _chunk_function(
            self.config, self.precision, self.chunk, self.with_attention
        )
        wanted = jnp.asarray(self.output_steps)
        pending = None
        for start in range(0, self.num_steps, self.chunk):
            state, ys = run(net, state, jnp.asarray(start), hints, self._consts, wanted)
            if pending is not None:
                yield from self._read(*pending)
            pending = (start, ys)
        yield from self._read(*pending)
        self._chosen = state[1]

    def _read(self, start: int, ys) -> Iterator[StepOut]:
        decoded, attention = ys
        host = {n: np.asarray(v) for n, v in decoded.items()}
        for k in range(min(self.chunk, self.num_steps - start)):
            hints = {n: clrs_value(self._types[n], v[k]) for n, v in host.items()}
            yield StepOut(start + k, hints, None if attention is None else attention[k])

    def outputs(self) -> dict[str, np.ndarray]:
        """The decoded outputs ``{name: [B, ...]}``, after every step has run."""
        if self._chosen is None:
            raise RuntimeError("Stepper.outputs() before its steps have run")
        net = self.params["net"]
        decoders = {k: v for k, v in net.items() if k.startswith("decoder_")}
        decoded = _output_function(self.config, self.precision)(
            decoders, self._chosen, self._consts
        )
        return {n: clrs_value(self._types[n], v) for n, v in decoded.items()}
