"""How nar_gap reads a switch a user sets to turn one of its defaults off.

Two defaults of nar_gap's can be switched off from the environment: the XLA
workaround of :mod:`~nar_gap.system.backend_check` and the GPU determinism
flag of :mod:`~nar_gap.system.numerics`.  Both read the value the same way,
so a word that turns one off turns the other off too.  JAX's own boolean
variables are not read here: :mod:`~nar_gap.system.provenance` reads them by
JAX's rules, which count the empty value as off.
"""

from __future__ import annotations

from collections.abc import Mapping

# Case and surrounding spaces ignored; any other value, empty included,
# leaves the default on.
OFF_WORDS = ("off", "0", "false", "no")


def switched_off(environ: Mapping[str, str], name: str) -> bool:
    """Whether the variable ``name`` of ``environ`` switches its default off."""
    return environ.get(name, "").strip().lower() in OFF_WORDS
