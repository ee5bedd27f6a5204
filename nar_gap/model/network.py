"""Encoders, GATv2 processor and decoders around the CLRS hint loop, in Flax.

The network mirrors dm-clrs's ``nets.Net`` step for step (reference:
``clrs-semantics.md`` §3, §5):

* ``S = max(1, T - 1)`` steps run for every sample, ``T`` the hint time axis of
  the batch (also in hint mode ``none``).  Step ``t`` encodes the inputs and
  (``encoded_decoded``) the hint for time ``t``, runs the processor, and decodes
  the predictions of hint ``t + 1`` and a candidate output.
* Step 0 always encodes the ground-truth ``hint[0]``.  Later steps encode the
  network's own post-processed predictions (``repred=True``, evaluation), or in
  training a per-sample Bernoulli(``hint_teacher_forcing``) mix of ground truth
  and predictions.  ``hint_repred_mode`` chooses soft (sigmoid / softmax, with
  gradients) or hard (threshold / argmax) feedback.
* The returned output of sample ``b`` is the candidate of step
  ``max(0, L_b - 2)`` (later steps are blended out with ``[L_b > t + 1]``).

Unlike dm-clrs, step 0 runs inside the same ``scan`` as the others (one trace,
one compile), and everything honours ``Batch.node_mask``: padded nodes are cut
from the attention graph, from pointer and ``mask_one`` softmaxes and from
max-pooling, so a padded batch computes exactly what the unpadded one does.
That is what lets training bucket graph sizes into a few compiled shapes.

Parameters are laid out as ``{"net": {"encoder_<name>", "processor",
"decoder_<name>": {"linear_<k>"}}}`` with Dense ``kernel`` ``[in, out]`` and
``bias``; :mod:`nar_gap.clrs_import` maps dm-clrs's Haiku names onto it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from nar_gap.data import Batch
from nar_gap.gatv2 import EdgeFeatures, GATv2, VectorHead
from nar_gap.specs import get_spec

HintMode = Literal["encoded_decoded", "decoded_only", "none"]
Reprediction = Literal["soft", "hard", "hard_on_eval"]
EncoderInit = Literal["default", "xavier_on_scalars"]

HINT_MODES: tuple[str, ...] = ("encoded_decoded", "decoded_only", "none")
REPRED_MODES: tuple[str, ...] = ("soft", "hard", "hard_on_eval")
# Logit given to padded nodes in node-axis softmaxes: exp underflows to exactly 0
# against any real logit, yet stays finite so the output blend never makes NaN.
PADDED_LOGIT = -1e9

# dm-clrs types and locations (strings, as in clrs.Type / clrs.Location).
SCALAR, MASK, MASK_ONE, CATEGORICAL, POINTER = (
    "scalar",
    "mask",
    "mask_one",
    "categorical",
    "pointer",
)
NODE, EDGE, GRAPH = "node", "edge", "graph"
INPUT, OUTPUT, HINT = "input", "output", "hint"

SpecEntry = tuple[str, str, str, str]  # (name, stage, location, type)


def haiku_linear_init(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32):
    """Haiku's default Linear init: truncated normal (±2σ), σ = 1/sqrt(fan_in).

    Flax's ``lecun_normal`` rescales the truncated draw to unit variance; Haiku
    does not.  Training from scratch should start where dm-clrs starts.
    """
    stddev = 1.0 / jnp.sqrt(shape[0])
    return stddev * jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)


def _truncated_normal(stddev: float):
    def init(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32):
        return stddev * jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)

    return init


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Architecture and hint-loop options; defaults are the paper's (run.py's).

    Attributes:
      algorithm: one of :data:`nar_gap.specs.ALGORITHMS`.
      hidden_size: D (benchmark 128; the paper's minimal models use 4).
      num_heads: H attention heads; must divide ``hidden_size``.
      use_ln: layer norm at the end of the processor.
      hint_mode: ``encoded_decoded`` | ``decoded_only`` | ``none``.
      hint_repred_mode: ``soft`` | ``hard`` | ``hard_on_eval``.
      hint_teacher_forcing: probability of feeding ground-truth hints in training.
      msg_passing_steps: processor applications per hint step (shared weights).
      dropout_prob: dropout on the processor output, training only.
      use_edge_info: the paper's edge information in the selected values.
      use_pre_att_bias: the paper's learned ``N x N`` pre-attention bias.
      pre_att_bias_nodes: side of that bias (largest graph it accepts).
      encoder_init: ``xavier_on_scalars`` (run.py) or ``default``.
    """

    algorithm: str
    hidden_size: int = 128
    num_heads: int = 1
    use_ln: bool = True
    hint_mode: HintMode = "encoded_decoded"
    hint_repred_mode: Reprediction = "soft"
    hint_teacher_forcing: float = 0.0
    msg_passing_steps: int = 1
    dropout_prob: float = 0.0
    use_edge_info: bool = False
    use_pre_att_bias: bool = False
    pre_att_bias_nodes: int = 16
    encoder_init: EncoderInit = "xavier_on_scalars"

    def __post_init__(self) -> None:
        problems = []
        get_spec(self.algorithm)  # raises UnknownAlgorithmError with the known names
        if self.hidden_size < 1:
            problems.append(f"hidden_size must be >= 1, got {self.hidden_size}")
        if self.num_heads < 1 or self.hidden_size % max(self.num_heads, 1):
            problems.append(
                f"num_heads must be >= 1 and divide hidden_size={self.hidden_size},"
                f" got {self.num_heads}"
            )
        if self.hint_mode not in HINT_MODES:
            problems.append(
                f"hint_mode must be one of {HINT_MODES}, got {self.hint_mode!r}"
            )
        if self.hint_repred_mode not in REPRED_MODES:
            problems.append(
                f"hint_repred_mode must be one of {REPRED_MODES}, got "
                f"{self.hint_repred_mode!r}"
            )
        if not 0.0 <= self.hint_teacher_forcing <= 1.0:
            problems.append(
                f"hint_teacher_forcing must be in [0, 1], got {self.hint_teacher_forcing}"
            )
        if self.msg_passing_steps < 1:
            problems.append(
                f"msg_passing_steps must be >= 1, got {self.msg_passing_steps}"
            )
        if not 0.0 <= self.dropout_prob < 1.0:
            problems.append(f"dropout_prob must be in [0, 1), got {self.dropout_prob}")
        if self.pre_att_bias_nodes < 1:
            problems.append(
                f"pre_att_bias_nodes must be >= 1, got {self.pre_att_bias_nodes}"
            )
        if self.encoder_init not in ("default", "xavier_on_scalars"):
            problems.append(f"unknown encoder_init {self.encoder_init!r}")
        if problems:
            raise ValueError("invalid NetworkConfig: " + "; ".join(problems))

    @property
    def encode_hints(self) -> bool:
        return self.hint_mode == "encoded_decoded"

    @property
    def decode_hints(self) -> bool:
        return self.hint_mode in ("encoded_decoded", "decoded_only")

    def spec_entries(self) -> tuple[SpecEntry, ...]:
        """The spec as a hashable tuple, in dm-clrs's order."""
        return tuple(
            (name, stage, loc, typ)
            for name, (stage, loc, typ) in get_spec(self.algorithm).items()
        )


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class NetOutput:
    """Everything one forward pass produces, per step where it varies in time.

    Attributes:
      outputs: raw logits/values of each output, frozen at step ``L_b - 2``.
      hint_preds: raw decoder outputs per step, ``[S, B, ...]`` (step t
        predicts ``hint[t + 1]``).
      attention: ``[S, B, H, N, N]`` attention of the last message-passing
        step of every hint step (rows receivers, columns senders).
      hiddens: ``[S, B, N, D]`` processor output of every step.
    """

    outputs: dict[str, jax.Array]
    hint_preds: dict[str, jax.Array]
    attention: jax.Array
    hiddens: jax.Array


