"""The XLA flags ``run_tests.sh`` appends for the tests' build (docs/tests.md).

Spelled once for the tests that need them: the memory test of ``nar-gap plan``
drops them (it measures the runs' build), the provenance test counts them as
foreign, and a test reads ``run_tests.sh`` for each.
"""

from __future__ import annotations

TESTS_XLA_FLAGS = (
    "--xla_cpu_use_fusion_emitters=false",
    "--xla_cpu_parallel_codegen_split_count=1",
    "--xla_disable_hlo_passes=hlo-verifier",
)


def without_tests_flags(xla_flags: str) -> str:
    """``xla_flags`` less any of :data:`TESTS_XLA_FLAGS`' flags, whatever value."""
    names = tuple(flag.split("=")[0] for flag in TESTS_XLA_FLAGS)
    return " ".join(f for f in xla_flags.split() if f.split("=")[0] not in names)
