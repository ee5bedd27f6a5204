"""The public verb: ``nar_gap.compile("bfs")`` and :func:`compile_program`."""

from __future__ import annotations

import dataclasses
from typing import Any

from nar_gap.compiler.compiled_model import CompiledModel
from nar_gap.compiler.config import DEFAULT_HIDDEN_SIZE, CompilerConfig
from nar_gap.programs.dsl import GraphProgram
from nar_gap.programs.registry import get_program


def compile_program(
    program: GraphProgram,
    hidden_size: int | None = DEFAULT_HIDDEN_SIZE,
    config: CompilerConfig | None = None,
) -> CompiledModel:
    """Compile ``program`` into GATv2 parameters.

    The stages are :func:`~nar_gap.compiler.assembly.assemble`'s.

    Args:
      program: a graph program (see :mod:`nar_gap.programs`).
      hidden_size: D; None gives the smallest size the program fits in.
      config: compiler constants (defaults: size-free, 1024-node resolution).

    Raises:
      CompileError: listing every problem of the program or the size.
    """
    return CompiledModel.build(program, hidden_size, config or CompilerConfig())


def compile_algorithm(
    algorithm: str,
    hidden_size: int | None = DEFAULT_HIDDEN_SIZE,
    config: CompilerConfig | None = None,
    num_nodes: int | None = None,
    **options: Any,
) -> CompiledModel:
    """Compile the named algorithm's program (``bfs``, ``bellman_ford``, ``dfs``).

    ``num_nodes`` is the graph size DFS's program is built for (default 16;
    ``run`` compiles it again for the graph it is given); the others run
    every size and ignore it.  Keyword ``options`` override
    :class:`CompilerConfig` fields, e.g. ``nar_gap.compile("bfs",
    pre_att_bias_nodes=16)`` for the paper's variant.
    """
    config = dataclasses.replace(config or CompilerConfig(), **options)
    program = get_program(algorithm, max_weight=config.max_weight, num_nodes=num_nodes)
    return compile_program(program, hidden_size, config)


# The public verb, ``nar_gap.compile("bfs")``: the same function.  The package
# itself imports ``compile_algorithm``, so no module of it shadows the builtin.
compile = compile_algorithm  # noqa: A001