# --------------------------------------------------------------------------- #
# Pure helpers: dense form of CLRS data, feedback post-processing.
# --------------------------------------------------------------------------- #


def to_dense(data: jax.Array, typ: str, num_nodes: int) -> jax.Array:
    """CLRS data -> what encoders read (pointer indices become one-hot rows)."""
    if typ == POINTER:
        return jax.nn.one_hot(data, num_nodes, dtype=jnp.float32)
    return data.astype(jnp.float32)


def feedback_from_logits(logits: jax.Array, typ: str, hard: bool) -> jax.Array:
    """dm-clrs ``decoders.postprocess`` for fed-back hints, in dense form."""
    if typ == SCALAR:
        return jax.lax.stop_gradient(logits) if hard else logits
    if typ == MASK:
        return (logits > 0.0).astype(jnp.float32) if hard else jax.nn.sigmoid(logits)
    if typ in (MASK_ONE, CATEGORICAL, POINTER):
        if hard:
            return jax.nn.one_hot(jnp.argmax(logits, -1), logits.shape[-1])
        return jax.nn.softmax(logits, axis=-1)
    raise NotImplementedError(f"no feedback rule for hint type {typ!r}")


def _mask_nodes_last_axis(logits: jax.Array, node_mask: jax.Array) -> jax.Array:
    """Give padded nodes ``PADDED_LOGIT`` along the last (node) axis."""
    mask = node_mask.reshape(
        node_mask.shape[:1] + (1,) * (logits.ndim - 2) + node_mask.shape[1:]
    )
    return jnp.where(mask, logits, PADDED_LOGIT)


