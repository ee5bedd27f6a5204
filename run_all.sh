#!/usr/bin/env bash
set -euo pipefail
# Regenerate the paper's figures and tables: run every notebooks/NN_*.ipynb
# with papermill, each once the notebooks it needs have finished (its
# metadata's nar_gap.needs: 03, 06 and 07 read notebook 02's trained
# baselines), up to --jobs of them side by side (of those ready at once, a
# higher metadata nar_gap.priority first: 07).  After a failure nothing new
# starts; the notebooks already running finish, and their results are kept.
#
#   ./run_all.sh                     the "cpu" profile (default; meant for an hour on 2 cores: see docs/notebooks.md)
#   ./run_all.sh --profile smoke     minutes: what CI runs
#   ./run_all.sh --profile gpu       notebooks 02 and 03 sized for one H100 job (8 min as priced
#                                    by nar-gap plan --profile gpu --target h100)
#   ./run_all.sh --profile paper     the paper's sizes and seeds (meant for a GPU)
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

cd "$(dirname "${BASH_SOURCE[0]}")"

usage() { awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; }
profile="${PROFILE:-cpu}"
force=0
dry=0
out=""
runs=""
only=()
results_from=""
jobs="${NAR_GAP_JOBS:-}"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --profile | --only | --out | --runs | --jobs | --results-from)
            [[ $# -ge 2 ]] || { echo "nar_gap: $1 needs a value (try --help)" >&2; exit 2; }
            case "$1" in
                --profile) profile="$2" ;;
                --only) only+=("$2") ;;
                --out) out="$2" ;;
                --runs) runs="$2" ;;
                --jobs) jobs="$2" ;;
                --results-from) results_from="$2" ;;
            esac
            shift 2
            ;;
        --profile=*) profile="${1#--profile=}"; shift ;;
        --only=*) only+=("${1#--only=}"); shift ;;
        --out=*) out="${1#--out=}"; shift ;;
        --runs=*) runs="${1#--runs=}"; shift ;;
        --jobs=*) jobs="${1#--jobs=}"; shift ;;
        --force) force=1; shift ;;
        --dry-run) dry=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) echo "nar_gap: run_all.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
case "$profile" in
    smoke | cpu | gpu | paper) ;;
    smoke-dry | cpu-dry | gpu-dry | paper-dry) dry=1; profile="${profile%-dry}" ;;
    *) echo "nar_gap: unknown profile '$profile' (smoke, cpu, gpu or paper)" >&2; exit 2 ;;
esac
# A dry run is a profile of its own (nar_gap.experiments.profiles.dry_run):
# its own build/ folders, never the real run's.
if ((dry)); then profile="$profile-dry"; fi
if [[ -n "$jobs" && ! "$jobs" =~ ^[1-9][0-9]?$ ]]; then
    echo "nar_gap: --jobs takes a number of notebooks to run at once, such as 2, not '$jobs'" >&2
    exit 2
fi
if [[ -z "$jobs" ]]; then
    # Two notebooks side by side on 2 cores: one process keeps about 1.5
    # cores busy (XLA's CPU kernels do not use both all the time).  The paper
    # profile is meant for one GPU, and two JAX processes would each claim
    # most of its memory.
    cores="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)"
    if [[ "$profile" == paper* || "$profile" == gpu* || "$cores" -lt 2 ]]; then
        jobs=1
    else
        jobs=2
    fi
fi
# Over several processes or machines (NAR_GAP_COORDINATOR, NAR_GAP_NUM_PROCESSES,
# NAR_GAP_PROCESS_ID set, the same command started on each; the checkout on a
# filesystem all of them share): each notebook's training is split over the
# processes (nar_gap.training.hosts), so every process runs the same notebooks
# in the same order, one at a time (one coordinator port), none skipped (a
# finished run is read back, not trained again); only process 0 writes the
# tables and figures, the others write theirs under build/<profile>/process-<i>.
if [[ -n "${NAR_GAP_COORDINATOR:-}" ]]; then
    jobs=1
    force=1
    process_id="${NAR_GAP_PROCESS_ID:-0}"
    if [[ "$process_id" != 0 ]]; then out="${out:-build/$profile}/process-$process_id"; fi
fi
for number in "${only[@]}"; do
    if [[ ! "$number" =~ ^[0-9]{1,2}$ ]]; then
        echo "nar_gap: --only takes a notebook number such as 03, not '$number'" >&2
        exit 2
    fi
done

