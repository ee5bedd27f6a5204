"""The old path of the counted-steps rule, now :mod:`nar_gap.tasks.counted_steps`.

Renamed because ``tasks/steps`` (which steps of a padded trace count) read as
a sibling of ``training/step`` (the jitted train step).
``import nar_gap.tasks.steps`` keeps working until nar_gap 0.3.0
(:data:`nar_gap.system.legacy.REMOVAL`), with a ``DeprecationWarning`` once:
this module becomes :mod:`nar_gap.tasks.counted_steps` itself.
"""

from nar_gap.system.legacy import alias_module

alias_module(__name__, "nar_gap.tasks.counted_steps")
