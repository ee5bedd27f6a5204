"""The old path of notebook 06's study, now :mod:`nar_gap.experiments.landscape_study`.

Renamed because ``experiments/landscapes`` (the study) and ``analysis/landscape``
(the loss along directions it measures) differed by one letter; the new name
follows ``faithfulness_study`` beside ``analysis/faithfulness``.
``from nar_gap.experiments import landscapes`` keeps working until nar_gap
0.3.0 (:data:`nar_gap.system.legacy.REMOVAL`), with a ``DeprecationWarning``
once: this module becomes :mod:`nar_gap.experiments.landscape_study` itself.
"""

from nar_gap.system.legacy import alias_module

alias_module(__name__, "nar_gap.experiments.landscape_study")
