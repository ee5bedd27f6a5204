"""The CLRS model around the hint loop, in Flax: encode, process, decode, feed back.

The network mirrors dm-clrs's ``nets.Net`` step for step (reference:
``clrs-semantics.md`` §3, §5):

* ``S = max(1, T - 1)`` steps run for every sample, ``T`` the hint time axis of
  the batch (also in hint mode ``none``).  Step ``t`` encodes the inputs and
  (``encoded_decoded``) the hint for time ``t``, runs the processor, and decodes
  the predictions of hint ``t + 1`` (and, in dm-clrs, a candidate output).
* Step 0 always encodes the ground-truth ``hint[0]``.  Later steps encode the
  network's own post-processed predictions (``repred=True``, evaluation), or in
  training a per-sample Bernoulli(``hint_teacher_forcing``) mix of ground truth
  and predictions.  ``hint_repred_mode`` chooses soft (sigmoid / softmax, with
  gradients) or hard (threshold / argmax) feedback.
* The returned output of sample ``b`` is the candidate of step
  ``clip(L_b - 2, 0, S - 1)``: dm-clrs blends later candidates out with
  ``[L_b > t + 1]``.  nar_gap decodes outputs once, at that step, after the
  loop (:func:`output_steps`): same values, same gradients, one output decoder
  instead of ``S``.

:class:`Step` is dm-clrs's ``_one_step_pred`` taken apart: which hints to feed
(:func:`~nar_gap.model.encoders.hints_to_encode`), encode
(:func:`~nar_gap.model.encoders.encode`), process
(:class:`~nar_gap.model.gatv2.GATv2`), decode the hints
(:func:`~nar_gap.model.decoders.decode`); the outputs are decoded after it.

Unlike dm-clrs, step 0 runs inside the same ``scan`` as the others (one trace,
one compile), and everything honours ``Batch.node_mask``: padded nodes are cut
from the attention graph, from pointer and ``mask_one`` softmaxes and from
max-pooling, so a padded batch computes exactly what the unpadded one does.
That is what lets training bucket graph sizes into a few compiled shapes.

Parameters are laid out as ``{"net": {"encoder_<name>", "processor",
"decoder_<name>": {"linear_<k>"}}}`` with Dense ``kernel`` ``[in, out]`` and
``bias``; :mod:`nar_gap.model.from_dmclrs` maps dm-clrs's Haiku names onto it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from nar_gap.model.config import NetOutput, NetworkConfig
from nar_gap.model.decoders import decode, placeholder_preds, to_dense
from nar_gap.model.encoders import encode, hints_to_encode
from nar_gap.model.gatv2 import EdgeFeatures, GATv2
from nar_gap.model.layers import Dense, haiku_linear_init
from nar_gap.model.sites import ACTIVATIONS, FED, PATCHES, Edits, site
from nar_gap.tasks.batch import Batch, shape_template
from nar_gap.tasks.vocabulary import Stage, Type

Carry = tuple[jax.Array, dict[str, jax.Array]]


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
    """One hint step: feed back, encode, process, decode.  Scanned over time.

    ``edits``: functions applied at named sites (:mod:`nar_gap.model.sites`).
    """

    config: NetworkConfig
    repred: bool
    edits: Edits = ()

    def _teacher_coins(self, batch: int) -> jax.Array | None:
        """Per-sample teacher-forcing draws, only where they are used."""
        rate = self.config.hint_teacher_forcing
        if self.repred or not 0.0 < rate < 1.0 or not self.config.encode_hints:
            return None
        return jax.random.bernoulli(self.make_rng("teacher"), rate, (batch,))

    def _process(self, encoded, hidden: jax.Array):
        cfg = self.config
        processor = GATv2.from_config(
            cfg, kernel_init=haiku_linear_init, edits=self.edits, name="processor"
        )
        new_hidden = hidden
        for _ in range(cfg.msg_passing_steps):
            processed = processor(
                encoded.node_fts,
                encoded.edges,
                encoded.graph_fts,
                encoded.adjacency,
                new_hidden,
            )
            new_hidden = processed.hidden
        if cfg.dropout_prob > 0.0 and not self.repred:
            new_hidden = nn.Dropout(cfg.dropout_prob, deterministic=False)(
                new_hidden, rng=self.make_rng("dropout")
            )
        return new_hidden, processed.attention

    @nn.compact
    def __call__(self, carry: Carry, xs: tuple[jax.Array, dict], consts: _Constants):
        """One step of the scan: ``(carry, xs) -> (carry, per-step outputs)``.

        Outputs are not decoded here (see :class:`Network`); the step hands out
        what their decoders read instead (:class:`DecoderInputs`).  At
        initialisation it does decode them once, so their parameters are
        created under this module's name, where dm-clrs keeps them.
        """
        cfg = self.config
        step, hints_now = xs  # scalar step index; dense ground-truth hint[t]
        hidden, previous_preds = carry
        spec = cfg.spec_entries()
        coins = self._teacher_coins(consts.node_mask.shape[0])
        fed = hints_to_encode(
            cfg, spec, step, hints_now, previous_preds, self.repred, coins
        )
        fed = {
            name: site(self, f"{FED}{name}", v, self.edits) for name, v in fed.items()
        }
        encoded = encode(cfg, spec, consts.inputs, fed, consts.node_mask)
        encoded = dataclasses.replace(
            encoded,
            node_fts=site(self, "node_fts", encoded.node_fts, self.edits),
            graph_fts=site(self, "graph_fts", encoded.graph_fts, self.edits),
        )
        hidden = site(self, "hidden_in", hidden, self.edits)
        new_hidden, attention = self._process(encoded, hidden)
        inputs = DecoderInputs(
            jnp.concatenate([encoded.node_fts, hidden, new_hidden], -1),
            encoded.edges,
            encoded.graph_fts,
        )
        class_sizes = dict(consts.class_sizes)
        hint_preds = {}
        for name, stage, loc, typ in spec:
            wanted = (stage == Stage.HINT and cfg.decode_hints) or (
                stage == Stage.OUTPUT and self.is_initializing()
            )
            if wanted:
                preds = inputs.decode(
                    name, loc, typ, consts.node_mask, class_sizes, cfg
                )
                if stage == Stage.HINT:
                    hint_preds[name] = preds
        return (new_hidden, hint_preds), (hint_preds, attention, new_hidden, inputs)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class DecoderInputs:
    """What a step's decoders read.

    Attributes:
      h_t: ``[B, N, 3D]``, ``[node features; previous hidden; new hidden]``.
      edges: the step's factorised edge features.
      graph_fts: ``[B, D]``.
    """

    h_t: jax.Array
    edges: EdgeFeatures
    graph_fts: jax.Array

    def decode(self, name, loc, typ, node_mask, class_sizes, cfg) -> jax.Array:
        """Probe ``name``'s raw decoder output (inside a Flax module)."""
        return decode(
            name,
            loc,
            typ,
            self.h_t,
            self.edges,
            self.graph_fts,
            node_mask,
            class_sizes,
            cfg,
        )

    def at_steps(self, steps: jax.Array) -> DecoderInputs:
        """Per sample ``b``, the inputs of step ``steps[b]`` (from ``[S, B, ...]``)."""
        batch = jnp.arange(steps.shape[0])
        pick = lambda x: x[steps, batch]  # noqa: E731
        edges = EdgeFeatures(
            pick(self.edges.scalars), self.edges.kernel[0], self.edges.bias[0]
        )
        return DecoderInputs(pick(self.h_t), edges, pick(self.graph_fts))


