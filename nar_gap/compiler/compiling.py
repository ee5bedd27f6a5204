"""``compile_program``: program -> validated -> laid out -> parameters.

Like tracr's entry point, :func:`compile_program` reads as the list of stages;
each returns a new immutable value.  :class:`CompiledModel` runs the result
(at highest matmul precision, so a GPU cannot quietly use TF32), decodes it
into CLRS form and compares it with dm-clrs.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import numpy as np

from nar_gap.compiler.config import CompilerConfig
from nar_gap.compiler.layout import Layout, lay_out
from nar_gap.compiler.parameters import Params, assign_parameters
from nar_gap.compiler.selection import (
    CriterionScale,
    bias_variant_channels,
    lower_selection,
)
from nar_gap.compiler.validate import CompileError, Problem, validate
from nar_gap.data import Batch, GraphInputError, batch_from_graph
from nar_gap.exactness import Mismatch, compare_with_clrs
from nar_gap.interpreter import Trace
from nar_gap.network import NetOutput, Network, NetworkConfig
from nar_gap.programs.dsl import GraphProgram
from nar_gap.programs.registry import get_program
from nar_gap.specs import get_spec

DEFAULT_HIDDEN_SIZE = 128  # the CLRS benchmark's size, used for faithfulness


@dataclasses.dataclass(frozen=True)
class RunResult:
    """A compiled model's run on one graph, in CLRS encoding.

    Attributes:
      outputs: ``{name: (n,)}`` decoded outputs (pointers as node indices).
      hints: ``{name: (T, n)}``; row 0 is the initial hint as CLRS feeds it,
        rows 1.. the network's decoded predictions; T the reference length.
      attention: ``(S, n, n)`` attention of every step (rows receivers,
        columns senders), ``S = max(1, T - 1)``.
      reference: dm-clrs's hints and outputs for the same graph.
      mismatches: differences from the reference (empty when exact).
    """

    outputs: dict[str, np.ndarray]
    hints: dict[str, np.ndarray]
    attention: np.ndarray
    reference: Batch
    mismatches: list[Mismatch]


@functools.lru_cache(maxsize=32)
def _forward(config: NetworkConfig):
    def forward(params: Params, batch: Batch) -> NetOutput:
        with jax.default_matmul_precision("highest"):
            return Network(config).apply({"params": params}, batch, repred=True)

    return jax.jit(forward)


def decode_output(
    out: NetOutput, batch: Batch, layout: Layout, algorithm: str
) -> Trace:
    """A network's raw output as a :class:`Trace` in CLRS encoding."""
    spec = get_spec(algorithm)

    def clrs_value(name: str, raw: jax.Array) -> np.ndarray:
        typ = spec[name][2]
        raw = np.asarray(raw)
        if typ == "pointer":
            return np.argmax(raw, axis=-1)
        if typ == "mask":
            return (raw > 0.0).astype(np.float64)
        return raw.astype(np.float64)

    hiddens = np.asarray(out.hiddens)
    return Trace(
        variables=layout.variables,
        state=np.stack(
            [hiddens[..., layout.hidden_index(v)] for v in layout.variables], -1
        ),
        selected=np.argmax(np.asarray(out.attention)[:, :, 0], axis=-1),
        hint_preds={n: clrs_value(n, v) for n, v in out.hint_preds.items()},
        outputs={n: clrs_value(n, v) for n, v in out.outputs.items()},
    )


