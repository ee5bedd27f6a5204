"""What a results sidecar records about where its numbers came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests_build import TESTS_XLA_FLAGS

from nar_gap.system import provenance

INTEL = "model name\t: Intel(R) Xeon(R) Gold\nflags\t\t: fpu sse4_2 avx avx2 avx512f\n"
OLD = "model name\t: Some CPU\nflags\t\t: fpu sse4_2\n"


def test_the_host_s_cpu_and_widest_vector_isa_are_recorded():
    assert provenance.host(INTEL)["vector_isa"] == "avx512f"
    assert provenance.host(INTEL)["cpu"] == "Intel(R) Xeon(R) Gold"
    assert provenance.host(OLD)["vector_isa"] == "sse4_2"
    assert provenance.host("")["vector_isa"] == "unknown"
    assert set(provenance.provenance()["host"]) == {
        "machine",
        "cpu",
        "vector_isa",
        "usable_cores",
        *provenance.BIT_DECIDING_VARIABLES,
    }


GRADIENT = """
import hashlib, jax, jax.numpy as jnp, numpy as np
def f(w, x):
    h = x
    for _ in range(4):
        h = jax.nn.softmax(jnp.tanh(h @ w) * 3.0, axis=-1) + jnp.log1p(jnp.abs(h))
    return jnp.sum(h * h)
w = jax.random.normal(jax.random.PRNGKey(0), (128, 128)) / 12
x = jax.random.normal(jax.random.PRNGKey(1), (256, 128))
print(hashlib.sha1(np.asarray(jax.jit(jax.grad(f))(w, x)).tobytes()).hexdigest())
"""


def _gradient_bits(xla_flags: str) -> str:
    env = {**os.environ, "XLA_FLAGS": xla_flags, "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", GRADIENT], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_why_the_isa_is_recorded_the_bits_follow_the_vector_width():
    """The reason for ``host``: one jitted gradient, the same inputs, two
    instruction sets, other bits (measured here: AVX2 differs from AVX, while
    SSE4.2 and AVX agree; AVX2 is where fused multiply-adds arrive, our
    guess at the cause).  A host without AVX2 only checks that one ISA
    repeats its bits."""
    here = _gradient_bits("")
    assert here == _gradient_bits("")  # one ISA: the same bits, every time
    if provenance.host()["vector_isa"] in ("avx2", "avx512f"):  # FMA: AVX2 and up
        assert here != _gradient_bits("--xla_cpu_max_isa=AVX")


def test_the_cores_and_xla_switches_that_decide_the_bits_are_recorded():
    settings = provenance.runtime_settings({"XLA_FLAGS": "--xla_cpu_max_isa=AVX2"})
    assert settings["XLA_FLAGS"] == "--xla_cpu_max_isa=AVX2"
    assert settings["JAX_DISABLE_MOST_OPTIMIZATIONS"] == ""
    assert settings["usable_cores"] >= 1
    assert set(provenance.runtime_settings()) <= set(provenance.host(INTEL))


def test_run_tests_sh_appends_the_tests_build_s_flags():
    """The flags the tests above and ``nar-gap plan``'s memory test know of."""
    script = (Path(__file__).resolve().parents[2] / "run_tests.sh").read_text()
    assert all(flag in script for flag in TESTS_XLA_FLAGS)


def test_the_tests_build_is_foreign_and_nar_gap_s_own_flags_are_not():
    assert provenance.foreign_build_settings({}) == {}
    for off in ("", "0", "false", "False", "off"):
        assert (
            provenance.foreign_build_settings({"JAX_DISABLE_MOST_OPTIMIZATIONS": off})
            == {}
        )
    own = " ".join(provenance.OWN_XLA_FLAGS)
    assert provenance.foreign_build_settings({"XLA_FLAGS": own}) == {}
    switches = " ".join(TESTS_XLA_FLAGS)
    tests = {  # what run_tests.sh exports
        "JAX_DISABLE_MOST_OPTIMIZATIONS": "1",
        "XLA_FLAGS": f"{own} {switches}",
    }
    assert provenance.foreign_build_settings(tests) == {
        "JAX_DISABLE_MOST_OPTIMIZATIONS": "1",
        "XLA_FLAGS": switches,
    }


def test_every_result_a_notebook_writes_names_it_in_its_sidecar(tmp_path):
    """Tables, arrays and figures: the sidecar says which notebook wrote them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nar_gap.system import files

    def written(notebook: str | None) -> list[object]:
        out = tmp_path / str(notebook)
        out.mkdir()
        files.write_table(out / "t.csv", [{"a": 1}])
        files.write_arrays(out / "a.npz", {"x": [1.0]})
        fig = plt.figure()
        files.save_figure(fig, out / "f")
        plt.close(fig)
        names = ("t.csv.json", "a.npz.json", "f.json")
        return [files.read_json(out / name)["notebook"] for name in names]

    before = os.environ.pop(provenance.NOTEBOOK_ENV, None)
    try:
        with provenance.writing_for("07_closing_the_gap"):
            assert written("07") == ["07_closing_the_gap"] * 3
        assert written(None) == [None] * 3  # outside a runner: said so
    finally:
        if before is not None:
            os.environ[provenance.NOTEBOOK_ENV] = before


def test_a_kernel_papermill_starts_inherits_the_notebook_s_name(tmp_path):
    """The name reaches the process that runs the cells (what the runner sets)."""
    script = (
        "from nar_gap.system import provenance; print(provenance.writing_notebook())"
    )
    with provenance.writing_for("02_baselines"):
        printed = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout.strip()
    assert printed == "02_baselines"