class _OutputDecoders(nn.Module):
    """The output decoders, applied once to each sample's output step."""

    config: NetworkConfig

    @nn.compact
    def __call__(
        self, inputs: DecoderInputs, consts: _Constants
    ) -> dict[str, jax.Array]:
        """Raw outputs, named as :class:`Step` names their decoders."""
        class_sizes = dict(consts.class_sizes)
        return {
            name: inputs.decode(
                name, loc, typ, consts.node_mask, class_sizes, self.config
            )
            for name, stage, loc, typ in self.config.spec_entries()
            if stage == Stage.OUTPUT
        }


def output_steps(lengths: jax.Array, num_steps: int) -> jax.Array:
    """The step whose candidate output each sample returns: ``clip(L_b - 2, 0, S - 1)``.

    dm-clrs decodes a candidate output at every step and blends it in while
    ``L_b > t + 1`` (and always at ``t = 0``), so the candidate of this step is
    what survives.  Decoding only that step gives the same values and
    gradients, and saves an output decoder (one ``[B, N, N, D]`` pointer
    decoder for BFS) per step.
    """
    return jnp.clip(lengths - 2, 0, num_steps - 1)


class Network(nn.Module):
    """The whole CLRS model: ``apply(params, batch, repred=...) -> NetOutput``.

    ``repred=False`` is dm-clrs's training mode (teacher forcing, dropout),
    ``repred=True`` its evaluation mode (own predictions fed back).  RNG
    streams: ``teacher`` (teacher-forcing coins) and ``dropout``, only needed
    in training mode with the corresponding option on.

    Every step's named intermediates (:mod:`nar_gap.model.sites`) come back
    in the ``activations`` collection when it is mutable, with a leading
    step axis; a ``patches`` collection (each leaf ``[S, ...]``) and
    ``edits`` replace them in the loop (:mod:`nar_gap.model.activations`).
    """

    config: NetworkConfig
    edits: Edits = ()

    @nn.compact
    def __call__(self, batch: Batch, repred: bool = True) -> NetOutput:
        """Run the hint loop over ``batch``; see the class docstring for ``repred``."""
        cfg = self.config
        if batch.algorithm != cfg.algorithm:
            raise ValueError(
                f"network built for {cfg.algorithm!r} got a {batch.algorithm!r} batch"
            )
        spec = cfg.spec_entries()
        batch_size, num_nodes = batch.node_mask.shape
        cfg.check_num_nodes(num_nodes)  # the fork's size-locked forms
        types = {name: typ for name, _, _, typ in spec}
        class_sizes = {
            name: int(data.shape[-1])
            for group in (batch.inputs, batch.hints, batch.outputs)
            for name, data in group.items()
            if types.get(name) == Type.CATEGORICAL
        }
        num_steps = max(1, next(iter(batch.hints.values())).shape[0] - 1)

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
        sizes = (batch_size, num_nodes, class_sizes)
        carry = (
            jnp.zeros((batch_size, num_nodes, cfg.hidden_size)),
            placeholder_preds(spec, Stage.HINT, *sizes) if cfg.decode_hints else {},
        )
        scanned = nn.scan(
            Step,
            variable_broadcast="params",
            variable_axes={ACTIVATIONS: 0, PATCHES: 0},
            split_rngs={"params": False, "dropout": True, "teacher": True},
            in_axes=(0, nn.broadcast),
            length=num_steps,
        )(cfg, bool(repred), self.edits, name="net")
        xs = (jnp.arange(num_steps), hints_dense if cfg.encode_hints else {})
        _, (hint_preds, attention, hiddens, inputs) = scanned(carry, xs, consts)
        chosen = inputs.at_steps(output_steps(batch.lengths, num_steps))
        # The output decoders' parameters live in the scanned step ("net"), as
        # dm-clrs's do; here they are applied once, outside the loop.
        net = self.variables["params"]["net"]
        decoders = {k: v for k, v in net.items() if k.startswith("decoder_")}
        outputs = _OutputDecoders(cfg, parent=None).apply(
            {"params": decoders}, chosen, consts
        )
        probed = (
            Dense(cfg.state_probe_size, name="state_probe")(hiddens)
            if cfg.state_probe_size
            else None
        )
        return NetOutput(
            outputs=outputs,
            hint_preds=hint_preds,
            attention=attention,
            hiddens=hiddens,
            probed=probed,
        )