def _expand(x: jax.Array, like: jax.Array) -> jax.Array:
    return x.reshape(x.shape + (1,) * (like.ndim - x.ndim))


# --------------------------------------------------------------------------- #
# Modules.
# --------------------------------------------------------------------------- #


class Linear(nn.Module):
    """``nn.Dense`` that can also hand out its kernel (for factorised edges)."""

    features: int
    kernel_init: Any = haiku_linear_init

    def __call__(self, x: jax.Array) -> jax.Array:
        kernel, bias = self.weights(x.shape[-1])
        return x @ kernel + bias

    @nn.compact
    def weights(self, in_features: int) -> tuple[jax.Array, jax.Array]:
        """The ``[in, out]`` kernel and bias, created on first use."""
        kernel = self.param("kernel", self.kernel_init, (in_features, self.features))
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        return kernel, bias


class PointerDecoder(nn.Module):
    """``l_ij = w4 . max(W1 h_i, W2 h_j + W3 e_ji) + b4`` (dm-clrs node pointer)."""

    hidden_size: int

    @nn.compact
    def __call__(self, h_t: jax.Array, edges: EdgeFeatures) -> jax.Array:
        p_1 = Linear(self.hidden_size, name="linear_0")(h_t)  # [B, N, D]
        p_2 = Linear(self.hidden_size, name="linear_1")(h_t)  # [B, N, D]
        kernel, bias = Linear(self.hidden_size, name="linear_2").weights(
            edges.kernel.shape[-1]
        )
        # W3 e_ji at [i, j]: transpose the K edge scalars, not the D-wide tensor.
        p_3 = edges.transposed().project(kernel, bias)  # [B, N, N, D]
        p_m = jnp.maximum(p_1[:, :, None, :], p_2[:, None, :, :] + p_3)  # [B, i, j, D]
        return VectorHead(kernel_init=haiku_linear_init, name="linear_3").contract(p_m)


class NodeDecoder(nn.Module):
    """scalar / mask / mask_one (one logit) or categorical (C logits) per node."""

    features: int
    squeeze: bool

    @nn.compact
    def __call__(self, h_t: jax.Array) -> jax.Array:
        out = Linear(self.features, name="linear_0")(h_t)
        return out[..., 0] if self.squeeze else out


