"""Fill the parameter tree of a nar_gap ``Network`` from a program and layout.

The tree is the network's own ``init`` tree (same names, shapes and dtypes as
a trained model), zeroed and then filled block by block, so compiled
parameters can be trained further, interpolated, perturbed and compared with
trained ones.  All arithmetic is float64 numpy; the result is cast to float32
once, at the end.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np

from nar_gap.compiler.config import CompilerConfig
from nar_gap.compiler.layout import Layout
from nar_gap.compiler.validate import CompileError, Problem
from nar_gap.model.config import NetworkConfig
from nar_gap.model.network import param_shapes
from nar_gap.programs.dsl import (
    NODE_INPUTS,
    Expr,
    GraphProgram,
    hint_category,
    hint_probe,
    is_graph_hint,
    is_hint,
    without_graph_hints,
)
from nar_gap.tasks.sampling import sample_batch

Params = dict[str, Any]


def empty_tree(config: NetworkConfig) -> Params:
    """The network's parameter tree for ``config``, as float64 numpy zeros."""
    return jax.tree.map(lambda s: np.zeros(s.shape, np.float64), _shapes(config))


@functools.cache
def _shapes(config: NetworkConfig) -> Any:
    """The tree's shapes, traced once per network configuration.

    Tracing Flax's ``init`` takes about 0.45 s (2 CPU cores), and a program
    that measures distances is compiled again for every graph whose range it
    does not cover (``CompiledModel.fitted``, which also compiles once more
    to check that the parameters are its program's): notebook 01's precision
    table spent about 95 of its 97 s at the smoke profile in these traces.
    The shapes depend on the configuration alone (the sampled batch is fixed).
    """
    batch = sample_batch(config.algorithm, num_nodes=4, batch_size=1, seed=0)
    return param_shapes(config, batch)


def _z_row(layout: Layout, ref: str) -> int:
    """Row of ``z = [n ; h]`` (processor input) holding ``ref``."""
    if ref in NODE_INPUTS or is_hint(ref):
        return layout.node_index(ref)
    return layout.hidden_size + layout.hidden_index(ref)


def _new_state_row(layout: Layout, ref: str) -> int:
    """Row of ``h_t = [n ; h_prev ; h_new]`` (decoder input) holding ``ref``.

    Variables are read from the new state, inputs and fed-back hints from ``n``.
    """
    if ref in NODE_INPUTS or is_hint(ref):
        return layout.node_index(ref)
    return 2 * layout.hidden_size + layout.hidden_index(ref)


def _write(kernel: np.ndarray, column: int, expr: Expr, row_of, scale=1.0) -> float:
    """Write ``scale * expr``'s coefficients into one column; return its const."""
    for ref, coef in expr.terms:
        kernel[row_of(ref), column] += scale * coef
    return scale * expr.const


def _fill_encoders(net: Params, program: GraphProgram, layout: Layout) -> None:
    for name in layout.node:
        if name in NODE_INPUTS or is_hint(name):
            probe = hint_probe(name) if is_hint(name) else name
            # A categorical hint's encoder reads its C class probabilities:
            # the row of the class the reference names (row 0 otherwise).
            row = hint_category(name) or 0
            net[f"encoder_{probe}"]["kernel"][row, layout.node_index(name)] = 1.0
    for name in program.edge_inputs():
        net[f"encoder_{name}"]["kernel"][0, layout.edge_index(name)] = 1.0
    for name in program.graph_hint_inputs():
        kernel = net[f"encoder_{hint_probe(name)}"]["kernel"]
        kernel[0, layout.graph_index(name)] = 1.0


def _fill_updates(proc: Params, program: GraphProgram, layout: Layout) -> None:
    """Write every update: ``relu(own + selected)``.

    Values carry what the selected sender contributes, skip what the receiver
    keeps; their sum (+ the selected edge's ``e_ij[0]`` on channel 0 with edge
    information) goes through the ReLU.
    """
    z_row = lambda ref: _z_row(layout, ref)  # noqa: E731
    for update in program.updates:
        col = layout.hidden_index(update.target)
        value, skip = proc["value"], proc["skip"]
        value["bias"][col] = _write(value["kernel"], col, update.selected, z_row)
        skip["bias"][col] = _write(skip["kernel"], col, update.own, z_row)


def _fill_attention(proc: Params, layout: Layout) -> None:
    """``P_ijc = W_1 z_j + W_2 z_i + W_e e_ij`` per channel; head ``a_c``."""
    z_row = lambda ref: _z_row(layout, ref)  # noqa: E731
    edge_row = layout.edge_index
    for col, channel in enumerate(layout.channels):
        const = _write(proc["sender"]["kernel"], col, channel.sender, z_row)
        const += _write(proc["receiver"]["kernel"], col, channel.receiver, z_row)
        const += _write(proc["edge"]["kernel"], col, channel.edge, edge_row)
        proc["sender"]["bias"][col] = const
        proc["head_0"]["kernel"][col, 0] = channel.head


