"""Old name of :mod:`nar_gap.tasks` (renamed: it collided with ``benchmarks/``).

``import nar_gap.benchmark.specs`` (say) gives :mod:`nar_gap.tasks.specs`, the
same module object, with one ``DeprecationWarning``; removed in nar_gap 0.3.0.
"""

from nar_gap.system.legacy import alias_package

alias_package("nar_gap.benchmark", "nar_gap.tasks")
