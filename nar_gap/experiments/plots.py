"""The old path of the figures; they live in :mod:`nar_gap.plots`.

``from nar_gap.experiments import plots`` keeps working until nar_gap 0.3.0
(:data:`nar_gap.system.legacy.REMOVAL`), with a ``DeprecationWarning`` once:
this module becomes :mod:`nar_gap.plots` itself, which has every name it had.
New code imports ``nar_gap.plots``.
"""

from nar_gap.system.legacy import alias_module

alias_module(__name__, "nar_gap.plots")
