"""Processes that cannot import TensorFlow: the environment that makes them.

Shared by tests in several layer folders (``tests/tasks``, ``tests/paper/tools``,
``tests/project``): a module beside ``conftest.py`` is importable from all.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

# Beside the boundary it proves (tests/ has one folder per layer).
NO_TENSORFLOW = Path(__file__).resolve().parent / "tasks" / "no_tensorflow"


def without_tensorflow(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with ``no_tensorflow/`` first on PYTHONPATH (its sitecustomize)."""
    paths = [str(NO_TENSORFLOW), *filter(None, [environ.get("PYTHONPATH", "")])]
    return {**environ, "PYTHONPATH": os.pathsep.join(paths)}


@contextlib.contextmanager
def children_without_tensorflow() -> Iterator[None]:
    """Every process started meanwhile (a notebook's kernel) blocks TensorFlow."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = without_tensorflow(os.environ)["PYTHONPATH"]
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before
