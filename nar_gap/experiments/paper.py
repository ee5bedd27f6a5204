"""Old path of :mod:`nar_gap.report.paper`.

It warns once and goes in nar_gap 0.3.0 (:mod:`nar_gap.system.legacy`).
"""

from nar_gap.system.legacy import alias_module

_module = alias_module(
    "nar_gap.experiments.paper",
    "nar_gap.report.paper",
)
