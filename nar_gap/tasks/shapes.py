"""The old path of the shape buckets, now :mod:`nar_gap.tasks.buckets`.

Renamed because ``tasks/shapes`` and ``training/shapes`` (which pads a step's
batches to those buckets) were two modules of one name in two layers.
``import nar_gap.tasks.shapes`` keeps working until nar_gap 0.3.0
(:data:`nar_gap.system.legacy.REMOVAL`), with a ``DeprecationWarning`` once:
this module becomes :mod:`nar_gap.tasks.buckets` itself.
"""

from nar_gap.system.legacy import alias_module

alias_module(__name__, "nar_gap.tasks.buckets")
