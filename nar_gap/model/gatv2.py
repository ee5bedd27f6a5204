"""The CLRS GATv2 processor in Flax, with the paper's two optional modifications.

One call is one message-passing step of dm-clrs's ``processors.GATv2`` (the
``gatv2`` processor of the CLRS benchmark).  Receiver ``i``, sender ``j``;
``z_i = [n_i ; h_i]`` (node features of this step, previous hidden state):

=================  ============================  ================  ==============
nar_gap sub-layer  what it computes              paper symbol      dm-clrs Haiku
=================  ============================  ================  ==============
``value``          ``V_j = W_m z_j + b_m``       W_m (values)      ``linear``
``skip``           ``W_s z_i + b_s``             W_s (skip)        ``linear_1``
``sender``         ``W_1 z_j + b_1``             W_1 (pre-att.)    ``linear_2``
``receiver``       ``W_2 z_i + b_2``             W_2 (pre-att.)    ``linear_3``
``edge``           ``W_e e_ij + b_e``            W_e               ``linear_4``
``graph``          ``W_g g + b_g``               W_g               ``linear_5``
``head_<h>``       ``a_h . LReLU(P^h_ij) + c_h``  a (head vector)   ``linear_{6+h}``
``layer_norm``     scale/offset, eps 1e-5        LN                ``layer_norm``
``pre_att_bias``   ``B_ij`` added to ``P_ij``    B (paper D.4)     fork only
``edge_map``       ``ε_ij = W_ε e_ij + b_ε``     W_ε (Eqs. 11-13)  fork: ``We2``
``edge_senders``   ``Σ_j w_j (.)_j + c``         none              fork: ``Wed``
=================  ============================  ================  ==============

Then ``alpha^h_ij = softmax_j(logit^h_ij + (adj_ij - 1) 1e9)``, ``r^h_i = Σ_j
alpha^h_ij V^h_j`` (heads concatenated, as the CLRS code does; the paper's prose
says "summed"), ``r_i += skip``, ReLU, optional layer norm (biased variance,
epsilon 1e-5: Haiku's defaults, not Flax's).

Edge features are taken in *factorised* form (:class:`EdgeFeatures`): every
edge feature in CLRS is a sum of ``Linear(1 -> D)`` encodings of a few scalars
per pair (``A``, ``adj``, pointer one-hots), so ``W_e e_ij`` equals
``Σ_k x_k(i,j) (w_k W_e) + (b W_e + b_e)``.  That is exact (up to float
reassociation), has identical gradients, and costs O(B N² D K) instead of
O(B N² D²) -- the edge tensor was the largest cost of the dm-clrs network.

The two modifications of the paper (author's fork of dm-clrs):

* ``use_edge_info``: after aggregation the selected values gain edge
  information, so that they can carry an edge weight (Bellman-Ford's
  ``d_j + w_ij``), in one of three forms (``edge_map``):

  - ``channel`` (default; the fork up to commit e686e21, branch ``master``):
    ``Σ_j alpha^h_ij e_ij[0]`` is added to channel 0 of every head (channels
    0, F, 2F, ...), without learned parameters; ``e_ij[0]`` is channel 0 of
    the encoded edges.  The compiler uses this form.
  - ``eqs_11_13``: our reading of the paper's Eqs. 11-13 (the extracted text
    lost their symbols): a linear map ``ε_ij = W_ε e_ij + b_ε`` (D channels,
    split into heads like the values) whose attention-weighted sum over
    senders, ``Σ_j α^h_ij ε^h_ij``, is added to the selected values.
  - ``fork`` (commit cef64d2 "Generalize GATv2 edge info", branches
    ``neural_compilation_minimal`` and ``dfs_reverse``): the same ``ε`` (the
    fork's ``We2``), but the senders are combined by one learned linear map
    over the sender axis (the fork's ``Wed``, N inputs, 1 output):
    ``d_hif = Σ_j w_j α_hij ε_ijf + c``, added before the heads are merged.
    The fork adds a D-wide ``ε`` to each head's F-wide output, so it is
    defined at one head only; its ``N`` weights ``w_j`` lock the model to
    ``fork_num_nodes`` nodes.

  The two learned forms are kept factorised, ``Σ_j β^h_ij ε^h_ij = (Σ_j
  β^h_ij x_ij) K'^h + (Σ_j β^h_ij) b'^h`` (``β = α`` or ``w_j α``), so they
  cost O(B N² H K), not O(B N² D).
* ``use_pre_att_bias``: a learned ``[N_max, N_max]`` matrix ``B`` (zero init)
  added to every pre-activation channel of pair ``(i, j)`` before the
  LeakyReLU.  The fork's ``B`` has exactly the training graph size; here a
  graph with ``N <= N_max`` nodes uses the top-left ``N x N`` block (padding
  nodes sit at the end), and a larger graph is an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from nar_gap.model.layers import Dense, LayerNorm, ShapeChecked, require_num_nodes
from nar_gap.model.pair_ops import attention_logits, pre_activation
from nar_gap.model.sites import Edits, collecting, site

LAYER_NORM_EPSILON = 1e-5  # Haiku's LayerNorm default, used by dm-clrs.
ADJACENCY_MASK = 1e9  # dm-clrs's additive mask for non-edges.
LEAKY_RELU_SLOPE = 0.01  # jax.nn.leaky_relu's default, used by dm-clrs.


def pair_matmul(x: jax.Array, kernel: jax.Array) -> jax.Array:
    """``x @ kernel`` over the last axis, computed on ``x`` viewed as 2-D.

    ``x`` is ``[..., F]`` (a pair tensor ``[B, N, N, F]``, say), ``kernel``
    ``[F, out]`` or ``[F]``.  The reshapes are free; what they buy is the
    backward pass.  Measured on 2 CPU cores (jax 0.10.1, B = 32, N = 16,
    D = 128), the gradient of GATv2's attention logits took 13.2 ms written
    with 4-D broadcast multiply-adds (the edge projection) and a multiply-sum
    (the head), and 2.5 ms written with 2-D matmuls; the pointer decoder's
    13.5 ms and 2.6 ms.  XLA's layout assignment gives the 4-D forms' weight
    gradients a transposed copy of the whole pair tensor; the 2-D ones get
    plain dots.  (An earlier vmapped-over-seeds step favoured the
    multiply-reduce form; the seeds now run one at a time on a CPU, see
    :mod:`nar_gap.training.step`.)
    """
    lead = x.shape[:-1]
    flat = x.reshape(-1, x.shape[-1]) @ kernel
    return flat.reshape(lead + kernel.shape[1:])


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EdgeFeatures:
    """Edge features ``e_ij = scalars_ij @ kernel + bias`` kept in factorised form.

    Attributes:
      scalars: ``[B, N, N, K]`` the per-pair scalars every edge encoder reads.
      kernel: ``[K, D]`` the stacked encoder kernels (one row per scalar).
      bias: ``[D]`` the sum of the edge encoders' biases.
    """

    scalars: jax.Array
    kernel: jax.Array
    bias: jax.Array

    def channel(self, index: int) -> jax.Array:
        """One channel of ``e``: ``[B, N, N]``."""
        return pair_matmul(self.scalars, self.kernel[:, index]) + self.bias[index]

    def dense(self) -> jax.Array:
        """The full ``[B, N, N, D]`` tensor (for inspection and tests only)."""
        return self.scalars @ self.kernel + self.bias


class FactorisedDense(ShapeChecked):
    """A Dense layer applied to :class:`EdgeFeatures`; same parameters as nn.Dense."""

    features: int
    kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()

    @nn.compact
    def weights(self, in_features: int) -> tuple[jax.Array, jax.Array]:
        """The ``[in, out]`` kernel and the bias, created on first use."""
        kernel = self.param("kernel", self.kernel_init, (in_features, self.features))
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        return kernel, bias

    def projected(self, edges: EdgeFeatures) -> tuple[jax.Array, jax.Array]:
        """``(kernel [K, out], bias)`` with ``e @ W + b = scalars @ kernel + bias``."""
        kernel, bias = self.weights(edges.kernel.shape[-1])
        return edges.kernel @ kernel, edges.bias @ kernel + bias


class VectorHead(ShapeChecked):
    """``Dense(1)`` over the last axis of a pair tensor: ``[..., F] -> [...]``.

    Same parameters as ``nn.Dense(1)`` (``kernel [F, 1]``, ``bias [1]``),
    computed as one 2-D matrix-vector product (:func:`pair_matmul`).
    """

    kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()

    @nn.compact
    def weights(self, features: int) -> tuple[jax.Array, jax.Array]:
        """The head vector ``a`` (``[F]``) and its scalar bias."""
        kernel = self.param("kernel", self.kernel_init, (features, 1))
        bias = self.param("bias", nn.initializers.zeros_init(), (1,))
        return kernel[:, 0], bias[0]


@dataclasses.dataclass(frozen=True)
class ProcessorOutput:
    """What one GATv2 step returns: the new hidden state and its attention."""

    hidden: jax.Array  # [B, N, D]
    attention: jax.Array  # [B, H, N, N], rows = receivers, columns = senders


jax.tree_util.register_dataclass(
    ProcessorOutput, data_fields=["hidden", "attention"], meta_fields=[]
)


class GATv2(ShapeChecked):
    """One GATv2 message-passing step with exactly dm-clrs's semantics.

    Attributes:
      hidden_size: D, the width of node states (and of the pre-activations).
      num_heads: H; must divide ``hidden_size``.
      use_ln: layer norm after the ReLU (the benchmark's default is True).
      use_edge_info: the paper's edge information in the selected values.
      edge_map: ``channel`` (parameter-free, the fork's before cef64d2),
        ``eqs_11_13`` (our reading of the paper's Eqs. 11-13) or ``fork``
        (the fork's learned form, commit cef64d2; size-locked, one head).
      use_pre_att_bias: the paper's learned pre-attention bias ``B``.
      pre_att_bias_nodes: ``N_max``, the side of ``B`` (only with the bias).
      fork_num_nodes: ``N`` of ``edge_map="fork"``'s sender weights: the
        only graph size (padding included) it runs at.
      kernel_init: initialiser of every weight matrix.
      edits: functions applied to named sites in the loop
        (:mod:`nar_gap.model.sites`; empty: none).
    """

    hidden_size: int
    num_heads: int = 1
    use_ln: bool = True
    use_edge_info: bool = False
    edge_map: str = "channel"
    use_pre_att_bias: bool = False
    pre_att_bias_nodes: int = 16
    fork_num_nodes: int = 16
    kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()
    edits: Edits = ()

    @classmethod
    def from_config(cls, config: Any, **others: Any) -> GATv2:
        """The layer a :class:`~nar_gap.model.config.NetworkConfig` describes.

        Every field of this layer that the config has a field of the same
        name for is taken from it (a test keeps all but ``kernel_init``
        there), so a processor option is named once, in the config; the
        layer stays usable on its own with keywords.  ``others``: the rest
        (``kernel_init``, ``name``).
        """
        shared = {f.name for f in dataclasses.fields(cls)}
        shared &= {f.name for f in dataclasses.fields(config)}
        return cls(**{name: getattr(config, name) for name in shared}, **others)

    def setup(self) -> None:
        """Create the processor's layers (named as dm-clrs's, see the table above)."""
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"num_heads={self.num_heads} must divide hidden_size={self.hidden_size}"
            )
        dense = lambda name: Dense(  # noqa: E731
            self.hidden_size, kernel_init=self.kernel_init, name=name
        )
        self.value = dense("value")
        self.skip = dense("skip")
        self.sender = dense("sender")
        self.receiver = dense("receiver")
        self.edge = FactorisedDense(
            self.hidden_size, kernel_init=self.kernel_init, name="edge"
        )
        self.graph = dense("graph")
        if self.use_edge_info and self.edge_map in ("eqs_11_13", "fork"):
            self.edge_map_layer = FactorisedDense(
                self.hidden_size, kernel_init=self.kernel_init, name="edge_map"
            )
        if self.use_edge_info and self.edge_map == "fork":
            if self.num_heads != 1:
                raise ValueError(
                    "edge_map='fork' needs num_heads=1 (the fork adds a "
                    f"message-wide edge value to each head), got {self.num_heads}"
                )
            self.edge_senders = VectorHead(
                kernel_init=self.kernel_init, name="edge_senders"
            )
        self.heads = [
            VectorHead(kernel_init=self.kernel_init, name=f"head_{h}")
            for h in range(self.num_heads)
        ]
        if self.use_ln:
            self.layer_norm = LayerNorm(
                epsilon=LAYER_NORM_EPSILON, use_fast_variance=False, name="layer_norm"
            )
        if self.use_pre_att_bias:
            self.pre_att_bias = self.param(
                "pre_att_bias",
                nn.initializers.zeros_init(),
                (self.pre_att_bias_nodes, self.pre_att_bias_nodes),
            )

    def __call__(
        self,
        node_fts: jax.Array,  # [B, N, D]
        edge_fts: EdgeFeatures,  # e: [B, N, N, D] factorised
        graph_fts: jax.Array,  # [B, D]
        adjacency: jax.Array,  # [B, N, N], 1 on edges and self loops
        hidden: jax.Array,  # [B, N, D]
    ) -> ProcessorOutput:
        """One message-passing step: new hidden state and the attention used."""
        batch, num_nodes, _ = node_fts.shape
        heads, width = self.num_heads, self.hidden_size // self.num_heads
        at = lambda name, value: site(self, name, value, self.edits)  # noqa: E731
        z = at("z", jnp.concatenate([node_fts, hidden], axis=-1))  # [B, N, 2D]

        values = at("values", self.value(z).reshape(batch, num_nodes, heads, width))
        edge_kernel, edge_bias = self.edge.projected(edge_fts)
        offset = (self.graph(graph_fts) + edge_bias)[:, None, None, :]  # [B,1,1,D]
        if self.use_pre_att_bias:
            offset = offset + self._bias_block(num_nodes)[None, :, :, None]
        head_weights = [self.heads[h].weights(width) for h in range(heads)]
        sender = at("pre_sender", self.sender(z))  # sender j varies along axis 2
        receiver = at("pre_receiver", self.receiver(z))  # receiver i along axis 1
        if collecting(self):  # [B, N, N, D]: formed only when asked for
            at(
                "pre_attention",
                pre_activation(sender, receiver, edge_fts.scalars, edge_kernel, offset),
            )
        logits = at(
            "logits",
            attention_logits(
                sender,
                receiver,
                edge_fts.scalars,
                edge_kernel,
                offset,
                jnp.stack([vector for vector, _ in head_weights]),
            )
            + jnp.stack([bias for _, bias in head_weights])[None, :, None, None],
        )
        mask = (adjacency - 1.0) * ADJACENCY_MASK  # [B, N, N]
        attention = at("attention", jax.nn.softmax(logits + mask[:, None], axis=-1))

        selected = jnp.einsum("bhij,bjhf->bihf", attention, values)  # [B, N, H, F]
        if self.use_edge_info and self.edge_map == "eqs_11_13":
            selected = selected + self._edge_map_values(attention, edge_fts)
        elif self.use_edge_info and self.edge_map == "fork":
            selected = selected + self._fork_edge_values(attention, edge_fts)
        elif self.use_edge_info:
            edge_value = jnp.einsum("bhij,bij->bih", attention, edge_fts.channel(0))
            selected = selected.at[..., 0].add(edge_value)
        selected = at("aggregated", selected)
        out = selected.reshape(batch, num_nodes, self.hidden_size)
        out = jax.nn.relu(out + self.skip(z))
        if self.use_ln:
            out = self.layer_norm(out)
        return ProcessorOutput(hidden=at("hidden", out), attention=attention)

    def _edge_map_values(self, weights: jax.Array, edge_fts: EdgeFeatures) -> jax.Array:
        """``Σ_j β^h_ij ε^h_ij``, ``ε = W_ε e + b_ε``: ``[B, N, H, F]``.

        With ``β = α`` (the attention), Eqs. 11-13 as we read them.
        """
        heads, width = self.num_heads, self.hidden_size // self.num_heads
        kernel, bias = self.edge_map_layer.projected(edge_fts)  # [K, D], [D]
        weighted = jnp.einsum("bhij,bijk->bihk", weights, edge_fts.scalars)
        mapped = jnp.einsum(
            "bihk,khf->bihf", weighted, kernel.reshape(-1, heads, width)
        )
        rows = jnp.sum(weights, axis=-1).transpose(0, 2, 1)[..., None]  # [B,N,H,1]
        return mapped + rows * bias.reshape(heads, width)  # Σ_j β^h_ij b'^h

    def _fork_edge_values(
        self, attention: jax.Array, edge_fts: EdgeFeatures
    ) -> jax.Array:
        """The fork's ``d_hif = Σ_j w_j α_hij ε_ijf + c`` (cef64d2): ``[B,N,H,F]``."""
        num_nodes = attention.shape[-1]
        require_num_nodes(
            "the fork's learned edge map (edge_map='fork')",
            self.fork_num_nodes,
            num_nodes,
        )
        senders, offset = self.edge_senders.weights(num_nodes)  # [N], []
        return self._edge_map_values(attention * senders, edge_fts) + offset

    def _bias_block(self, num_nodes: int) -> jax.Array:
        if num_nodes > self.pre_att_bias_nodes:
            raise ValueError(
                f"the pre-attention bias is {self.pre_att_bias_nodes}x"
                f"{self.pre_att_bias_nodes} but the graph has {num_nodes} nodes; "
                "a model with use_pre_att_bias only runs on graphs up to the size "
                "it was built for (set pre_att_bias_nodes)"
            )
        return self.pre_att_bias[:num_nodes, :num_nodes]


# The processor's layers whose biases are added to every pair's pre-activation.
PRE_ATTENTION_OFFSETS = ("sender", "receiver", "graph", "edge")
BIAS_MOVEMENT_COLUMNS = ("bias_max_abs", "bias_rms", "bias_logit_bound", "offset_rms")


def bias_movement(processor: Mapping[str, Any], num_nodes: int) -> dict[str, float]:
    """How far one seed's pre-attention bias ``B`` moved from its zero start.

    Two arms that differ only in ``B`` are the same network while ``B`` stays
    near 0, and a comparison of their scores then says nothing about the
    bias.  ``B_ij`` is added to every channel of pair ``(i, j)``'s
    pre-activation, and the LeakyReLU is 1-Lipschitz, so ``max |B|`` times a
    head vector's L1 norm bounds what ``B`` does to any attention logit.
    ``processor``: one seed's processor parameters (``params["net"]
    ["processor"]``); ``num_nodes``: the graphs' size (only ``B``'s top-left
    block of that side is ever read for them).  The keys are
    :data:`BIAS_MOVEMENT_COLUMNS` (notebook 04's ablation table explains each).
    """
    bias = np.asarray(processor["pre_att_bias"], np.float64)[:num_nodes, :num_nodes]
    head_l1 = max(
        float(np.abs(np.asarray(layer["kernel"], np.float64)).sum())
        for name, layer in processor.items()
        if name.startswith("head_")
    )
    offset = sum(
        np.asarray(processor[name]["bias"], np.float64)
        for name in PRE_ATTENTION_OFFSETS
    )
    peak = float(np.abs(bias).max())
    return {
        "bias_max_abs": peak,
        "bias_rms": float(np.sqrt(np.mean(bias**2))),
        "bias_logit_bound": peak * head_l1,
        "offset_rms": float(np.sqrt(np.mean(offset**2))),
    }
