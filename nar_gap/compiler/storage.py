"""Save and load compiled models: one msgpack file with parameters and recipe.

The file holds the algorithm, hidden size and compiler constants next to the
parameters, so loading rebuilds the same program, layout and network config
and checks that every array fits it.  Edited parameters (fine-tuned,
perturbed) load too: only the tree's structure and shapes must match.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np
from flax import serialization

from nar_gap.compiler.compiled_model import CompiledModel
from nar_gap.compiler.compiling import compile
from nar_gap.compiler.config import CompilerConfig
from nar_gap.compiler.parameters import as_compiled_dtype
from nar_gap.system import files

FORMAT = "nar_gap.compiled/1"


class CompiledFileError(ValueError):
    """A compiled-model file that cannot be read (missing, corrupt, mismatched)."""


def save_compiled(model: CompiledModel, path: str | os.PathLike) -> Path:
    """Write ``model`` to ``path`` atomically."""
    payload = {
        "format": FORMAT,
        "algorithm": model.program.name,
        "hidden_size": model.layout.hidden_size,
        # msgpack has no None: unset (derived) options are simply left out.
        "compiler_config": {
            k: v
            for k, v in dataclasses.asdict(model.compiler_config).items()
            if v is not None
        },
        "params": jax.tree.map(np.asarray, model.params),
    }
    return files.write_bytes_atomic(path, serialization.msgpack_serialize(payload))


def _fail(path: Path, why: str) -> CompiledFileError:
    return CompiledFileError(f"compiled-model file {path}: {why}")


def load_compiled(path: str | os.PathLike) -> CompiledModel:
    """Read a file written by :func:`save_compiled` (or ``nar-gap compile``)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _fail(path, "no such file") from None
    except OSError as error:
        raise _fail(path, error.strerror or str(error)) from None
    try:
        payload: Any = serialization.msgpack_restore(raw)
    except Exception:
        raise _fail(path, "not a msgpack file (corrupt or truncated)") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise _fail(path, f"not a {FORMAT} file")
    try:
        config = CompilerConfig(**dict(payload["compiler_config"]))
        template = compile(
            str(payload["algorithm"]), int(payload["hidden_size"]), config
        )
    except (KeyError, TypeError, ValueError) as error:
        raise _fail(path, f"unusable recipe ({error})") from None
    params = payload.get("params")
    want = jax.tree_util.tree_structure(template.params)
    try:
        got = jax.tree_util.tree_structure(params)
        leaves = jax.tree_util.tree_leaves(params)
    except Exception:
        raise _fail(path, "parameters are not a tree of arrays") from None
    if got != want:
        raise _fail(path, "parameter tree does not match the compiled network")
    for leaf, ref in zip(
        leaves, jax.tree_util.tree_leaves(template.params), strict=True
    ):
        if not isinstance(leaf, np.ndarray) or leaf.shape != ref.shape:
            raise _fail(path, "a parameter array has the wrong shape")
        if not np.all(np.isfinite(leaf)):
            raise _fail(path, "parameters contain NaN or infinity")
    params = as_compiled_dtype(params, config.dtype)
    return dataclasses.replace(template, params=params)
