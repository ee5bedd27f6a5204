"""The one boundary to dm-clrs: what nar_gap uses of it, loaded without TensorFlow.

nar_gap uses five modules of dm-clrs: its specs, samplers, reference algorithms,
probing and the CLRS-text helpers. ``import clrs`` imports far more: its package
``__init__`` builds the baseline models (Haiku) and the dataset readers
(TensorFlow, TensorFlow Datasets), 2.4 of its 3.6 s of import time and 1.9 GB
installed. A GPU cluster's node without internet, whose Python brings its own
CUDA JAX, cannot install TensorFlow at all, so nar_gap must not need it.

How the five modules are loaded without running ``clrs/__init__.py``:

- ``clrs`` and ``clrs._src.clrs_text`` are registered as *shell* packages: module
  objects whose ``__path__`` is dm-clrs's own folder, so ``import clrs._src.x``
  finds dm-clrs's files, but whose ``__init__`` never runs;
- ``clrs._src.probing`` is the one of the five that imports TensorFlow, for a
  single ``isinstance(element, tf.Tensor)`` (decoding a string probe read from a
  ``tf.data`` dataset). While it is imported, ``sys.modules["tensorflow"]`` is a
  stand-in whose ``Tensor`` nothing is an instance of (true: without TensorFlow
  there are no TensorFlow tensors), and the stand-in is removed at once after;
- every other import of TensorFlow, TensorFlow Datasets or Haiku during the
  load raises, so a future dm-clrs whose light modules need them fails here
  loudly, in one line naming its version (:class:`ClrsBoundaryError`), instead
  of quietly bringing TensorFlow back.

The shell package carries the names of ``clrs/__init__.py`` that come from the
five modules (``clrs.Feedback``, ``clrs.CLRS30``, ``clrs.process_random_pos`` ...),
so the rest of nar_gap writes ``clrs.X`` as dm-clrs's own documentation does.
The code that runs is dm-clrs's, so batches, splits and traces are byte-identical
to those of the full import (``tests/tasks/test_clrs_boundary.py`` checks it).

If ``clrs`` was already imported in full (a user's own ``import clrs`` before
nar_gap), that module is used as it is. :func:`full_clrs` completes the shell
into the full package on demand: only code that builds dm-clrs's own models
(the parity tests, the throughput benchmark) calls it.

dm-clrs's absl logging is set to errors only (it warns for every on-the-fly
sampler). Every other module imports dm-clrs as ``from nar_gap.tasks._clrs
import clrs, clrs_samplers, ...``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys
import types
from collections.abc import Iterator, Sequence

#: Top-level packages the light load must not import (TensorFlow, its datasets,
#: Haiku): dm-clrs's models and dataset readers need them, nar_gap does not.
HEAVY_PACKAGES: tuple[str, ...] = ("tensorflow", "tensorflow_datasets", "haiku")

#: The dm-clrs modules nar_gap uses, in an order where each imports only the
#: ones before it (plus NumPy, JAX, chex, attrs, absl).
LIGHT_MODULES: tuple[str, ...] = (
    "clrs._src.specs",
    "clrs._src.probing",
    "clrs._src.algorithms",
    "clrs._src.samplers",
    "clrs._src.clrs_text.clrs_utils",
)

# Names of clrs/__init__.py that the light modules define: (module, name).
_PACKAGE_NAMES: tuple[tuple[str, str], ...] = (
    *(
        ("clrs._src.probing", name)
        for name in ("DataPoint", "predecessor_to_cyclic_predecessor_and_first")
    ),
    *(
        ("clrs._src.samplers", name)
        for name in (
            "build_sampler",
            "CLRS30",
            "Features",
            "Feedback",
            "process_permutations",
            "process_pred_as_input",
            "process_random_pos",
            "Sampler",
            "Trajectory",
        )
    ),
    *(
        ("clrs._src.specs", name)
        for name in (
            "ALGO_IDX_INPUT_NAME",
            "CLRS_30_ALGS_SETTINGS",
            "Location",
            "OutputClass",
            "Spec",
            "SPECS",
            "Stage",
            "Type",
        )
    ),
)

# Shell packages: dm-clrs's folders whose __init__ imports what nar_gap avoids.
_SHELLS: tuple[str, ...] = ("clrs", "clrs._src.clrs_text")
_LIGHT_MARK = "__nar_gap_light__"

# For full_clrs: TensorFlow's C++ runtime writes banners ("Could not find cuda
# drivers") straight to file descriptor 2, where these do not always reach.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


class ClrsBoundaryError(ImportError):
    """dm-clrs could not be loaded (without TensorFlow, or at all)."""


def dmclrs_version() -> str:
    """The installed dm-clrs's version, read from its metadata (no import)."""
    try:
        return importlib.metadata.version("dm-clrs")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


class _RefuseToLoad(importlib.abc.Loader):
    """Raises when a heavy package would be executed."""

    def create_module(self, spec: importlib.machinery.ModuleSpec):
        """Refuses: the light load must not import ``spec.name``."""
        raise ImportError(f"the light load of dm-clrs imported {spec.name!r}")

    def exec_module(self, module: types.ModuleType) -> None:
        """Never reached: :meth:`create_module` raises first."""
        raise ImportError(f"the light load of dm-clrs imported {module.__name__!r}")


class _RefuseHeavy(importlib.abc.MetaPathFinder):
    """Refuses to import :data:`HEAVY_PACKAGES` during the light load.

    Finding is not importing: ``importlib.util.find_spec("tensorflow")``
    (which etils.epath asks whenever JAX opens its compilation cache) gets a
    spec; only executing it raises.
    """

    def find_spec(self, fullname: str, path: Sequence[str] | None, target=None):
        """A refusing spec for the heavy packages; None (ask on) for the rest."""
        if fullname.partition(".")[0] in HEAVY_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, _RefuseToLoad())
        return None


