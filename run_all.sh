#!/usr/bin/env bash
set -euo pipefail
# Regenerate the paper's figures and tables: run every notebooks/NN_*.ipynb
# with papermill, each once the notebooks it needs have finished (its
# metadata's nar_gap.needs: 03, 06, 07 and 08 read notebook 02's trained
# baselines, 07 notebook 05's tables), up to --jobs of them side by side (of
# those ready at once, a higher metadata nar_gap.priority first: 05, 08, 07).  After a failure nothing new
# starts; the notebooks already running finish, and their results are kept.
#
#   ./run_all.sh                     the "cpu" profile (default; meant for an hour on 2 cores: see docs/notebooks.md)
#   ./run_all.sh --profile smoke     minutes: what CI runs
#   ./run_all.sh --profile gpu       notebooks 02 and 03 sized for one H100 job (8 min as priced
#                                    by nar-gap plan --profile gpu --target h100)
#   ./run_all.sh --profile paper     the paper's sizes and seeds (meant for a GPU)
#   ./run_all.sh --profile studies   notebooks 01, 02, 04, 07 and 09 with their studies at
#                                    full size (recipes, drift, generalisation, the size
#                                    sweep to 4096 nodes, the plateau to 1 000 steps, 04's
#                                    arms in the authors' forms and its DFS pair, 09's
#                                    fresh block of 24 seeds per arm): hours
#   ./run_all.sh --profile paper --dry-run
#                                    the paper profile's every program (seeds, shapes,
#                                    sizes) traced and run once, each training cut to
#                                    2 steps and evaluation to 2 graphs: minutes on a
#                                    CPU, to find a shape error before a GPU-day
#                                    (profile "paper-dry", writes under build/paper-dry/)
#   ./run_all.sh --only 03           one notebook (or --only 03 --only 04)
#   ./run_all.sh --profile gpu --results-from gpu.tar.gz
#                                    a job's archive (nar-gap job --archive) into the
#                                    profile's folders, and the notebooks that can read
#                                    results (02, 03 so far) run on it, training nothing
#   ./run_all.sh --out DIR           tables, figures, executed notebooks to DIR/results, ...
#   ./run_all.sh --runs DIR          training runs in DIR (default build/runs/<profile>)
#   ./run_all.sh --force             rerun notebooks whose results are up to date
#   ./run_all.sh --jobs 1            one notebook at a time (default: 2 side by side
#                                    on a machine with 2 or more cores, 1 for gpu and paper,
#                                    whose notebooks share one accelerator; NAR_GAP_JOBS)
#   PROFILE=smoke ./run_all.sh       same as --profile smoke
#
# Each profile writes to its own place: the committed results/ and figures/ are
# the cpu profile's, and only a cpu run writes them; smoke and paper runs write
# to build/<profile>/results and build/<profile>/figures (or --out DIR).
# Executed notebooks go to build/notebooks/<profile>/ (git-ignored), training
# runs to build/runs/<profile>/ (resumed, so a rerun or a later notebook never
# trains a finished seed again).  A notebook is skipped when it ran before with
# the same profile, notebook text, nar_gap source and output folders, and every
# file it wrote is still there unchanged (a stamp beside its executed copy);
# --force runs it anyway.  The files that changed are listed at the end.
# Side by side, each notebook's output goes to build/notebooks/<profile>/NN_*.log.
# Under run_tests.sh's switches (JAX_DISABLE_MOST_OPTIMIZATIONS, or an XLA_FLAGS
# flag nar_gap does not set itself) it refuses to write results/: they change
# every trained number's last bits.
#
# This script sets up the environment; nar_gap/paper/tools/runner.py does the rest.

cd "$(dirname "${BASH_SOURCE[0]}")"

for argument in "$@"; do
    if [[ "$argument" == -h || "$argument" == --help ]]; then
        awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"
        exit 0
    fi
done

scripts/ensure_env.sh
venv="${NAR_GAP_VENV:-.venv}"
# Compiled XLA executables are cached on disk, so notebooks (each its own
# kernel) and reruns do not compile the same training step again.
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-$PWD/build/jax-cache}"
# Executables that took 1 s or more to compile.  Caching every one (0 s) made a
# second process's smoke stability study faster (11.3 s against 14.3 s), but the
# whole CI suite from a clean clone slower (29.5 against about 26 CPU-minutes:
# thousands of small entries written and compressed).
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="${JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS:-1}"
# On some Intel CPUs XLA logs a false ERROR for every executable it loads from
# that cache ("Target machine feature +prefer-no-gather is not supported ...
# could lead to ... SIGILL"): prefer-no-gather/-scatter are LLVM tuning hints,
# not instruction sets, and the entries were compiled on this very machine
# (openxla/xla#44565).  Hundreds of those lines filled notebook outputs, so XLA's
# C++ log stops below FATAL here; its real errors still arrive as Python
# exceptions.  TF_CPP_MIN_LOG_LEVEL=0 shows everything again.
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-3}"
exec "$venv/bin/python" -m nar_gap.paper.tools.runner "$@"
