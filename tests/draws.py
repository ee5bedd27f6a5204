"""Counting calls, and the random draws a trace makes.

Shared by the tests that prove a forward pass traces no initialiser
(``tests/model``, ``tests/paper/transnar``): a module beside ``conftest.py``
is importable from all.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import jax
import pytest


def counted(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    *modules: ModuleType,
    calls: list[str] | None = None,
) -> list[str]:
    """Replaces ``name`` in each of ``modules`` by itself, noting each call.

    The first module holds the real one; the others are where callers look
    it up too.  Calls are appended, by ``name``, to ``calls`` (a new list
    unless given) and that list is returned.
    """
    calls = [] if calls is None else calls
    real = getattr(modules[0], name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return real(*args, **kwargs)

    for module in modules:
        monkeypatch.setattr(module, name, counting)
    return calls


def initialiser_draws(
    monkeypatch: pytest.MonkeyPatch,
    names: tuple[str, ...] = ("truncated_normal", "normal"),
) -> list[str]:
    """Every draw of ``names`` traced from now on, in one list, by name.

    JAX's private module holds the draws and ``jax.random`` re-exports them;
    Flax's initialisers look them up in either.
    """
    from jax._src import random as jax_random

    calls: list[str] = []
    for name in names:
        counted(monkeypatch, name, jax_random, jax.random, calls=calls)
    return calls