# A profile sized for one job runs some notebooks only (Profile.notebooks):
# those, unless --only names others.
if [[ ${#only[@]} -eq 0 && ("$profile" == gpu || "$profile" == gpu-dry) ]]; then
    only=(02 03)  # nar_gap.experiments.profiles.GPU.notebooks (a test keeps them equal)
fi

shopt -s nullglob
notebooks=()
for notebook in notebooks/[0-9][0-9]_*.ipynb; do
    # Reading results: every notebook can (a FROM_RESULTS parameter); one that
    # cannot would train, so it is refused.
    if [[ -n "$results_from" ]] && ! grep -q '"FROM_RESULTS = ' "$notebook"; then
        echo "nar_gap: $notebook has no FROM_RESULTS parameter: it cannot read results" >&2
        exit 2
    fi
    if [[ ${#only[@]} -eq 0 ]]; then
        notebooks+=("$notebook")
        continue
    fi
    for number in "${only[@]}"; do
        if [[ "$(basename "$notebook")" == "$(printf '%02d' "$((10#$number))")_"* ]]; then
            notebooks+=("$notebook")
        fi
    done
done
shopt -u nullglob
if [[ ${#notebooks[@]} -eq 0 ]]; then
    echo "nar_gap: no notebook matches (looked for notebooks/NN_*.ipynb${only[*]:+ with --only ${only[*]}})" >&2
    exit 2
fi

# Where this profile's files go (nar_gap.experiments.profiles.output_dirs says the same).
if [[ -n "$out" ]]; then
    results_dir="$out/results"
    figures_dir="$out/figures"
elif [[ "$profile" == cpu ]]; then
    results_dir=results
    figures_dir=figures
else
    results_dir="build/$profile/results"
    figures_dir="build/$profile/figures"
fi
mkdir -p "$results_dir" "$figures_dir"
results_dir="$(cd "$results_dir" && pwd)"
figures_dir="$(cd "$figures_dir" && pwd)"
runs_dir="${runs:-build/runs/$profile}"
mkdir -p "$runs_dir"
runs_dir="$(cd "$runs_dir" && pwd)"
executed_dir="build/notebooks/$profile"
if [[ -n "$out" ]]; then executed_dir="$out/notebooks"; fi
mkdir -p "$executed_dir" "$runs_dir"

scripts/ensure_env.sh
venv="${NAR_GAP_VENV:-.venv}"
reading=()
if [[ -n "$results_from" ]]; then
    # A job's archive (nar-gap job --archive): its tables and figures into this
    # profile's folders, then the notebooks read them instead of training.
    "$venv/bin/nar-gap" job --profile "$profile" --unpack "$results_from" \
        ${out:+--out "$out"} || exit 2
    reading=(-p FROM_RESULTS True)
    force=1
fi
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

# "sha path" of every file under the output folders.
fingerprint() {
    "$venv/bin/python" - "$results_dir" "$figures_dir" <<'PY'
import hashlib, pathlib, sys
for top in sys.argv[1:]:
    for path in sorted(pathlib.Path(top).rglob("*")):
        if not path.is_file() or path.suffix == ".tmp" or path.name.startswith("."):
            continue
        print(hashlib.sha256(path.read_bytes()).hexdigest(), path)
PY
}
# "sha path" of the files under the output folders that one notebook wrote:
# nar_gap logs every file it writes to $NAR_GAP_WRITTEN_LOG (file times cannot
# tell two notebooks running side by side apart).
written_files() {
    "$venv/bin/python" - "$1" "$results_dir" "$figures_dir" <<'PY'
import hashlib, pathlib, sys
log, *tops = sys.argv[1:]
tops = [pathlib.Path(top).resolve() for top in tops]
for line in sorted(set(pathlib.Path(log).read_text().splitlines())):
    path = pathlib.Path(line)
    if path.is_file() and any(top in path.parents for top in tops):
        print(hashlib.sha256(path.read_bytes()).hexdigest(), path)
PY
}
# The notebooks (stems, e.g. 02_baselines) that a notebook needs finished first.
needs_of() {
    "$venv/bin/python" - "$1" <<'PY'
import json, pathlib, sys
notebook = pathlib.Path(sys.argv[1])
needs = json.loads(notebook.read_text()).get("metadata", {}).get("nar_gap", {}).get("needs", [])
for need in needs:
    if not (notebook.parent / f"{need}.ipynb").is_file():
        sys.exit(f"nar_gap: {notebook.name} needs '{need}', which is not a notebook in {notebook.parent}")
    print(need)
PY
}
# The notebooks, highest metadata nar_gap.priority first (default 0), ties in
# number order.
priority_order() {
    "$venv/bin/python" - "$@" <<'PY'
import json, pathlib, sys
def priority(path):
    meta = json.loads(pathlib.Path(path).read_text()).get("metadata", {})
    return -int(meta.get("nar_gap", {}).get("priority", 0))
for path in sorted(sys.argv[1:], key=lambda p: (priority(p), p)):
    print(path)
PY
}
# What a notebook's results depend on: its text, the profile, the package
# source, the output folders.
inputs_of() {
    "$venv/bin/python" - "$1" "$profile" "$results_dir" "$figures_dir" <<'PY'
import hashlib, pathlib, sys
notebook, *settings = sys.argv[1:]
digest = hashlib.sha256("\0".join(settings).encode())
digest.update(pathlib.Path(notebook).read_bytes())
for path in sorted(pathlib.Path("nar_gap").rglob("*.py")):
    digest.update(str(path).encode() + path.read_bytes())
print(digest.hexdigest())
PY
}
# Up to date: same inputs, and every file the notebook wrote last time is
# still there with the same content (a smoke or hand-made file in its place,
# or a deleted one, means it runs again).
up_to_date() {
    local stamp_file="$1" inputs="$2"
    [[ -f "$stamp_file" && "$(head -n 1 "$stamp_file")" == "$inputs" ]] || return 1
    "$venv/bin/python" - "$stamp_file" <<'PY'
import hashlib, pathlib, sys
lines = pathlib.Path(sys.argv[1]).read_text().splitlines()[1:]
for line in lines:
    digest, path = line.split(" ", 1)
    file = pathlib.Path(path)
    if not file.is_file() or hashlib.sha256(file.read_bytes()).hexdigest() != digest:
        sys.exit(1)
PY
}
# The first cell with an error in an executed notebook: "cell N: first line".
failed_cell() {
    "$venv/bin/python" - "$1" <<'PY'
import json, sys
try:
    cells = json.load(open(sys.argv[1]))["cells"]
except Exception:
    print("start (no cell ran: see the error above)")
    sys.exit(0)
for index, cell in enumerate(cells):
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            source = "".join(cell.get("source", "")).strip().splitlines() or [""]
            print(f"cell {index} ('{source[0][:60]}'): {output.get('ename')}: "
                  f"{output.get('evalue', '')[:200]}")
            sys.exit(0)
# No error output: the kernel itself died (killed, out of memory, a crash) in
# the last cell that started.
started = [i for i, c in enumerate(cells)
           if c.get("cell_type") == "code"
           and (c.get("metadata", {}).get("papermill") or {}).get("start_time")]
if started:
    source = "".join(cells[started[-1]].get("source", "")).strip().splitlines() or [""]
    print(f"cell {started[-1]} ('{source[0][:60]}'): the kernel died while running it "
          "(out of memory? killed?)")
PY
}
before="$(fingerprint)"

progress=()
if [[ -t 2 ]]; then progress=(--progress-bar); fi

report_changes() {
    local after changed
    after="$(fingerprint)"
    changed="$(comm -13 <(sort <<<"$before") <(sort <<<"$after") | cut -d' ' -f2- | sort -u)"
    if [[ -n "$changed" ]]; then
        echo "nar_gap: new or changed files:"
        while IFS= read -r file; do echo "  ${file#"$PWD"/}"; done <<<"$changed"
    else
        echo "nar_gap: no file in ${results_dir#"$PWD"/} or ${figures_dir#"$PWD"/} changed"
    fi
}

# One notebook, from papermill to its stamp; run in the background.
run_notebook() {
    local notebook="$1" inputs="$2" name executed stamp_file written
    name="$(basename "$notebook" .ipynb)"
    executed="$executed_dir/$name.ipynb"
    stamp_file="$executed_dir/$name.stamp"
    written="$(cd "$executed_dir" && pwd)/.$name.written"
    rm -f "$stamp_file"
    : >"$written"
    NAR_GAP_WRITTEN_LOG="$written" "$venv/bin/python" -m nar_gap.tools.notebook_runner \
        "$notebook" "$executed" --cwd notebooks -p PROFILE "$profile" -p RUNS_DIR "$runs_dir" \
        -p RESULTS_DIR "$results_dir" -p FIGURES_DIR "$figures_dir" "${reading[@]}" \
        "${progress[@]}" || return 1
    { echo "$inputs"; written_files "$written"; } >"$stamp_file"
    rm -f "$written"
}

if ((jobs > 1)); then
    progress=()
    # Two JAX processes on one GPU: neither may claim most of its memory.
    export XLA_PYTHON_CLIENT_PREALLOCATE="${XLA_PYTHON_CLIENT_PREALLOCATE:-false}"
fi
names=()
declare -A needs=()
for notebook in "${notebooks[@]}"; do
    name="$(basename "$notebook" .ipynb)"
    names+=("$name")
    needs[$name]="$(needs_of "$notebook")" || exit 2
done
# Of the notebooks ready at once, those with a higher metadata nar_gap.priority
# start first (then in number order): 07, the longest of those that wait for
# 02, starts as soon as 02 ends, and the shorter 03 and 06 fill the other lane.
mapfile -t notebooks < <(priority_order "${notebooks[@]}")
declare -A state=() began=() pids=()
for name in "${names[@]}"; do state[$name]=pending; done
# A notebook is ready when every notebook it needs has finished; a need that
# is not selected (--only) is not waited for (the notebook trains what it
# needs itself, and two processes never train one run at once).
ready() {
    local need
    for need in ${needs[$1]}; do
        if [[ -n "${state[$need]:-}" && "${state[$need]}" != done ]]; then return 1; fi
    done
}

echo "nar_gap: running ${#notebooks[@]} notebooks with PROFILE=$profile, up to $jobs at once;" \
    "tables to ${results_dir#"$PWD"/}, figures to ${figures_dir#"$PWD"/}"
# Each notebook in its own process group (set -m), so that an interrupt stops
# the notebooks it started, kernels included: a background job of a script
# would otherwise ignore Ctrl-C and go on training.
set -m
stop_running() {
    local name
    for name in "${names[@]}"; do
        if [[ "${state[$name]}" == running ]]; then kill -TERM -- "-${pids[$name]}" 2>/dev/null || true; fi
    done
}
trap 'stop_running; echo "nar_gap: interrupted; finished notebooks keep their results" >&2; exit 130' INT TERM

start=$SECONDS
timings=()
failed=()
running=0
while :; do
    progressed=0
    if ((${#failed[@]} == 0)); then
        for notebook in "${notebooks[@]}"; do
            name="$(basename "$notebook" .ipynb)"
            [[ "${state[$name]}" == pending ]] && ((running < jobs)) && ready "$name" || continue
            inputs="$(inputs_of "$notebook")"
            if [[ "$force" == 0 && -f "$executed_dir/$name.ipynb" ]] &&
                up_to_date "$executed_dir/$name.stamp" "$inputs"; then
                echo "nar_gap: $notebook is up to date for profile $profile (skipped; --force reruns it)"
                timings+=("$name: skipped")
                state[$name]=done
                progressed=1
                continue
            fi
            if ((jobs > 1)); then
                echo "nar_gap: $notebook started (output in $executed_dir/$name.log)"
                run_notebook "$notebook" "$inputs" >"$executed_dir/$name.log" 2>&1 &
            else
                echo "nar_gap: $notebook"
                run_notebook "$notebook" "$inputs" &
            fi
            pids[$name]=$!
            began[$name]=$SECONDS
            state[$name]=running
            running=$((running + 1))
        done
    fi
    if ((running == 0)); then
        if ((progressed)); then continue; fi  # a skipped notebook may have readied another
        break
    fi
    sleep 1
    for name in "${names[@]}"; do
        [[ "${state[$name]}" == running ]] && ! kill -0 "${pids[$name]}" 2>/dev/null || continue
        running=$((running - 1))
        took=$((SECONDS - ${began[$name]}))
        if wait "${pids[$name]}"; then
            state[$name]=done
            timings+=("$name: $took s")
            if ((jobs > 1)); then echo "nar_gap: notebooks/$name.ipynb finished in $took s"; fi
        else
            state[$name]=failed
            failed+=("$name")
            if ((jobs > 1)); then tail -n 20 "$executed_dir/$name.log" >&2; fi
            echo "nar_gap: FAILED in notebooks/$name.ipynb (profile $profile) at" \
                "$(failed_cell "$executed_dir/$name.ipynb"); the executed copy, with the" \
                "error in place, is $executed_dir/$name.ipynb" >&2
            if ((running > 0)); then
                echo "nar_gap: starting nothing new; waiting for the $running notebook(s) still running" >&2
            fi
        fi
    done
done
if ((${#failed[@]} > 0)); then
    report_changes
    exit 1
fi
for name in "${names[@]}"; do
    if [[ "${state[$name]}" != done ]]; then
        echo "nar_gap: notebooks/$name.ipynb never became ready (needs: ${needs[$name]})" >&2
        exit 1
    fi
done
echo "nar_gap: all notebooks ran in $((SECONDS - start)) s; executed copies in $executed_dir/"
for line in "${timings[@]}"; do echo "  $line"; done
# docs/results.md's results section and README.md's headline table are
# rendered from the committed profile's files.
if [[ "$results_dir" -ef results ]]; then
    "$venv/bin/python" -m nar_gap render results --write docs/results.md --write README.md
    echo "nar_gap: docs/results.md's results and README.md's headline rendered from results/"
fi
report_changes