def apply_rngs(key: jax.Array) -> dict[str, jax.Array]:
    """The RNG streams of a training-mode ``apply`` (dropout, teacher forcing)."""
    dropout, teacher = jax.random.split(key)
    return {"dropout": dropout, "teacher": teacher}


def init_rngs(key: jax.Array) -> dict[str, jax.Array]:
    """The RNG streams of an ``init``: the parameters' key, then :func:`apply_rngs`."""
    return {"params": key, **apply_rngs(key)}


def training_outputs(
    config: NetworkConfig, params: Any, batch: Batch, key: jax.Array
) -> NetOutput:
    """The forward pass gradient descent sees: hints scored at every step.

    Training mode (``repred=False``): the model's own soft predictions fed
    back, or the ground truth where teacher forcing draws it; ``key`` seeds
    that draw and dropout (:func:`apply_rngs`).
    """
    return Network(config).apply(
        {"params": params}, batch, repred=False, rngs=apply_rngs(key)
    )


def init_params(config: NetworkConfig, batch: Batch, seed: int | jax.Array = 0) -> Any:
    """Initial parameters of ``Network(config)`` for batches shaped like ``batch``.

    The same numbers as seed ``seed`` of :func:`nar_gap.model.seeds.init_stacked`
    (what training starts from): both run :func:`initializer`.
    """
    key = jax.random.PRNGKey(seed) if isinstance(seed, int) else seed
    return initializer(config)(key, batch)


