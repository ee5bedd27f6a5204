#!/usr/bin/env bash
set -euo pipefail
# Regenerate the paper's figures and tables: run every notebooks/NN_*.ipynb in
# order with papermill, stopping at the first failure.
#
#   ./run_all.sh                     the "cpu" profile (default; about an hour on 2 cores)
#   ./run_all.sh --profile smoke     minutes: what CI runs
#   ./run_all.sh --profile paper     the paper's sizes and seeds (meant for a GPU)
#   ./run_all.sh --only 03           one notebook (or --only 03 --only 04)
#   ./run_all.sh --force             rerun notebooks whose results are up to date
#   PROFILE=smoke ./run_all.sh       same as --profile smoke
#
# Executed copies go to build/notebooks/ (git-ignored); figures/ and results/
# receive what the notebooks write, and the files that changed are listed at
# the end.  Training runs are kept in build/runs/ and resumed, so a rerun or a
# later notebook never trains a finished seed again.  A notebook is skipped when
# it ran before with the same profile, the same notebook text and the same
# nar_gap source (a stamp in build/notebooks/); --force runs it anyway.

cd "$(dirname "${BASH_SOURCE[0]}")"

profile="${PROFILE:-cpu}"
force=0
only=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --profile)
            [[ $# -ge 2 ]] || { echo "nar_gap: --profile needs a name" >&2; exit 2; }
            profile="$2"
            shift 2
            ;;
        --profile=*) profile="${1#--profile=}"; shift ;;
        --only)
            [[ $# -ge 2 ]] || { echo "nar_gap: --only needs a number (e.g. 03)" >&2; exit 2; }
            only+=("$2")
            shift 2
            ;;
        --only=*) only+=("${1#--only=}"); shift ;;
        --force) force=1; shift ;;
        -h | --help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
        *) echo "nar_gap: run_all.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
case "$profile" in
    smoke | cpu | paper) ;;
    *) echo "nar_gap: unknown profile '$profile' (smoke, cpu or paper)" >&2; exit 2 ;;
esac

shopt -s nullglob
notebooks=()
for notebook in notebooks/[0-9][0-9]_*.ipynb; do
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

scripts/ensure_env.sh
venv="${NAR_GAP_VENV:-.venv}"
out_dir=build/notebooks
mkdir -p "$out_dir" figures results build/runs
# Compiled XLA executables are cached on disk, so notebooks (each its own
# kernel) and reruns do not compile the same training step again.
export JAX_COMPILATION_CACHE_DIR="${JAX_COMPILATION_CACHE_DIR:-$PWD/build/jax-cache}"
export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="${JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS:-1}"

# Fingerprint figures/ and results/ before and after, to report what changed.
fingerprint() {
    "$venv/bin/python" - <<'PY'
import hashlib, pathlib
for top in ("figures", "results"):
    for path in sorted(pathlib.Path(top).rglob("*")):
        if path.is_file() and path.name != ".gitkeep" and path.suffix != ".tmp":
            print(hashlib.sha256(path.read_bytes()).hexdigest(), path)
PY
}
# What a notebook's results depend on: its text, the profile, the package source.
stamp_of() {
    "$venv/bin/python" - "$1" "$profile" <<'PY'
import hashlib, pathlib, sys
digest = hashlib.sha256(sys.argv[2].encode())
digest.update(pathlib.Path(sys.argv[1]).read_bytes())
for path in sorted(pathlib.Path("nar_gap").rglob("*.py")):
    digest.update(str(path).encode() + path.read_bytes())
print(digest.hexdigest())
PY
}
# The first cell with an error in an executed notebook: "cell N: first line".
failed_cell() {
    "$venv/bin/python" - "$1" <<'PY'
import json, sys
try:
    cells = json.load(open(sys.argv[1]))["cells"]
except Exception:
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

progress=(--no-progress-bar)
if [[ -t 2 ]]; then progress=(--progress-bar); fi

report_changes() {
    local after changed
    after="$(fingerprint)"
    changed="$(comm -13 <(sort <<<"$before") <(sort <<<"$after") | cut -d' ' -f2- | sort -u)"
    if [[ -n "$changed" ]]; then
        echo "nar_gap: new or changed files:"
        while IFS= read -r file; do echo "  $file"; done <<<"$changed"
    else
        echo "nar_gap: no file in figures/ or results/ changed"
    fi
}

echo "nar_gap: running ${#notebooks[@]} notebooks with PROFILE=$profile"
start=$SECONDS
timings=()
for notebook in "${notebooks[@]}"; do
    name="$(basename "$notebook" .ipynb)"
    executed="$out_dir/$name.ipynb"
    stamp_file="$out_dir/$name.$profile.stamp"
    stamp="$(stamp_of "$notebook")"
    if [[ "$force" == 0 && -f "$executed" && "$(cat "$stamp_file" 2>/dev/null)" == "$stamp" ]]; then
        echo "nar_gap: $notebook is up to date for profile $profile (skipped; --force reruns it)"
        timings+=("$name: skipped")
        continue
    fi
    echo "nar_gap: $notebook"
    began=$SECONDS
    rm -f "$stamp_file"
    if ! "$venv/bin/python" -m papermill "$notebook" "$executed" \
        --kernel nar-gap --cwd notebooks -p PROFILE "$profile" \
        -p RUNS_DIR "$PWD/build/runs/$profile" \
        --log-level WARNING "${progress[@]}"; then
        report_changes
        echo "nar_gap: FAILED in $notebook (profile $profile) at $(failed_cell "$executed");" \
            "the executed copy, with the error in place, is $executed" >&2
        exit 1
    fi
    echo "$stamp" >"$stamp_file"
    timings+=("$name: $((SECONDS - began)) s")
done
echo "nar_gap: all notebooks ran in $((SECONDS - start)) s; executed copies in $out_dir/"
for line in "${timings[@]}"; do echo "  $line"; done
report_changes
