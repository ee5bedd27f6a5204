"""Encoders: inputs and hints into node, edge and graph features (dm-clrs's).

Every probe gets its own linear encoder, summed into the features of its
location, as dm-clrs's ``accum_node_fts`` / ``accum_edge_fts`` /
``accum_graph_fts`` do.  Edge features stay *factorised*
(:class:`~nar_gap.model.gatv2.EdgeFeatures`: a few scalars per edge and the
kernels that would lift them to D), so no ``[B, N, N, D]`` tensor is built
unless a layer needs it.  Node pointers (``pi``) and edge masks also add their
edges to the graph the processor attends over.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import jax
import jax.numpy as jnp

from nar_gap.model.config import NetworkConfig, SpecEntry
from nar_gap.model.decoders import expand_like, feedback
from nar_gap.model.gatv2 import EdgeFeatures
from nar_gap.model.layers import (
    Linear,
    compute_dtype,
    haiku_linear_init,
    truncated_normal,
)
from nar_gap.tasks.vocabulary import Location, Stage, Type

_EDGE_TYPES = (Type.SCALAR, Type.MASK, Type.MASK_ONE, Type.CATEGORICAL)


@dataclasses.dataclass(frozen=True)
class Encoded:
    """One step's encoded features.

    Attributes:
      node_fts: ``[B, N, D]``.
      edges: factorised ``[B, N, N, D]`` edge features.
      graph_fts: ``[B, D]``.
      adjacency: ``[B, N, N]`` whom each receiver may attend to (1 = edge).
    """

    node_fts: jax.Array
    edges: EdgeFeatures
    graph_fts: jax.Array
    adjacency: jax.Array


def hints_to_encode(
    config: NetworkConfig,
    spec: tuple[SpecEntry, ...],
    step: jax.Array,
    truth: Mapping[str, jax.Array],
    previous_preds: Mapping[str, jax.Array],
    repred: bool,
    coins: jax.Array | None,
) -> dict[str, jax.Array]:
    """Which hint each name feeds this step (dm-clrs ``Net._msg_passing_step``).

    Step 0 always encodes the ground truth; later steps the model's own
    post-processed predictions, or (training, teacher forcing) per sample the
    ground truth where ``coins`` came up.
    """
    if not config.encode_hints:
        return {}
    batch = next(iter(truth.values())).shape[0]
    hard = config.hint_repred_mode == "hard" or (
        config.hint_repred_mode == "hard_on_eval" and repred
    )
    if repred or config.hint_teacher_forcing == 0.0:
        use_truth = jnp.broadcast_to(step == 0, (batch,))
    elif config.hint_teacher_forcing >= 1.0:
        use_truth = jnp.ones((batch,), bool)
    else:
        use_truth = coins | (step == 0)
    encoded = {}
    for name, stage, _, typ in spec:
        if stage == Stage.HINT:
            fed_back = feedback(previous_preds[name], typ, hard)
            encoded[name] = jnp.where(
                expand_like(use_truth, truth[name]), truth[name], fed_back
            )
    return encoded


def _encoder(config: NetworkConfig, name: str, stage: str, typ: str) -> Linear:
    """The linear encoder of one probe (run.py's xavier init for scalar hints)."""
    init = haiku_linear_init
    if config.encoder_init == "xavier_on_scalars" and stage == Stage.HINT:
        if typ == Type.SCALAR:
            init = truncated_normal(1.0 / float(config.hidden_size) ** 0.5)
    return Linear(config.hidden_size, kernel_init=init, name=f"encoder_{name}")


def encode(
    config: NetworkConfig,
    spec: tuple[SpecEntry, ...],
    inputs: Mapping[str, jax.Array],
    hints: Mapping[str, jax.Array],
    node_mask: jax.Array,
) -> Encoded:
    """Sum every input's and every encoded hint's encoding into its location.

    Called inside a Flax module, which owns the encoders (``encoder_<name>``).
    """
    batch, num_nodes = node_mask.shape
    hidden = config.hidden_size
    node_fts = jnp.zeros((batch, num_nodes, hidden))
    graph_fts = jnp.zeros((batch, hidden))
    edge_scalars, edge_kernels = [], []
    edge_bias = jnp.zeros((hidden,))
    adjacency = jnp.broadcast_to(jnp.eye(num_nodes), (batch, num_nodes, num_nodes))
    for name, stage, loc, typ in spec:
        if stage == Stage.INPUT:
            data = inputs[name]
        elif stage == Stage.HINT and name in hints:
            data = hints[name]
        else:
            continue
        channels = data if typ == Type.CATEGORICAL else data[..., None]  # [..., C]
        kernel, bias = _encoder(config, name, stage, typ).weights(channels.shape[-1])
        if loc == Location.NODE and typ == Type.POINTER:  # a node pointer is an edge
            edge_scalars.append(channels)
            edge_kernels.append(kernel)
            edge_bias = edge_bias + bias
            linked = data + jnp.swapaxes(data, 1, 2) > 0.5
            adjacency = jnp.maximum(adjacency, linked.astype(compute_dtype()))
        elif loc == Location.NODE:
            node_fts = node_fts + channels @ kernel + bias
        elif loc == Location.EDGE and typ in _EDGE_TYPES:
            edge_scalars.append(channels)
            edge_kernels.append(kernel)
            edge_bias = edge_bias + bias
            if typ == Type.MASK:
                linked = data + jnp.swapaxes(data, 1, 2) > 0.0
                adjacency = jnp.maximum(adjacency, linked.astype(compute_dtype()))
        elif loc == Location.GRAPH and typ != Type.POINTER:
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
            jnp.zeros((1, hidden)),
            edge_bias,
        )
    real_pairs = node_mask[:, :, None] & node_mask[:, None, :]
    adjacency = jnp.maximum(adjacency * real_pairs, jnp.eye(num_nodes))
    return Encoded(node_fts, edges, graph_fts, adjacency)
