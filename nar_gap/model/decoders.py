"""Decoders: the hidden state back to CLRS data, and that data back as feedback.

One decoder per probe, as dm-clrs builds them (``decoders.py``): node pointers
``l_ij = w4 . max(W1 h_i, W2 h_j + W3 e_ji) + b4``, per-node scalars, masks
and categoricals, and graph-level values from max-pooled nodes.  With
``simplify_decoders`` the node pointers are decoded by one of two simpler
forms: nar_gap's bilinear one, or the authors' fork's (size-locked).
:func:`decode` picks the decoder for a probe; :func:`postprocess` is the one
post-processing (hard or soft) of raw decoder outputs.
"""

from __future__ import annotations

from collections.abc import Mapping

import flax.linen as nn
import jax
import jax.numpy as jnp

from nar_gap.model.config import NetworkConfig, SpecEntry
from nar_gap.model.gatv2 import EdgeFeatures, VectorHead
from nar_gap.model.layers import (
    Linear,
    compute_dtype,
    haiku_linear_init,
    require_num_nodes,
)
from nar_gap.model.pair_ops import pointer_logits
from nar_gap.tasks.vocabulary import Location, Type

# Logit given to padded nodes in node-axis softmaxes: exp underflows to exactly 0
# against any real logit, yet stays finite so the output blend never makes NaN.
PADDED_LOGIT = -1e9


def to_dense(data: jax.Array, typ: str, num_nodes: int) -> jax.Array:
    """CLRS data -> what encoders read (pointer indices become one-hot rows)."""
    if typ == Type.POINTER:
        return jax.nn.one_hot(data, num_nodes, dtype=compute_dtype())
    return data.astype(compute_dtype())


def postprocess(typ: str, logits: jax.Array, hard: bool) -> jax.Array:
    """dm-clrs ``decoders.postprocess``: a decoder's raw output as CLRS data.

    The one post-processing of nar_gap: fed-back hints (:func:`feedback`),
    outputs handed back in dm-clrs's form, and compiled models' decoded traces
    all go through it.  Hard: masks thresholded at 0, pointers as their argmax
    node index, ``mask_one`` and categoricals one-hot; soft: sigmoid and
    softmax.  Scalars pass through.
    """
    if typ == Type.SCALAR:
        return logits
    if typ == Type.MASK:
        return (
            (logits > 0.0).astype(compute_dtype()) if hard else jax.nn.sigmoid(logits)
        )
    if typ == Type.POINTER:
        return jnp.argmax(logits, -1) if hard else jax.nn.softmax(logits, axis=-1)
    if typ in (Type.MASK_ONE, Type.CATEGORICAL):
        if hard:
            return jax.nn.one_hot(jnp.argmax(logits, -1), logits.shape[-1])
        return jax.nn.softmax(logits, axis=-1)
    raise NotImplementedError(f"no post-processing rule for type {typ!r}")


def feedback(logits: jax.Array, typ: str, hard: bool) -> jax.Array:
    """A hint prediction as the next step's encoder reads it (dense form).

    Hard feedback carries no gradient (dm-clrs stops it), soft feedback does.
    """
    data = postprocess(typ, logits, hard)
    if typ == Type.POINTER and hard:
        data = jax.nn.one_hot(data, logits.shape[-1])
    return jax.lax.stop_gradient(data) if hard else data


def mask_nodes_last_axis(logits: jax.Array, node_mask: jax.Array) -> jax.Array:
    """Give padded nodes ``PADDED_LOGIT`` along the last (node) axis."""
    mask = node_mask.reshape(
        node_mask.shape[:1] + (1,) * (logits.ndim - 2) + node_mask.shape[1:]
    )
    return jnp.where(mask, logits, PADDED_LOGIT)


def expand_like(x: jax.Array, like: jax.Array) -> jax.Array:
    """``x`` with trailing unit axes, to broadcast against ``like``."""
    return x.reshape(x.shape + (1,) * (like.ndim - x.ndim))


