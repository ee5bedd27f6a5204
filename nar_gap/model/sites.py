"""The named places in the hint loop where a value can be read or replaced.

A *site* is one intermediate of one processor step, under a canonical name
(:data:`SITES`: its shape, the paper's symbol, what it is).  The modules call
:func:`site` on each such value.  With nothing asked, the call returns the
value and adds nothing to the program: the Flax collections it writes to
(:data:`ACTIVATIONS`) and reads from (:data:`PATCHES`) are absent, and the one
site that costs memory to form (``pre_attention``, ``[B, N, N, D]``) is only
formed when the activations are being collected.  With the activations
collection mutable, the value is stored; with a patch under its name, the
value is replaced where the patch's mask is true, and the rest of the step
(and of the rollout) computes from the replaced value.

:mod:`nar_gap.model.activations` builds the patches and runs a model with
them; this module is what the layers below it need (it imports no layer).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

ACTIVATIONS = "activations"
"""The Flax collection the sites write to (``mutable=[ACTIVATIONS]``)."""

PATCHES = "patches"
"""The Flax collection a site reads its replacement from: ``{"value", "mask"}``."""

Edits = tuple[tuple[str, Callable[[jax.Array], jax.Array]], ...]
"""``(site name, function of the original value)`` pairs, applied in the loop."""


@dataclasses.dataclass(frozen=True)
class Site:
    """One named intermediate of a hint step.

    Attributes:
      name: the canonical name (unique across the model).
      module: where it lives: ``step`` (the scanned hint step) or
        ``processor`` (the GATv2 inside it).
      shape: its shape in the cache (``S`` steps first).
      symbol: the paper's (or the GATv2 docstring's) symbol.
      meaning: what it is.
      head_axis, node_axis: the axes (in the cached ``[S, B, ...]`` array)
        of attention heads and of receiver nodes; None where it has none.
      patchable: whether a patch can replace it (``pre_attention`` is
        computed inside the fused logits: read only).
    """

    name: str
    module: str
    shape: str
    symbol: str
    meaning: str
    head_axis: int | None = None
    node_axis: int | None = 2
    patchable: bool = True


SITES: tuple[Site, ...] = (
    Site(
        "node_fts",
        "step",
        "[S, B, N, D]",
        "x_i",
        "encoded node features of the step: inputs and the hints fed back",
    ),
    Site(
        "graph_fts",
        "step",
        "[S, B, D]",
        "g",
        "encoded graph features of the step",
        node_axis=None,
    ),
    Site(
        "hidden_in",
        "step",
        "[S, B, N, D]",
        "h_i^(t-1)",
        "the hidden state the step starts from (zeros at step 0)",
    ),
    Site(
        "z",
        "processor",
        "[S, B, N, 2D]",
        "z_i = [x_i ; h_i]",
        "the processor's input",
    ),
    Site(
        "pre_sender",
        "processor",
        "[S, B, N, D]",
        "W_1 z_j + b_1",
        "the sender's share of the pre-attention (row j)",
    ),
    Site(
        "pre_receiver",
        "processor",
        "[S, B, N, D]",
        "W_2 z_i + b_2",
        "the receiver's share of the pre-attention",
    ),
    Site(
        "pre_attention",
        "processor",
        "[S, B, N, N, D]",
        "P_ij",
        "pre-attention per channel, before the LeakyReLU: pre_sender_j + "
        "pre_receiver_i + W_e e_ij + W_g g (+ the pre-attention bias B_ij); "
        "axis 2 receivers, axis 3 senders",
        patchable=False,
    ),
    Site(
        "logits",
        "processor",
        "[S, B, H, N, N]",
        "a_h . LReLU(P_ij) + c_h",
        "attention logits per head, before the adjacency mask (rows receivers)",
        head_axis=2,
        node_axis=3,
    ),
    Site(
        "attention",
        "processor",
        "[S, B, H, N, N]",
        "alpha^h_ij",
        "attention weights per head (rows receivers i, columns senders j); "
        "NetOutput.attention",
        head_axis=2,
        node_axis=3,
    ),
    Site(
        "values",
        "processor",
        "[S, B, N, H, F]",
        "V_j = W_m z_j + b_m",
        "what each sender offers (the messages before weighting), per head",
        head_axis=3,
    ),
    Site(
        "aggregated",
        "processor",
        "[S, B, N, H, F]",
        "r^h_i = sum_j alpha^h_ij V^h_j",
        "what each receiver takes in, per head (with the edge information "
        "when the network uses it)",
        head_axis=3,
    ),
    Site(
        "hidden",
        "processor",
        "[S, B, N, D]",
        "h_i^(t)",
        "the processor's output: ReLU(r_i + W_s z_i), layer-normed; NetOutput.hiddens",
    ),
)

SITE_NAMES: tuple[str, ...] = tuple(s.name for s in SITES)
BY_NAME: dict[str, Site] = {s.name: s for s in SITES}

FED = "fed_"
"""Prefix of the fed-hint sites: ``fed_<hint>`` for each hint of the algorithm."""


def fed_site(hint: str) -> Site:
    """The site of hint ``hint`` as a step encodes it (:func:`find_site`).

    What the hint loop feeds itself, one site per hint of the algorithm
    (``fed_pi_h``, ``fed_reach_h`` for BFS): the truth at step 0 and
    wherever teacher forcing draws it, else the previous step's prediction
    post-processed (soft or hard, ``hint_repred_mode``), in the dense form
    the encoder reads (a pointer as a row over nodes).  Patched, the step
    encodes the patched hint, and the rollout goes on from it.  Axis 2 is
    the node axis of node and edge hints; a graph-level hint (DFS's
    ``time``) is ``[S, B]`` and has none to select.
    """
    return Site(
        f"{FED}{hint}",
        "step",
        "[S, B, ...]",
        "hint_t",
        f"hint {hint} as step t encodes it (the truth, or the prediction fed back)",
    )


def find_site(name: str) -> Site | None:
    """Site ``name``: one of :data:`SITES`, a ``fed_<hint>`` site, or None."""
    if name in BY_NAME:
        return BY_NAME[name]
    if name.startswith(FED) and len(name) > len(FED):
        return fed_site(name[len(FED) :])
    return None


def _keep_last(_: object, value: jax.Array) -> jax.Array:
    """The last value stored (a step with several message-passing rounds)."""
    return value


def collecting(module: nn.Module) -> bool:
    """Whether ``module``'s activations are being collected (not at ``init``)."""
    return module.is_mutable_collection(ACTIVATIONS) and not module.is_initializing()


def site(
    module: nn.Module, name: str, value: jax.Array, edits: Edits = ()
) -> jax.Array:
    """``value`` at site ``name``: patched if asked, stored if collecting.

    The replacement is an edit's ``f(value)`` (an edit ``(name, f)``) or a
    patch's value (:data:`PATCHES`: ``{"value": v, "mask": m}``, this step's
    slice; an edit's patch carries its mask alone), put in where the patch's
    mask is true (everywhere without a patch).  The stored value is the one
    the step goes on with.
    """
    patch = (
        module.get_variable(PATCHES, name) if module.has_variable(PATCHES, name) else {}
    )
    replacement = patch.get("value")
    for edited, fn in edits:
        if edited == name:
            replacement = fn(value)
    if replacement is not None:
        mask = patch.get("mask", True)
        value = jnp.where(mask, jnp.asarray(replacement).astype(value.dtype), value)
    if collecting(module):
        module.sow(ACTIVATIONS, name, value, reduce_fn=_keep_last, init_fn=tuple)
    return value
