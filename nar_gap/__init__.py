"""nar_gap: neural compilation of graph algorithms into GATv2, and the mechanistic gap.

The package is layered; each folder imports only from those below it
(checked by import-linter in CI; docs/layout.md, "How the code is laid out"):

    cli  >  experiments  >  analysis  >  compiler | training  >  programs
         >  model  >  benchmark  >  system

The public verbs are re-exported here and imported lazily: JAX, Flax and
dm-clrs's samplers take about a second to load, and ``nar-gap --help`` or a
one-line input error should not wait for that.  Nothing legacy runs here:
``nar_gap.train`` (the verb, and the flat layout's module path),
``nar_gap.data`` and the old ``nar_gap.faithfulness`` are modules of their
own, loaded on first use; old
paths warn once and go in nar_gap 0.3.0 (:mod:`nar_gap.system.legacy`), and
``nar_gap.pipeline`` (say), a module of the flat layout, says where it went
(:mod:`nar_gap._moved`).
"""

from __future__ import annotations

__version__ = "0.1.0"

# Before anything imports JAX: XLA reads XLA_FLAGS once, when its backend starts.
from nar_gap.system import backend_check as _backend_check  # noqa: E402

_backend_check._install()

from nar_gap.system import numerics as _numerics  # noqa: E402

_numerics.request_gpu_determinism()  # also before JAX starts

from nar_gap.system.lazy import lazy_exports  # noqa: E402

_EXPORTS = {
    # the backend self-check (known XLA miscompiles)
    "self_check": "nar_gap.system.backend_check",
    # data
    "Batch": "nar_gap.tasks.batch",
    "pad_batch": "nar_gap.tasks.batch",
    "sample_batch": "nar_gap.tasks.sampling",
    "clrs_split": "nar_gap.tasks.sampling",
    "TrainStream": "nar_gap.tasks.sampling",
    "batch_from_graph": "nar_gap.tasks.graphs",
    # algorithms
    "ALGORITHMS": "nar_gap.tasks.specs",
    "get_spec": "nar_gap.tasks.specs",
    "UnknownAlgorithmError": "nar_gap.tasks.specs",
    "compare_with_clrs": "nar_gap.tasks.exactness",
    # network
    "NetworkConfig": "nar_gap.model.config",
    "NetOutput": "nar_gap.model.config",
    "Network": "nar_gap.model.network",
    "init_params": "nar_gap.model.network",
    "Model": "nar_gap.model.model",
    # dm-clrs import
    "from_clrs": "nar_gap.model.from_dmclrs",
    "ClrsModel": "nar_gap.model.from_dmclrs",
    # graph programs and the neural compiler
    "get_program": "nar_gap.programs",
    "run_program": "nar_gap.programs.interpreter",
    "compile": "nar_gap.compiler",
    "compile_program": "nar_gap.compiler",
    "CompiledModel": "nar_gap.compiler",
    "CompilerConfig": "nar_gap.compiler",
    "load_compiled": "nar_gap.compiler",
    "save_compiled": "nar_gap.compiler",
    # training
    "TrainConfig": "nar_gap.training",
    "load_run": "nar_gap.training",
}
# Submodules reachable as attributes of a bare ``import nar_gap``; ``train`` is
# the callable module that is also the function (nar_gap/train.py).
for _name in ("data", "train", "faithfulness", "experiments", "analysis"):
    _EXPORTS[_name] = f"nar_gap.{_name}:"

_exported, __dir__, _public = lazy_exports(__name__, globals(), _EXPORTS)


def __getattr__(name: str):
    """A public name, imported on first use; a flat-layout module says where it went."""
    if name == "evaluate":  # the flat layout's verb; CLRS's metric is a score
        from nar_gap.model.seeds import score_seeds
        from nar_gap.system.legacy import warn_moved

        warn_moved("nar_gap.evaluate", "nar_gap.model.seeds.score_seeds")
        return score_seeds
    try:
        return _exported(name)
    except AttributeError:
        from nar_gap._moved import moved_error

        raise moved_error(f"{__name__}.{name}") from None


__all__ = [*_public, "__version__", "check_backend"]


def check_backend(crash_checks: bool = False):
    """The backend self-check (:func:`nar_gap.system.backend_check.check_backend`).

    Run over several processes (``NAR_GAP_COORDINATOR`` and its companions
    set, :mod:`nar_gap.training.hosts`), it first joins them: JAX allows that
    only before its backend starts, and this check is the first thing every
    notebook runs, so each notebook's training is split over the processes.
    """
    from nar_gap.system.backend_check import check_backend as check
    from nar_gap.training import hosts

    hosts.initialize_from_environment()
    return check(crash_checks)