class PointerDecoder(nn.Module):
    """``l_ij = w4 . max(W1 h_i, W2 h_j + W3 e_ji) + b4`` (dm-clrs node pointer)."""

    hidden_size: int

    @nn.compact
    def __call__(self, h_t: jax.Array, edges: EdgeFeatures) -> jax.Array:
        """Pointer logits ``[B, N, N]`` (receiver i, candidate j)."""
        p_1 = Linear(self.hidden_size, name="linear_0")(h_t)  # [B, N, D]
        p_2 = Linear(self.hidden_size, name="linear_1")(h_t)  # [B, N, D]
        kernel, bias = Linear(self.hidden_size, name="linear_2").weights(
            edges.kernel.shape[-1]
        )
        head, head_bias = VectorHead(
            kernel_init=haiku_linear_init, name="linear_3"
        ).weights(self.hidden_size)
        # W3 e_ji at [i, j]: transpose the K edge scalars, not the D-wide tensor.
        logits = pointer_logits(
            p_1,
            p_2 + edges.bias @ kernel + bias,
            jnp.swapaxes(edges.scalars, 1, 2),
            edges.kernel @ kernel,
            head,
        )  # [B, i, j]
        return logits + head_bias


class BilinearPointerDecoder(nn.Module):
    """``l_ij = (W1 h_i) . (W2 h_j)``: nar_gap's own simplified pointer decoder.

    With ``simplify_decoders`` and ``simple_pointer_decoder="bilinear"``.
    CLRS's original bilinear pointer decoder: dm-clrs's without the edge term
    and the max (``W3 e_ji``, ``max`` and ``w4``), so that a 4-wide model has
    a decoder of its own size.  Our choice, not the paper's: the authors'
    fork defines ``simplify_decoders`` otherwise (:class:`ForkPointerDecoder`),
    with weights that fix the graph size; this one runs at any size.
    """

    hidden_size: int

    @nn.compact
    def __call__(self, h_t: jax.Array) -> jax.Array:
        """Pointer logits ``[B, N, N]`` (receiver i, candidate j)."""
        p_1 = Linear(self.hidden_size, name="linear_0")(h_t)  # [B, N, D]
        p_2 = Linear(self.hidden_size, name="linear_1")(h_t)  # [B, N, D]
        return jnp.einsum("bid,bjd->bij", p_1, p_2)


class ForkPointerDecoder(nn.Module):
    """``l_ij = -C max(L1 h_i, L2 h_i)_j``: the fork's simplified pointer decoder.

    The authors' fork of dm-clrs (``LSaldyt/clrs``, branch ``dfs_reverse``,
    ``clrs/_src/decoders.py``: ``construct_decoders`` and ``_decode_node_fts``
    with ``simple_pointer_decoder``) defines ``simplify_decoders`` so: two
    linear maps from the receiver's ``h_i`` to ``N`` outputs, one per
    candidate ``j``, and ``C = 1000`` (hard-coded there, marked to be
    parameterised: ``simple_pointer_scale`` here).  It reads neither ``h_j``
    nor the edges; a compiled model writes a node id ``x`` into ``h_i`` and
    biases ``-j`` and ``+j`` turn it into ``-C |x - j|``.  Its ``N`` outputs
    lock it to graphs of ``num_nodes`` nodes (padding included).
    """

    num_nodes: int
    scale: float = 1000.0

    @nn.compact
    def __call__(self, h_t: jax.Array) -> jax.Array:
        """Pointer logits ``[B, N, N]`` (receiver i, candidate j)."""
        require_num_nodes(
            "the fork's simplified pointer decoder", self.num_nodes, h_t.shape[1]
        )
        p_1 = Linear(self.num_nodes, name="linear_0")(h_t)  # [B, N, N]
        p_2 = Linear(self.num_nodes, name="linear_1")(h_t)  # [B, N, N]
        return -self.scale * jnp.maximum(p_1, p_2)