class GraphDecoder(nn.Module):
    """``L1(max_i h_i) + L2(g)``: graph scalar / mask / categorical."""

    features: int
    squeeze: bool

    @nn.compact
    def __call__(
        self, h_t: jax.Array, graph_fts: jax.Array, node_mask: jax.Array
    ) -> jax.Array:
        pooled = jnp.max(jnp.where(node_mask[..., None], h_t, -jnp.inf), axis=1)
        out = Linear(self.features, name="linear_0")(pooled) + Linear(
            self.features, name="linear_1"
        )(graph_fts)
        return out[..., 0] if self.squeeze else out


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class _Constants:
    """Per-batch values every step reads (broadcast through the scan)."""

    inputs: dict[str, jax.Array]  # dense
    lengths: jax.Array  # [B]
    node_mask: jax.Array  # [B, N]
    class_sizes: tuple[tuple[str, int], ...] = dataclasses.field(
        metadata=dict(static=True)
    )


class Step(nn.Module):
    """One hint step: encode, process, decode.  Scanned over time by Network."""

    config: NetworkConfig
    repred: bool

    def _encoder(self, name: str, stage: str, typ: str) -> Linear:
        cfg = self.config
        init = haiku_linear_init
        if cfg.encoder_init == "xavier_on_scalars" and stage == HINT and typ == SCALAR:
            init = _truncated_normal(1.0 / float(cfg.hidden_size) ** 0.5)
        return Linear(cfg.hidden_size, kernel_init=init, name=f"encoder_{name}")

    @nn.compact
    def __call__(
        self,
        carry: tuple[jax.Array, dict[str, jax.Array], dict[str, jax.Array]],
        xs: tuple[jax.Array, dict[str, jax.Array]],
        consts: _Constants,
    ):
        cfg = self.config
        step, hints_now = xs  # scalar step index; dense ground-truth hint[t]
        hidden, prev_hint_preds, prev_outputs = carry
        batch, num_nodes = consts.node_mask.shape
        spec = cfg.spec_entries()

        # Which hint each name feeds this step (dm-clrs Net._msg_passing_step).
        encoded: dict[str, jax.Array] = {}
        if cfg.encode_hints:
            hard = cfg.hint_repred_mode == "hard" or (
                cfg.hint_repred_mode == "hard_on_eval" and self.repred
            )
            if self.repred or cfg.hint_teacher_forcing == 0.0:
                use_truth = jnp.broadcast_to(step == 0, (batch,))
            elif cfg.hint_teacher_forcing >= 1.0:
                use_truth = jnp.ones((batch,), bool)
            else:
                force = jax.random.bernoulli(
                    self.make_rng("teacher"), cfg.hint_teacher_forcing, (batch,)
                )
                use_truth = force | (step == 0)
            for name, stage, _, typ in spec:
                if stage != HINT:
                    continue
                fed_back = feedback_from_logits(prev_hint_preds[name], typ, hard)
                truth = hints_now[name]
                encoded[name] = jnp.where(_expand(use_truth, truth), truth, fed_back)

        # ENCODE: node, edge (factorised) and graph features, and the adjacency.
        node_fts = jnp.zeros((batch, num_nodes, cfg.hidden_size))
        graph_fts = jnp.zeros((batch, cfg.hidden_size))
        edge_scalars, edge_kernels = [], []
        edge_bias = jnp.zeros((cfg.hidden_size,))
        adjacency = jnp.broadcast_to(jnp.eye(num_nodes), (batch, num_nodes, num_nodes))
        for name, stage, loc, typ in spec:
            if stage == INPUT:
                data = consts.inputs[name]
            elif stage == HINT and name in encoded:
                data = encoded[name]
            else:
                continue
            encoder = self._encoder(name, stage, typ)
            if typ == CATEGORICAL:
                channels = data  # [..., C]
            else:
                channels = data[..., None]
            kernel, bias = encoder.weights(channels.shape[-1])
            if loc == NODE and typ == POINTER:  # a node pointer lives on edges
                edge_scalars.append(channels)
                edge_kernels.append(kernel)
                edge_bias = edge_bias + bias
                adjacency = jnp.maximum(
                    adjacency,
                    (data + jnp.swapaxes(data, 1, 2) > 0.5).astype(jnp.float32),
                )
            elif loc == NODE:
                node_fts = node_fts + channels @ kernel + bias
            elif loc == EDGE and typ in (SCALAR, MASK, MASK_ONE, CATEGORICAL):
                edge_scalars.append(channels)
                edge_kernels.append(kernel)
                edge_bias = edge_bias + bias
                if typ == MASK:
                    adjacency = jnp.maximum(
                        adjacency,
                        (data + jnp.swapaxes(data, 1, 2) > 0.0).astype(jnp.float32),
                    )
            elif loc == GRAPH and typ != POINTER:
                graph_fts = graph_fts + channels @ kernel + bias
            else:
                raise NotImplementedError(
                    f"nar_gap does not encode {loc} {typ} data ({name!r}) yet"
                )
        if edge_scalars:
            edges = EdgeFeatures(
                jnp.concatenate(edge_scalars, -1),
                jnp.concatenate(edge_kernels, 0),
                edge_bias,
            )
        else:
            edges = EdgeFeatures(
                jnp.zeros((batch, num_nodes, num_nodes, 1)),
                jnp.zeros((1, cfg.hidden_size)),
                edge_bias,
            )
        real_pairs = consts.node_mask[:, :, None] & consts.node_mask[:, None, :]
        adjacency = jnp.maximum(adjacency * real_pairs, jnp.eye(num_nodes))

        # PROCESS.
        processor = GATv2(
            hidden_size=cfg.hidden_size,
            num_heads=cfg.num_heads,
            use_ln=cfg.use_ln,
            use_edge_info=cfg.use_edge_info,
            use_pre_att_bias=cfg.use_pre_att_bias,
            pre_att_bias_nodes=cfg.pre_att_bias_nodes,
            kernel_init=haiku_linear_init,
            name="processor",
        )
        new_hidden = hidden
        for _ in range(cfg.msg_passing_steps):
            processed = processor(node_fts, edges, graph_fts, adjacency, new_hidden)
            new_hidden = processed.hidden
        if cfg.dropout_prob > 0.0 and not self.repred:
            new_hidden = nn.Dropout(cfg.dropout_prob, deterministic=False)(
                new_hidden, rng=self.make_rng("dropout")
            )

        # DECODE every output and (if decoded) every hint.
        h_t = jnp.concatenate([node_fts, hidden, new_hidden], axis=-1)  # [B, N, 3D]
        outputs, hint_preds = {}, {}
        for name, stage, loc, typ in spec:
            if stage == INPUT or (stage == HINT and not cfg.decode_hints):
                continue
            preds = self._decode(name, loc, typ, h_t, edges, graph_fts, consts)
            (outputs if stage == OUTPUT else hint_preds)[name] = preds

        # Freeze each sample's output at step L_b - 2 (dm-clrs's blend).
        not_done = ((consts.lengths > step + 1) | (step == 0)).astype(jnp.float32)
        outputs = {
            name: _expand(not_done, out) * out
            + (1.0 - _expand(not_done, out)) * prev_outputs[name]
            for name, out in outputs.items()
        }
        new_carry = (new_hidden, hint_preds, outputs)
        return new_carry, (hint_preds, processed.attention, new_hidden)

    def _decode(self, name, loc, typ, h_t, edges, graph_fts, consts) -> jax.Array:
        cfg = self.config
        if loc == NODE and typ == POINTER:
            logits = PointerDecoder(cfg.hidden_size, name=f"decoder_{name}")(h_t, edges)
            return _mask_nodes_last_axis(logits, consts.node_mask)
        if loc == NODE and typ in (SCALAR, MASK, MASK_ONE):
            logits = NodeDecoder(1, True, name=f"decoder_{name}")(h_t)
            if typ == MASK_ONE:
                logits = _mask_nodes_last_axis(logits, consts.node_mask)
            return logits
        if loc == NODE and typ == CATEGORICAL:
            size = dict(consts.class_sizes)[name]
            return NodeDecoder(size, False, name=f"decoder_{name}")(h_t)
        if loc == GRAPH and typ in (SCALAR, MASK, MASK_ONE, CATEGORICAL):
            size = dict(consts.class_sizes).get(name, 1)
            squeeze = typ != CATEGORICAL
            return GraphDecoder(size, squeeze, name=f"decoder_{name}")(
                h_t, graph_fts, consts.node_mask
            )
        raise NotImplementedError(
            f"nar_gap does not decode {loc} {typ} data ({name!r}) yet"
        )


