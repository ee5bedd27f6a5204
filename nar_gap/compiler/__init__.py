"""The neural compiler: graph program -> GATv2 parameters (see compile.py)."""

from nar_gap.compiler.compile import (
    DEFAULT_HIDDEN_SIZE,
    CompiledModel,
    RunResult,
    compile,
    compile_program,
    decode_output,
)
from nar_gap.compiler.config import CompilerConfig
from nar_gap.compiler.layout import Layout, lay_out
from nar_gap.compiler.parameters import assign_parameters
from nar_gap.compiler.selection import lower_selection
from nar_gap.compiler.storage import CompiledFileError, load_compiled, save_compiled
from nar_gap.compiler.validate import CompileError, Problem, validate

__all__ = [
    "DEFAULT_HIDDEN_SIZE",
    "CompileError",
    "CompiledFileError",
    "CompiledModel",
    "CompilerConfig",
    "Layout",
    "Problem",
    "RunResult",
    "assign_parameters",
    "compile",
    "compile_program",
    "decode_output",
    "lay_out",
    "load_compiled",
    "save_compiled",
    "lower_selection",
    "validate",
]