def pointer_decoder(config: NetworkConfig, name: str) -> nn.Module:
    """The node-pointer decoder ``config`` asks for, named ``name``."""
    if not config.simplify_decoders:
        return PointerDecoder(config.hidden_size, name=name)
    if config.simple_pointer_decoder == "fork":
        return ForkPointerDecoder(
            config.fork_num_nodes, config.simple_pointer_scale, name=name
        )
    return BilinearPointerDecoder(config.hidden_size, name=name)


class NodeDecoder(nn.Module):
    """scalar / mask / mask_one (one logit) or categorical (C logits) per node."""

    features: int
    squeeze: bool

    @nn.compact
    def __call__(self, h_t: jax.Array) -> jax.Array:
        """One value (or C logits) per node."""
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
        """One value (or C logits) per graph, from max-pooled real nodes."""
        pooled = jnp.max(jnp.where(node_mask[..., None], h_t, -jnp.inf), axis=1)
        out = Linear(self.features, name="linear_0")(pooled) + Linear(
            self.features, name="linear_1"
        )(graph_fts)
        return out[..., 0] if self.squeeze else out


def placeholder_preds(
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
        if loc == Location.NODE and typ == Type.POINTER:
            shape = (batch, num_nodes, num_nodes)
        elif loc == Location.NODE and typ == Type.CATEGORICAL:
            shape = (batch, num_nodes, class_sizes[name])
        elif loc == Location.NODE:
            shape = (batch, num_nodes)
        elif loc == Location.GRAPH and typ == Type.CATEGORICAL:
            shape = (batch, class_sizes[name])
        elif loc == Location.GRAPH:
            shape = (batch,)
        else:
            raise NotImplementedError(
                f"nar_gap does not decode {loc} {typ} ({name!r}) yet"
            )
        shapes[name] = jnp.zeros(shape, compute_dtype())
    return shapes


def decode(
    name: str,
    loc: str,
    typ: str,
    h_t: jax.Array,
    edges: EdgeFeatures,
    graph_fts: jax.Array,
    node_mask: jax.Array,
    class_sizes: Mapping[str, int],
    config: NetworkConfig,
) -> jax.Array:
    """Raw output of probe ``name``'s decoder (called inside a Flax module).

    ``h_t = [node features; previous hidden; new hidden]``, ``[B, N, 3D]``.
    Padded nodes get :data:`PADDED_LOGIT` wherever a softmax runs over nodes.
    ``config`` picks the node-pointer decoder (:func:`pointer_decoder`).
    """
    module = f"decoder_{name}"
    if loc == Location.NODE and typ == Type.POINTER:
        decoder = pointer_decoder(config, module)
        if isinstance(decoder, PointerDecoder):
            logits = decoder(h_t, edges)
        else:
            logits = decoder(h_t)
        return mask_nodes_last_axis(logits, node_mask)
    if loc == Location.NODE and typ in (Type.SCALAR, Type.MASK, Type.MASK_ONE):
        logits = NodeDecoder(1, True, name=module)(h_t)
        if typ == Type.MASK_ONE:
            logits = mask_nodes_last_axis(logits, node_mask)
        return logits
    if loc == Location.NODE and typ == Type.CATEGORICAL:
        return NodeDecoder(class_sizes[name], False, name=module)(h_t)
    if loc == Location.GRAPH and typ in (
        Type.SCALAR,
        Type.MASK,
        Type.MASK_ONE,
        Type.CATEGORICAL,
    ):
        size = class_sizes.get(name, 1)
        squeeze = typ != Type.CATEGORICAL
        return GraphDecoder(size, squeeze, name=module)(h_t, graph_fts, node_mask)
    raise NotImplementedError(
        f"nar_gap does not decode {loc} {typ} data ({name!r}) yet"
    )
