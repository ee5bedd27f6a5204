"""The neural compiler: graph program -> GATv2 parameters.

The stages, in ``assembly.py``'s :func:`~nar_gap.compiler.assembly.assemble`:
``validate.py`` (every problem at once) -> ``selection.py`` (criteria to
pre-attention channels) -> ``layout.py`` (a name for every dimension) ->
``parameters.py`` (the weight blocks).  ``compiled_model.py`` holds and runs
the result (compiling again when a graph needs a wider distance range),
``compiling.py`` is the public verb, ``storage.py`` saves and loads,
``config.py`` holds the constants, ``minimal.py`` searches for the
smallest exact network a compilation contains, and ``precision.py`` finds
the smallest score gap a compiled Bellman-Ford still decides.  Names are
imported on first use (``nar-gap compile --help`` reads only the constants).
"""

from __future__ import annotations

from nar_gap.system.lazy import lazy_exports

_EXPORTS = {
    "DEFAULT_HIDDEN_SIZE": "nar_gap.compiler.config",
    "CompilerConfig": "nar_gap.compiler.config",
    "CompiledModel": "nar_gap.compiler.compiled_model",
    "CompiledRun": "nar_gap.compiler.compiled_model",
    "decode_trace": "nar_gap.compiler.compiled_model",
    "compile": "nar_gap.compiler.compiling",
    "compile_algorithm": "nar_gap.compiler.compiling",
    "compile_program": "nar_gap.compiler.compiling",
    "Layout": "nar_gap.compiler.layout",
    "lay_out": "nar_gap.compiler.layout",
    "assign_parameters": "nar_gap.compiler.parameters",
    "lower_selection": "nar_gap.compiler.selection",
    "CompiledFileError": "nar_gap.compiler.storage",
    "load_compiled": "nar_gap.compiler.storage",
    "save_compiled": "nar_gap.compiler.storage",
    "CompileError": "nar_gap.compiler.validate",
    "Problem": "nar_gap.compiler.validate",
    "validate": "nar_gap.compiler.validate",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, globals(), _EXPORTS)
