"""nar_gap: neural compilation of graph algorithms into GATv2, and the mechanistic gap.

The public verbs are re-exported here and imported lazily: dm-clrs brings
TensorFlow with it, and ``nar-gap --help`` or a one-line input error should
not wait for that.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Before anything imports JAX: XLA reads XLA_FLAGS once, when its backend starts.
from nar_gap import backend_check as _backend_check  # noqa: E402

_backend_check._install()

_EXPORTS = {
    # the backend self-check (known XLA miscompiles)
    "check_backend": "nar_gap.backend_check",
    "self_check": "nar_gap.backend_check",
    # data
    "Batch": "nar_gap.data",
    "sample_batch": "nar_gap.data",
    "clrs_split": "nar_gap.data",
    "batch_from_graph": "nar_gap.data",
    "pad_batch": "nar_gap.data",
    "TrainStream": "nar_gap.data",
    # algorithms
    "ALGORITHMS": "nar_gap.specs",
    "get_spec": "nar_gap.specs",
    "UnknownAlgorithmError": "nar_gap.specs",
    # network
    "NetworkConfig": "nar_gap.network",
    "Network": "nar_gap.network",
    "NetOutput": "nar_gap.network",
    "init_params": "nar_gap.network",
    # dm-clrs import
    "from_clrs": "nar_gap.clrs_import",
    "ClrsModel": "nar_gap.clrs_import",
    # neural compiler
    "compile": "nar_gap.compiler",
    "compile_program": "nar_gap.compiler",
    "CompiledModel": "nar_gap.compiler",
    "CompilerConfig": "nar_gap.compiler",
    "load_compiled": "nar_gap.compiler",
    "save_compiled": "nar_gap.compiler",
    "get_program": "nar_gap.programs",
    "run_program": "nar_gap.interpreter",
    "compare_with_clrs": "nar_gap.exactness",
    # training
    "TrainConfig": "nar_gap.train",
    "train": "nar_gap.train",
    "evaluate": "nar_gap.train",
    "load_run": "nar_gap.train",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'nar_gap' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