def _placeholder_preds(
    spec: tuple[SpecEntry, ...],
    stage_wanted: str,
    batch: int,
    num_nodes: int,
    class_sizes: Mapping[str, int],
) -> dict[str, jax.Array]:
    """Zero logits with each decoder's output shape (the scan's initial carry)."""
    shapes = {}
    for name, stage, loc, typ in spec:
        if stage != stage_wanted:
            continue
        if loc == NODE and typ == POINTER:
            shape = (batch, num_nodes, num_nodes)
        elif loc == NODE and typ == CATEGORICAL:
            shape = (batch, num_nodes, class_sizes[name])
        elif loc == NODE:
            shape = (batch, num_nodes)
        elif loc == GRAPH and typ == CATEGORICAL:
            shape = (batch, class_sizes[name])
        elif loc == GRAPH:
            shape = (batch,)
        else:
            raise NotImplementedError(
                f"nar_gap does not decode {loc} {typ} ({name!r}) yet"
            )
        shapes[name] = jnp.zeros(shape, jnp.float32)
    return shapes


class Network(nn.Module):
    """The whole CLRS model: ``apply(params, batch, repred=...) -> NetOutput``.

    ``repred=False`` is dm-clrs's training mode (teacher forcing, dropout),
    ``repred=True`` its evaluation mode (own predictions fed back).  RNG
    streams: ``teacher`` (teacher-forcing coins) and ``dropout``, only needed
    in training mode with the corresponding option on.
    """

    config: NetworkConfig

    @nn.compact
    def __call__(self, batch: Batch, repred: bool = True) -> NetOutput:
        cfg = self.config
        if batch.algorithm != cfg.algorithm:
            raise ValueError(
                f"network built for {cfg.algorithm!r} got a {batch.algorithm!r} batch"
            )
        spec = cfg.spec_entries()
        num_nodes = batch.node_mask.shape[1]
        batch_size = batch.node_mask.shape[0]
        types = {name: typ for name, _, _, typ in spec}
        class_sizes = {
            name: int(data.shape[-1])
            for group in (batch.inputs, batch.hints, batch.outputs)
            for name, data in group.items()
            if types.get(name) == CATEGORICAL
        }
        first_hint = next(iter(batch.hints.values()))
        num_steps = max(1, first_hint.shape[0] - 1)

        consts = _Constants(
            inputs={
                n: to_dense(d, types[n], num_nodes) for n, d in batch.inputs.items()
            },
            lengths=batch.lengths,
            node_mask=batch.node_mask,
            class_sizes=tuple(sorted(class_sizes.items())),
        )
        hints_dense = {
            n: to_dense(d[:num_steps], types[n], num_nodes)
            for n, d in batch.hints.items()
        }
        carry = (
            jnp.zeros((batch_size, num_nodes, cfg.hidden_size)),
            _placeholder_preds(spec, HINT, batch_size, num_nodes, class_sizes)
            if cfg.decode_hints
            else {},
            _placeholder_preds(spec, OUTPUT, batch_size, num_nodes, class_sizes),
        )
        scanned = nn.scan(
            Step,
            variable_broadcast="params",
            split_rngs={"params": False, "dropout": True, "teacher": True},
            in_axes=(0, nn.broadcast),
            length=num_steps,
        )(cfg, bool(repred), name="net")
        xs = (jnp.arange(num_steps), hints_dense if cfg.encode_hints else {})
        (_, _, outputs), (hint_preds, attention, hiddens) = scanned(carry, xs, consts)
        return NetOutput(
            outputs=outputs, hint_preds=hint_preds, attention=attention, hiddens=hiddens
        )


def init_params(config: NetworkConfig, batch: Batch, seed: int | jax.Array = 0):
    """Initial parameters of ``Network(config)`` for batches shaped like ``batch``."""
    key = jax.random.PRNGKey(seed) if isinstance(seed, int) else seed
    keys = dict(zip(("params", "dropout", "teacher"), jax.random.split(key, 3)))
    return Network(config).init(keys, batch, repred=False)["params"]