@dataclasses.dataclass(frozen=True)
class CompiledModel:
    """A compiled program: parameters in a nar_gap Network's tree, plus how
    they were made.

    Attributes:
      program: the graph program.
      config: the ``NetworkConfig`` the parameters are for.
      params: the parameter tree (float32), as ``init_params`` returns it.
      layout: the name of every dimension.
      scales: the logit scale of every selection criterion, with its reason.
      compiler_config: the constants used.
    """

    program: GraphProgram
    config: NetworkConfig
    params: Params
    layout: Layout
    scales: tuple[CriterionScale, ...]
    compiler_config: CompilerConfig

    def apply(self, batch: Batch, params: Params | None = None) -> NetOutput:
        """The network's evaluation-mode forward pass (own predictions fed back)."""
        return _forward(self.config)(self.params if params is None else params, batch)

    def trace(self, batch: Batch, params: Params | None = None) -> Trace:
        """Run on ``batch`` and decode every step into CLRS encoding."""
        out = self.apply(batch, params)
        return decode_output(out, batch, self.layout, self.program.algorithm)

    def check(self, batch: Batch, params: Params | None = None) -> list[Mismatch]:
        """Every difference from dm-clrs's hints and outputs on ``batch``."""
        trace = self.trace(batch, params)
        return compare_with_clrs(trace.hint_preds, trace.outputs, batch)

    def graph_batch(self, weights: Any, source: int) -> Batch:
        """A user's graph as a batch, refused if the program cannot run it."""
        matrix = (
            np.asarray(weights, dtype=np.float64) if _is_numeric(weights) else weights
        )
        batch = batch_from_graph(self.program.algorithm, matrix, source)
        a = np.asarray(batch.inputs["A"][0], np.float64)
        if not np.array_equal(a, a.T):
            raise GraphInputError(
                "compiled models run undirected graphs (A == A.T), as the CLRS "
                "samplers draw them; give every edge in both directions"
            )
        if self.program.edge_inputs():
            cfg = self.compiler_config
            if a.max() > cfg.max_weight:
                raise GraphInputError(
                    f"edge weight {a.max():g} exceeds max_weight={cfg.max_weight:g} "
                    "of this compiled model; compile with a larger max_weight"
                )
            if "d" in batch.hints:
                longest = float(np.max(batch.hints["d"]))
                if longest > cfg.max_distance:
                    raise GraphInputError(
                        f"a shortest distance of {longest:g} exceeds max_distance="
                        f"{cfg.max_distance:g} of this compiled model; compile with "
                        "a larger max_distance"
                    )
        return batch

    def run(self, weights: Any, source: int) -> RunResult:
        """Run on one graph: ``weights`` (n, n), 0 = no edge; ``source`` a node.

        The number of steps is the reference trace's (as CLRS evaluation
        does), so dm-clrs's probing runs alongside and the result carries the
        comparison.
        """
        batch = self.graph_batch(weights, source)
        out = self.apply(batch)
        trace = decode_output(out, batch, self.layout, self.program.algorithm)
        num_hints = int(batch.lengths[0])
        spec = get_spec(self.program.algorithm)
        hints = {}
        for name, truth in batch.hints.items():
            rows = [np.asarray(truth[0, 0], np.float64)]
            rows += [trace.hint_preds[name][t, 0] for t in range(num_hints - 1)]
            dtype = np.int64 if spec[name][2] == "pointer" else np.float64
            hints[name] = np.stack(rows).astype(dtype)
        return RunResult(
            outputs={n: v[0] for n, v in trace.outputs.items()},
            hints=hints,
            attention=np.asarray(out.attention)[:, 0, 0],
            reference=batch,
            mismatches=compare_with_clrs(trace.hint_preds, trace.outputs, batch),
        )


def _is_numeric(weights: Any) -> bool:
    try:
        np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def compile_program(
    program: GraphProgram,
    hidden_size: int | None = DEFAULT_HIDDEN_SIZE,
    config: CompilerConfig | None = None,
) -> CompiledModel:
    """Compile ``program`` into GATv2 parameters.

    Stages: validate (every problem at once) -> lower the selection to
    pre-attention channels -> lay out every space -> assign parameters.

    Args:
      program: a graph program (see :mod:`nar_gap.programs`).
      hidden_size: D; None gives the smallest size the program fits in.
      config: compiler constants (defaults: size-free, 1024-node resolution).

    Raises:
      CompileError: listing every problem of the program or the size.
    """
    config = config or CompilerConfig()
    problems = validate(program)
    if problems:
        raise CompileError(program.name, problems)
    bias = None
    if config.pre_att_bias_nodes is None:
        channels, scales = lower_selection(program.selection, config)
    else:
        try:
            channels, scales, beta, mu = bias_variant_channels(
                program.selection, config, config.pre_att_bias_nodes
            )
        except ValueError as error:
            raise CompileError(
                program.name, [Problem("selection", str(error))]
            ) from None
        bias = (beta, mu)
    layout, problems = lay_out(program, channels, hidden_size)
    if layout is None:
        raise CompileError(program.name, problems)
    network_config = NetworkConfig(
        algorithm=program.algorithm,
        hidden_size=layout.hidden_size,
        num_heads=1,
        use_ln=False,
        hint_mode="encoded_decoded",
        hint_repred_mode="soft",
        use_edge_info=program.uses_edge_values,
        use_pre_att_bias=bias is not None,
        pre_att_bias_nodes=config.pre_att_bias_nodes or 16,
    )
    params = assign_parameters(program, layout, network_config, config, bias)
    return CompiledModel(program, network_config, params, layout, scales, config)


def compile(  # noqa: A001 - the public verb of the issue: nar_gap.compile("bfs")
    algorithm: str,
    hidden_size: int | None = DEFAULT_HIDDEN_SIZE,
    config: CompilerConfig | None = None,
    **options: Any,
) -> CompiledModel:
    """Compile the named algorithm's program (``bfs`` or ``bellman_ford``).

    Keyword ``options`` override :class:`CompilerConfig` fields, e.g.
    ``nar_gap.compile("bfs", pre_att_bias_nodes=16)`` for the paper's variant.
    """
    config = dataclasses.replace(config or CompilerConfig(), **options)
    return compile_program(get_program(algorithm), hidden_size, config)


__all__ = ["CompiledModel", "RunResult", "compile", "compile_program"]
