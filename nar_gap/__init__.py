"""nar_gap: neural compilation of graph algorithms into GATv2, and the mechanistic gap.

The package is a core and the paper's studies beside it.  The core is the
toolkit: CLRS tasks (``tasks``), the GATv2 (``model``), graph programs and
their interpreter (``programs``), the compiler (``compiler``), training many
seeds (``training``) and the faithfulness measures with the statistics they
need (``analysis``), over ``system``.  ``nar_gap.paper`` holds what
reproduces and extends the paper with them: the notebooks' experiments, the
figures, the paper-vs-ours report, the tools around the notebooks, TransNAR.
The core never imports ``nar_gap.paper``; ``cli``, the front door, uses both.
Each folder imports only from those below it (import-linter, in CI;
pyproject.toml lists the layers and docs/layout.md says what each holds):

    cli > paper (tools > report > experiments > plots > transnar)
        > analysis > training > compiler > programs > model > tasks > system

The public verbs are re-exported here and imported on first use: ``import
nar_gap`` takes 0.10 s, importing every name it re-exports 2.1 s (JAX, Flax,
dm-clrs's samplers; measured at 0.2.0 on a 2-core AMD EPYC), and ``nar-gap
--help`` or a one-line input error should not wait for that.  ``nar_gap.train`` is
:func:`nar_gap.training.train`.  Modules that moved in 0.2.0 are listed in
CHANGELOG.md; their old paths are gone.
"""

from __future__ import annotations

__version__ = "0.2.0"

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
    "train": "nar_gap.training",
    "load_run": "nar_gap.training",
}
# Submodules reachable as attributes of a bare ``import nar_gap`` (the core's:
# ``from nar_gap.paper import experiments`` for the studies).
for _name in ("data", "analysis"):
    _EXPORTS[_name] = f"nar_gap.{_name}:"

__getattr__, __dir__, _public = lazy_exports(__name__, globals(), _EXPORTS)


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
