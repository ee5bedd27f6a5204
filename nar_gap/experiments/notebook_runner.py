"""Old path of :mod:`nar_gap.tools.notebook_runner`.

It warns once and goes in nar_gap 0.3.0 (:mod:`nar_gap.system.legacy`).
"""

from nar_gap.system.legacy import alias_module

_module = alias_module(
    "nar_gap.experiments.notebook_runner",
    "nar_gap.tools.notebook_runner",
)

if __name__ == "__main__":
    raise SystemExit(_module.main())