TEMPLATE_NODES = 4
"""The node count parameters are made at (:func:`init_template`)."""


def init_template(config: NetworkConfig, batch: Batch) -> Batch:
    """The batch ``Network(config)``'s parameters for ``batch`` are made from.

    :func:`~nar_gap.tasks.batch.shape_template`: one graph, one step and
    :data:`TEMPLATE_NODES` nodes, because parameters depend on the
    configuration and the probes' feature sizes alone: the same bits as
    from the batch itself, checked once on every algorithm with every option
    (192 pairs of batches), and in ``tests/model/test_init.py`` on three
    configurations that cover the options.
    The batch's own node count is kept where it decides whether the network
    accepts the batch, so that ``init`` refuses what it refused before: the
    fork's size-locked forms, and a pre-attention bias smaller than the graph.
    """
    nodes = batch.num_nodes
    bias_too_small = config.use_pre_att_bias and nodes > config.pre_att_bias_nodes
    if not (config.size_locked or bias_too_small):
        nodes = min(nodes, TEMPLATE_NODES)
    return shape_template(batch, nodes)


@functools.lru_cache(maxsize=16)
def initializer(config: NetworkConfig) -> Callable[[jax.Array, Batch], Any]:
    """The ``(key, batch) -> params`` of ``Network(config)``, jitted on its template.

    Jitted, not run op by op: an unjitted ``init`` dispatches the hint loop's
    every operation on its own, each compiled once per shape.  Measured on a
    fresh process at the smoke sizes, four configurations and one repeat:
    10.4 s op by op against 7.1 s jitted, and a repeat 0.49 s against 0.
    Inside another trace (``eval_shape``, ``jit``) it is inlined.

    Run on :func:`init_template`, not on ``batch``: the compilation (about
    1 s at the smoke sizes with XLA's optimisations off, nearly all of it the
    parameters' random initializers) is then one per configuration, not one
    per batch shape, and the persistent compilation cache shares it between
    processes.  Counted in CI's tests of the compiler, training, analysis,
    CLI and experiments, jitted on the batch: 40 compilations for 24
    configurations in one worker, 38 for 22 in the other; now one each.
    """
    network = Network(config)

    @jax.jit
    def init_one(key: jax.Array, template: Batch) -> Any:
        return network.init(init_rngs(key), template, repred=False)["params"]

    return lambda key, batch: init_one(key, init_template(config, batch))


def param_shapes(config: NetworkConfig, batch: Batch) -> Any:
    """:func:`init_params`'s tree with ``jax.ShapeDtypeStruct`` leaves: traced, not run.

    For what needs the tree but not its numbers (checking a user's
    parameters, the template a checkpoint is read into).  Running ``init``
    outside ``jit`` executes the hint loop op by op and compiles each scan and
    initializer separately: about 1 s per call at the smoke sizes, paid on every
    run loaded.

    Traced from the batch's :func:`init_template` (its structure and
    dtypes, and the node count where that decides), and remembered per
    that, ``config`` and the x64 switch: ``eval_shape``
    caches nothing, and the trace costs 0.1-0.3 s at the smoke sizes (5 s for
    a compiled hidden-128 network).  Measured on ``tests/training`` in one
    process: 52 traces, 18 s of its 43 s of tracing, most of them the same
    run's template read again.  Each call returns a tree of its own, so a
    caller that edits it changes no other's.
    """
    leaves, treedef = jax.tree_util.tree_flatten(init_template(config, batch))
    avals = tuple(jax.ShapeDtypeStruct(jnp.shape(x), x.dtype) for x in leaves)
    shapes = _traced_param_shapes(
        config, treedef, avals, jax.config.read("jax_enable_x64")
    )
    return jax.tree_util.tree_map(lambda leaf: leaf, shapes)


@functools.lru_cache(maxsize=256)
def _traced_param_shapes(
    config: NetworkConfig, treedef: Any, avals: tuple, x64: bool
) -> Any:
    """``param_shapes`` for a batch given as its structure and leaf avals.

    ``x64`` is part of the key only: the trace reads it from JAX's config.
    """
    abstract = jax.tree_util.tree_unflatten(treedef, avals)
    return jax.eval_shape(lambda b: init_params(config, b, 0), abstract)