@contextlib.contextmanager
def _refusing_heavy() -> Iterator[None]:
    finder = _RefuseHeavy()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def _tensorflow_standin() -> types.ModuleType:
    """What probing's ``import tensorflow as tf`` gets: a ``Tensor`` never matched."""
    module = types.ModuleType("tensorflow")
    module.__doc__ = "nar_gap's stand-in: dm-clrs probing without TensorFlow"

    class Tensor:  # noqa: D101 - no object is ever one
        pass

    module.Tensor = Tensor
    setattr(module, _LIGHT_MARK, True)
    return module


@contextlib.contextmanager
def _tensorflow_standin_installed() -> Iterator[None]:
    if "tensorflow" in sys.modules:  # the real one is loaded: probing may use it
        yield
        return
    sys.modules["tensorflow"] = _tensorflow_standin()
    try:
        yield
    finally:
        del sys.modules["tensorflow"]


def _shell_package(name: str, folder: str) -> types.ModuleType:
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [folder]
    module = importlib.util.module_from_spec(spec)
    setattr(module, _LIGHT_MARK, True)
    return module


def _package_folder(name: str) -> str:
    spec = importlib.util.find_spec(name)  # a top-level find_spec runs no code
    if spec is None or not spec.submodule_search_locations:
        raise ClrsBoundaryError(
            f"nar_gap needs dm-clrs ({name!r} not found): "
            "pip install dm-clrs (see the README's install section)"
        )
    return list(spec.submodule_search_locations)[0]


def _load_light() -> types.ModuleType:
    root = sys.modules.get("clrs")
    if root is not None:  # already there: loaded in full, or our own shell
        return root
    folder = _package_folder("clrs")
    sys.modules["clrs"] = root = _shell_package("clrs", folder)
    try:
        with _refusing_heavy():
            src = importlib.import_module("clrs._src")
            src.clrs_text = sys.modules["clrs._src.clrs_text"] = _shell_package(
                "clrs._src.clrs_text", os.path.join(folder, "_src", "clrs_text")
            )
            for name in LIGHT_MODULES:
                with (
                    _tensorflow_standin_installed()
                    if name == "clrs._src.probing"
                    else contextlib.nullcontext()
                ):
                    importlib.import_module(name)
        for module, attribute in _PACKAGE_NAMES:
            setattr(root, attribute, getattr(sys.modules[module], attribute))
    except Exception as error:  # noqa: BLE001 - any failure is the same story
        for name in [name for name in sys.modules if name.partition(".")[0] == "clrs"]:
            del sys.modules[name]  # leave no half-loaded dm-clrs behind
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ClrsBoundaryError(
            f"nar_gap cannot load dm-clrs {dmclrs_version()} without TensorFlow "
            f"({reason}); nar_gap.tasks._clrs names the modules it needs"
        ) from error
    root.specs = sys.modules["clrs._src.specs"]
    root.algorithms = sys.modules["clrs._src.algorithms"]
    root.__version__ = dmclrs_version()
    return root


@contextlib.contextmanager
def _silenced_stderr() -> Iterator[None]:
    """Point fd 2 at /dev/null for the duration (C++ loggers bypass sys.stderr)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real fd 2 (some notebook kernels)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def is_light(module: types.ModuleType) -> bool:
    """Whether ``module`` is nar_gap's shell of dm-clrs, not its full package."""
    return bool(getattr(module, _LIGHT_MARK, False))


def full_clrs() -> types.ModuleType:
    """The whole dm-clrs package (models, datasets: TensorFlow and Haiku).

    Runs dm-clrs's own ``__init__`` files inside the shell packages, so every
    module already loaded stays the one object nar_gap holds; probing's
    TensorFlow stand-in is then replaced by the real module. TensorFlow's
    import-time banners are kept off the terminal.
    """
    root = sys.modules["clrs"]
    if not is_light(root):
        return root
    for name in reversed(_SHELLS):  # the inner package first
        shell = sys.modules[name]
        init = list(shell.__path__)[0]
        spec = importlib.util.spec_from_file_location(
            name,
            os.path.join(init, "__init__.py"),
            submodule_search_locations=[init],
        )
        shell.__spec__ = spec
        shell.__file__ = spec.origin
        with _silenced_stderr():
            spec.loader.exec_module(shell)
        delattr(shell, _LIGHT_MARK)
    sys.modules["clrs._src.probing"].tf = sys.modules["tensorflow"]
    return root


clrs = _load_light()
clrs_algorithms = sys.modules["clrs._src.algorithms"]
clrs_probing = sys.modules["clrs._src.probing"]
clrs_samplers = sys.modules["clrs._src.samplers"]
clrs_specs = sys.modules["clrs._src.specs"]
clrs_text_utils = sys.modules["clrs._src.clrs_text.clrs_utils"]

try:  # absl is a dm-clrs dependency; keep its sampler warnings out of user output
    from absl import logging as _absl_logging

    _absl_logging.set_verbosity(_absl_logging.ERROR)
except ImportError:  # pragma: no cover
    pass

__all__ = [
    "HEAVY_PACKAGES",
    "LIGHT_MODULES",
    "ClrsBoundaryError",
    "clrs",
    "clrs_algorithms",
    "clrs_probing",
    "clrs_samplers",
    "clrs_specs",
    "clrs_text_utils",
    "dmclrs_version",
    "full_clrs",
    "is_light",
]
