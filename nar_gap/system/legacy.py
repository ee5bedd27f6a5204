"""Old import paths: each says once where its code went, and when it goes.

Modules that moved keep their old path for a while, so that notebooks and
scripts written against it still run; the path warns (``DeprecationWarning``,
once per path and process) with the new place and :data:`REMOVAL`, the
release that drops it.  Nothing here runs on ``import nar_gap``: an old path
costs only the code that imports it.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from types import ModuleType

REMOVAL = "0.3.0"
"""The release in which every old path named through this module is removed."""

_warned: set[str] = set()


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    """Warn, once per ``old`` path, that it moved to ``new``."""
    if old in _warned:
        return
    _warned.add(old)
    warnings.warn(
        f"{old} moved to {new}; the old path is removed in nar_gap {REMOVAL}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def alias_module(old: str, new: str) -> ModuleType:
    """Make the module ``old`` the module ``new`` (same object), with a warning.

    Called from the old module's own file: afterwards ``import old`` and
    ``from old import x`` give ``new``'s objects, so a monkeypatch through
    either path patches both.
    """
    module = importlib.import_module(new)
    warn_moved(old, new, stacklevel=4)
    sys.modules[old] = module
    return module
