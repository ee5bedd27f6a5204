"""Old import paths: each says once where its code went, and when it goes.

Modules that moved keep their old path for a while, so that notebooks and
scripts written against it still run; the path warns (``DeprecationWarning``,
once per path and process) with the new place and :data:`REMOVAL`, the
release that drops it.  Nothing here runs on ``import nar_gap``: an old path
costs only the code that imports it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
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


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``old.x`` as the module ``new.x`` (the same object).

    For a package that was renamed: ``import old.x`` and pickles that name it
    keep working, and no module is loaded twice.
    """

    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def find_spec(self, fullname, path=None, target=None):  # noqa: D102
        if fullname.startswith(self.old + "."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):  # noqa: D102
        new = self.new + spec.name[len(self.old) :]
        warn_moved(spec.name, new, stacklevel=6)
        return importlib.import_module(new)

    def exec_module(self, module) -> None:  # noqa: D102
        """Nothing to run: the module is the renamed package's, already run."""


def alias_package(old: str, new: str) -> ModuleType:
    """Make the package ``old`` and each of its submodules the renamed ``new``'s.

    Called from the old package's ``__init__``; installs a finder for its
    submodules only then, so ``import nar_gap`` installs none.
    """
    package = alias_module(old, new)
    if not any(isinstance(f, _AliasFinder) and f.old == old for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder(old, new))
    return package
