"""The cyclic garbage collector's first threshold, for processes that trace JAX.

Tracing and lowering a JAX program allocate millions of short-lived Python
objects, nearly all of them freed by reference counting alone.  CPython runs
its cyclic collector every 700 net allocations of container objects, so a
tracing process spends much of its time walking objects that were about to die
anyway: sampled with ``perf`` over a fixed set of smoke trainings and
measurements (three algorithms, 66 compilations), ``gc_collect_main`` and its
visitors took about 8 % of the CPU.  With the first threshold at 10 000 the
same work took 21.0 and 21.8 s against 23.5 and 24.3 s at CPython's 700
(alternated, one 2-core AMD EPYC), jaxpr-to-MLIR lowering 2.7 s against 3.8 s,
at the same peak resident memory (760 MB either way).  The collector still
runs, and still finds every cycle; only less often.  It decides no number:
notebook 06 at the cpu profile, run through ``nar-gap job`` on the committed
runs, wrote every table, array and figure byte for byte as committed.

It is set at nar_gap's own entry points (the ``nar-gap`` command, a notebook's
:func:`~nar_gap.paper.report.notebook.setup`, the test session), never on
import: a program that imports nar_gap keeps its own collector.
"""

from __future__ import annotations

import gc

TRACING_FIRST_THRESHOLD = 10_000
"""Net container allocations between two collections of the youngest generation."""


def collect_less_often() -> tuple[int, int, int]:
    """Raise the collector's first threshold to :data:`TRACING_FIRST_THRESHOLD`.

    Only ever raises it: a process that set a higher one keeps it, and the
    older generations' thresholds are left as they are.  Returns the
    thresholds now in force.
    """
    first, *older = gc.get_threshold()
    gc.set_threshold(max(first, TRACING_FIRST_THRESHOLD), *older)
    return gc.get_threshold()
