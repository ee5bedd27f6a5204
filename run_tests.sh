#!/usr/bin/env bash
set -euo pipefail
# The test command. Creates/refreshes the venv on first use, then runs pytest.
#
#   ./run_tests.sh                        everything not marked slow (what CI runs)
#   ./run_tests.sh -m slow                only the slow tests
#   ./run_tests.sh -m ""                  all tests, slow included
#   ./run_tests.sh tests/project/test_packaging.py -k executable -x    any pytest arguments
#   ./run_tests.sh -n 0                   one process (no pytest-xdist workers)
#
# -m "not slow" is added only when you pass no -m of your own.
# Tests run in parallel pytest-xdist workers, as many as the machine has cores
# up to NAR_GAP_TEST_WORKERS (default 4: each worker holds its own JAX, and
# TensorFlow once it runs the dm-clrs parity tests), unless you pass -n or -p no:xdist yourself.  Tests
# that share trained runs (the notebooks resume what the ablation tests
# trained) carry one xdist_group, meant to keep them in one worker; measured
# in CI, the notebook tests still land on both workers (a known problem).

cd "$(dirname "${BASH_SOURCE[0]}")"
scripts/ensure_env.sh
venv="${NAR_GAP_VENV:-.venv}"

# Compiled XLA executables are cached on disk: the notebook tests' kernels
# reuse what the module tests compiled, and a rerun compiles almost nothing.
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-$PWD/build/jax-cache}"
# Executables that took 0.5 s or more to compile.  Caching every one (0 s) made
# a second process's smoke stability study faster (11.3 s against 14.3 s), but
# the whole CI suite from a clean clone slower (29.5 against about 26
# CPU-minutes: thousands of small entries written and compressed).  1 s was
# chosen under XLA's default emitters; with the faster one below, a model's
# initialiser and scorer compile in under 1 s and were compiled again by every
# notebook kernel.
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="${JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS:-0.5}"
# On some Intel CPUs XLA logs a false ERROR for every executable it loads from
# that cache ("Target machine feature +prefer-no-gather is not supported ...
# could lead to ... SIGILL"): prefer-no-gather/-scatter are LLVM tuning hints,
# not instruction sets, and the entries were compiled on this very machine
# (openxla/xla#44565).  Hundreds of those lines filled notebook outputs, so XLA's
# C++ log stops below FATAL here; its real errors still arrive as Python
# exceptions.  TF_CPP_MIN_LOG_LEVEL=0 shows everything again.
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-3}"
# XLA compiles without LLVM's optimisation passes (JAX's own switch for smoke
# tests, also used by Flax's CI): most of a test's time is compiling programs
# it runs a few times.  Measured on the seven smoke notebooks from a cold
# cache, two side by side: 313 s against 380 s.  The numbers differ from an
# optimised build in their last bits (a smoke Bellman-Ford run: other
# parameter bytes, the same test scores); no test compares numbers across the
# two builds, and both sides of every comparison run under the same setting.
# JAX_DISABLE_MOST_OPTIMIZATIONS=0 tests the optimised build that
# run_all.sh and the benchmarks use.
export JAX_DISABLE_MOST_OPTIMIZATIONS="${JAX_DISABLE_MOST_OPTIMIZATIONS:-1}"
# XLA:CPU emits fused loops through its older elemental emitter, not the MLIR
# fusion emitters: the same programs, compiled in less time.  Measured on a
# smoke Bellman-Ford training run alone on this machine: backend compile 3.7 s
# against 5.7-6.1 s (the whole run 8.1 against 10.0-10.5 s); on the smoke
# notebooks, two side by side, 04 took 95 s against 121 s and 07 84 against
# 105.  Like the switch above it changes last bits, not what any test checks;
# upstream is retiring that emitter (openxla/xla#48001), so a jaxlib without the
# flag will abort on it here: drop the line then.  Appended to any XLA_FLAGS
# of yours; NAR_GAP_TEST_FUSION_EMITTERS=1 keeps the default emitters.
if [[ "${NAR_GAP_TEST_FUSION_EMITTERS:-0}" != 1 ]]; then
    export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_cpu_use_fusion_emitters=false"
fi
# Two more of XLA's compile-time costs the tests need not pay.  XLA:CPU splits
# each program's LLVM module into parts (up to 32) to compile them on its
# thread pool, while the tests' workers already fill every core: in one part,
# tests/compiler and tests/model (292 tests, -n 2) took 114 and 128 s against
# 140 and 135 s, alternated, and XLA's compile timer over a fixed set of smoke
# programs fell in 6 of 6 pairs (8 % on average).  That one changes last bits
# in this unoptimised build, not what a test checks (why the split decides
# them was not traced; in the optimised build a smoke training's bits were
# the same).  And the HLO verifier, which checks XLA's own passes after each
# pipeline: about 3 % of that workload's CPU under perf, the same bits without
# it.  NAR_GAP_TEST_COMPILE_DEFAULTS=1 keeps XLA's splitting and verifier.
if [[ "${NAR_GAP_TEST_COMPILE_DEFAULTS:-0}" != 1 ]]; then
    export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_cpu_parallel_codegen_split_count=1 --xla_disable_hlo_passes=hlo-verifier"
fi

defaults=(-q)
has_marker_expr=0
has_workers=0
for arg in "$@"; do
    if [[ "$arg" == -m* ]]; then has_marker_expr=1; fi
    if [[ "$arg" == -n* || "$arg" == --numprocesses* || "$arg" == no:xdist ]]; then
        has_workers=1
    fi
done
if [[ "$has_marker_expr" == 0 ]]; then defaults+=(-m "not slow"); fi
if [[ "$has_workers" == 0 ]]; then
    cores="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
    workers=$((cores < ${NAR_GAP_TEST_WORKERS:-4} ? cores : ${NAR_GAP_TEST_WORKERS:-4}))
    if ((workers > 1)); then defaults+=(-n "$workers" --dist loadgroup); fi
fi
# In CI, list the slowest tests so the 15-minute budget stays visible (60:
# enough to see where the work of both workers goes, not only the notebooks).
if [[ "${CI:-}" == true || "${CI:-}" == 1 ]]; then defaults+=(--durations=60); fi

exec "$venv/bin/python" -m pytest "${defaults[@]}" "$@"
