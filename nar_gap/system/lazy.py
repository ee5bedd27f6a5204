"""Names a package re-exports, imported on first use (PEP 562 module ``__getattr__``).

``nar_gap``, ``nar_gap.compiler`` and ``nar_gap.training`` re-export their
public names this way, so ``nar-gap --help`` and a configuration's defaults
do not wait for JAX, Flax and dm-clrs to load.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(
    package: str, namespace: MutableMapping[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for a package's ``globals()``.

    ``exports`` maps a public name to where it lives: ``"pkg.module"`` (the
    same name there), ``"pkg.module:other"`` (another name there) or
    ``"pkg.module:"`` (the module itself).  A name is imported once, then
    cached in ``namespace``.
    """
    names = sorted(exports)

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = exports[name].partition(":")
        loaded = importlib.import_module(module)
        if ":" in exports[name] and not attribute:
            value = loaded
        else:
            value = getattr(loaded, attribute or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return names

    return __getattr__, __dir__, names
