#!/usr/bin/env bash
set -euo pipefail
# Regenerate the paper's figures and tables: run every notebooks/NN_*.ipynb in
# order with papermill, stopping at the first failure.
#
#   ./run_all.sh                     the "cpu" profile (default)
#   ./run_all.sh --profile paper     full sizes and seeds (see nar_gap/profiles.py)
#   PROFILE=smoke ./run_all.sh       same as --profile smoke
#
# Executed copies go to build/notebooks/ (git-ignored); figures/ and results/
# receive what the notebooks write, and the files that changed are listed at the end.

cd "$(dirname "${BASH_SOURCE[0]}")"

profile="${PROFILE:-cpu}"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --profile)
            [[ $# -ge 2 ]] || { echo "nar_gap: --profile needs a name" >&2; exit 2; }
            profile="$2"
            shift 2
            ;;
        --profile=*) profile="${1#--profile=}"; shift ;;
        -h | --help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
        *) echo "nar_gap: run_all.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

shopt -s nullglob
notebooks=(notebooks/[0-9][0-9]_*.ipynb)
shopt -u nullglob
if [[ ${#notebooks[@]} -eq 0 ]]; then
    echo "nar_gap: no notebooks yet (looked for notebooks/NN_*.ipynb); nothing to run"
    exit 0
fi

scripts/ensure_env.sh
venv="${NAR_GAP_VENV:-.venv}"
out_dir=build/notebooks
mkdir -p "$out_dir" figures results

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
for notebook in "${notebooks[@]}"; do
    executed="$out_dir/$(basename "$notebook")"
    echo "nar_gap: $notebook"
    if ! "$venv/bin/python" -m papermill "$notebook" "$executed" \
        --kernel nar-gap --cwd notebooks -p PROFILE "$profile" \
        --log-level WARNING "${progress[@]}"; then
        report_changes
        echo "nar_gap: FAILED in $notebook (profile $profile); the executed copy," \
            "with the error in place, is $executed" >&2
        exit 1
    fi
done
echo "nar_gap: all notebooks ran in $((SECONDS - start)) s; executed copies in $out_dir/"
report_changes