def _fill_decoders(
    net: Params, program: GraphProgram, layout: Layout, config: CompilerConfig
) -> None:
    row = lambda ref: _new_state_row(layout, ref)  # noqa: E731
    for decoder in program.decoders:
        for probe in decoder.probes:
            params = net[f"decoder_{probe}"]
            if decoder.kind == "mask":
                # logit = kappa (x - 1/2): sigmoid(±kappa/2) = 1 - e^{-margin}.
                lin = params["linear_0"]
                k = config.mask_scale
                lin["bias"][0] = _write(lin["kernel"], 0, decoder.expr, row, k) - k / 2
            elif decoder.kind == "scalar":
                lin = params["linear_0"]
                lin["bias"][0] = _write(lin["kernel"], 0, decoder.expr, row)
            elif decoder.kind == "graph_scalar":
                # CLRS's graph decoder L1(max_i h_i) + L2(g): node terms through
                # L1, so const + Σ coef * max_i ref_i; fed-back graph hints
                # through L2, read once per graph.
                nodes = without_graph_hints(decoder.expr)
                lin = params["linear_0"]
                lin["bias"][0] = _write(lin["kernel"], 0, nodes, row)
                for ref, coef in decoder.expr.terms:
                    if is_graph_hint(ref):
                        params["linear_1"]["kernel"][layout.graph_index(ref), 0] = coef
            elif decoder.kind == "mask_one":
                # Softmax over nodes of pointer_scale * expr: ids 1/N apart
                # differ by the full margin, as in pointer decoding.
                lin = params["linear_0"]
                k = config.pointer_scale
                lin["bias"][0] = _write(lin["kernel"], 0, decoder.expr, row, k)
            elif decoder.kind == "categorical":
                # logit_c = mask_scale * classes[c]: 0/1 indicators differ by
                # 2 * margin, the mask decoders' gap.
                lin = params["linear_0"]
                if lin["kernel"].shape[1] != len(decoder.classes):
                    found = Problem(
                        probe,
                        f"CLRS has {lin['kernel'].shape[1]} classes, the program "
                        f"gives {len(decoder.classes)}",
                    )
                    raise CompileError(program.name, [found])
                for c, expr in enumerate(decoder.classes):
                    lin["bias"][c] = _write(
                        lin["kernel"], c, expr, row, config.mask_scale
                    )
            elif decoder.kind == "pointer":
                # l_ij = -lam (max(x_i, pos_j) + max(-x_i, -pos_j)) = -lam |x_i - pos_j|
                # (dm-clrs's pointer decoder: w4 . max(W1 h_i, W2 h_j + W3 e_ji)).
                w1, w2 = params["linear_0"], params["linear_1"]
                w1["bias"][0] = _write(w1["kernel"], 0, decoder.expr, row)
                w1["bias"][1] = _write(w1["kernel"], 1, decoder.expr, row, -1.0)
                pos = layout.node_index("pos")
                w2["kernel"][pos, 0], w2["kernel"][pos, 1] = 1.0, -1.0
                head = params["linear_3"]["kernel"]
                head[0, 0] = head[1, 0] = -config.pointer_scale
            else:
                raise ValueError(f"unknown decoder kind {decoder.kind!r}")


def assign_parameters(
    program: GraphProgram,
    layout: Layout,
    network_config: NetworkConfig,
    config: CompilerConfig,
    bias: np.ndarray | None = None,
) -> Params:
    """Compiled parameters in the tree of ``Network(network_config)``.

    Args:
      program: the validated program.
      layout: where each variable, input and channel lives.
      network_config: the architecture the parameters are for.
      config: the compiler's constants.
      bias: the paper's ``N_B x N_B`` pre-attention bias ``B`` of its
        variant (:func:`~nar_gap.compiler.selection.bias_variant_channels`),
        or None.

    Returns:
      The parameter tree in ``config.dtype`` (:func:`as_compiled_dtype`).
      Hint encoders stay zero unless the program reads a fed-back hint
      (:func:`~nar_gap.programs.dsl.hint`): BFS's and Bellman-Ford's state
      lives in the hidden vector, so teacher forcing and re-prediction cannot
      change what they compute (clrs-semantics.md §7.6).
    """
    tree = empty_tree(network_config)
    net = tree["net"]
    _fill_encoders(net, program, layout)
    proc = net["processor"]
    _fill_updates(proc, program, layout)
    _fill_attention(proc, layout)
    if bias is not None:
        proc["pre_att_bias"][:] = bias
    _fill_decoders(net, program, layout, config)
    return as_compiled_dtype(tree, config.dtype)


def as_compiled_dtype(tree: Params, dtype: str) -> Params:
    """``tree`` in the compiled model's float: float32 jax or float64 numpy arrays.

    Outside x64 mode JAX would round a float64 array to float32; numpy keeps
    it until the model's own x64 calls.
    """
    if dtype == "float64":
        return jax.tree.map(lambda a: np.asarray(a, np.float64), tree)
    # Rounded by numpy, then placed: jnp.asarray compiles a program per leaf
    # shape (a conversion, or lax.stage without a dtype: 34 compiles for the
    # three algorithms at two widths, 112 in one CI test worker), a device
    # transfer none.  Both round to nearest: the same bits, checked on values
    # from 1e-40 to 1e40.
    return jax.tree.map(lambda a: jax.device_put(np.asarray(a, np.float32)), tree)
