"""The compiler's stage list: program -> validated -> lowered -> laid out -> parameters.

Like tracr's entry point, :func:`assemble` reads as the list of stages; each
returns a new immutable value.  :class:`~nar_gap.compiler.compiled_model.
CompiledModel` wraps the result (and assembles again when a graph needs other
constants); :mod:`~nar_gap.compiler.compiling` is the public verb.
"""

from __future__ import annotations

import dataclasses

from nar_gap.compiler.config import CompilerConfig
from nar_gap.compiler.layout import Layout, lay_out
from nar_gap.compiler.parameters import Params, assign_parameters
from nar_gap.compiler.selection import (
    CriterionScale,
    bias_variant_channels,
    lower_selection,
)
from nar_gap.compiler.validate import CompileError, Problem, validate
from nar_gap.model.config import NetworkConfig
from nar_gap.programs.dsl import GraphProgram


@dataclasses.dataclass(frozen=True)
class Assembled:
    """What the stages make: the architecture, its parameters and their story."""

    network: NetworkConfig
    params: Params
    layout: Layout
    scales: tuple[CriterionScale, ...]


def assemble(
    program: GraphProgram, hidden_size: int | None, config: CompilerConfig
) -> Assembled:
    """Compile ``program`` into GATv2 parameters.

    Stages: validate (every problem at once) -> lower the selection to
    pre-attention channels -> lay out every space -> assign parameters.

    Raises:
      CompileError: listing every problem of the program or the size.
    """
    _refuse(program, validate(program))
    channels, scales, bias = _lower(program, config)
    layout, problems = lay_out(program, channels, hidden_size)
    _refuse(program, problems)
    network = _network_config(program, layout.hidden_size, config, bias is not None)
    params = assign_parameters(program, layout, network, config, bias)
    return Assembled(network, params, layout, scales)


def _refuse(program: GraphProgram, problems: list[Problem]) -> None:
    if problems:
        raise CompileError(program.name, problems)


def _lower(program: GraphProgram, config: CompilerConfig):
    """Selection -> pre-attention channels, their scales, and the bias.

    The bias is the paper's ``N_B x N_B`` pre-attention bias when its variant
    is asked for, else None.
    """
    if config.pre_att_bias_nodes is None:
        channels, scales = lower_selection(program.selection, config)
        return channels, scales, None
    try:
        channels, scales, bias = bias_variant_channels(
            program.selection, config, config.pre_att_bias_nodes
        )
    except ValueError as error:
        raise CompileError(program.name, [Problem("selection", str(error))]) from None
    return channels, scales, bias


def _network_config(
    program: GraphProgram, hidden_size: int, config: CompilerConfig, bias: bool
) -> NetworkConfig:
    """The architecture a compiled program runs in.

    One head, no layer norm, hints encoded and decoded, edge information
    where the program reads edges.
    """
    return NetworkConfig(
        algorithm=program.algorithm,
        hidden_size=hidden_size,
        num_heads=1,
        use_ln=False,
        hint_mode="encoded_decoded",
        hint_repred_mode="soft",
        use_edge_info=program.uses_edge_values,
        use_pre_att_bias=bias,
        pre_att_bias_nodes=config.pre_att_bias_nodes or 16,
    )
