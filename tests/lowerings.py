"""Which functions JAX lowers while a block runs: how tests count compiles.

Lowerings are counted, not backend compiles: a hit in the persistent
compilation cache skips the compile but not the lowering, so it cannot hide a
second one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import jax


@contextlib.contextmanager
def lowered() -> Iterator[list[str]]:
    """The names (``jit(f)``) of what is lowered inside the ``with`` block."""
    names: list[str] = []

    def count(event: str, seconds: float, **kwargs) -> None:
        if event.endswith("jaxpr_to_mlir_module_duration"):
            names.append(kwargs.get("fun_name", ""))

    jax.monitoring.register_event_duration_secs_listener(count)
    try:
        yield names
    finally:
        jax.monitoring.unregister_event_duration_listener(count)
