#!/usr/bin/env bash
set -euo pipefail
# Make sure the project's virtual environment exists and is up to date.
#
#   scripts/ensure_env.sh            create/refresh the venv (a no-op when current)
#   scripts/ensure_env.sh --force    reinstall even if pyproject.toml is unchanged
#
# Environment:
#   NAR_GAP_VENV  where the venv lives (default: .venv in the repo root; a relative
#                 path is taken relative to the repo root)
#   PYTHON        interpreter that creates the venv (default: python3, >= 3.10)
#
# Installs the package editable with its test extra, every dependency at the
# exact version of requirements/lock.txt (the environment CI tested; refresh it
# with scripts/update_lock.sh), and registers the Jupyter kernel "nar-gap"
# inside the venv, where papermill and JupyterLab look for it.  A hash of
# pyproject.toml and the lock is kept in the venv; while it matches, nothing is
# reinstalled (edits to nar_gap/*.py need no reinstall: the install is editable).

cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv="${NAR_GAP_VENV:-.venv}"
python="${PYTHON:-python3}"
stamp="$venv/.nar_gap_installed"
lock=requirements/lock.txt
kernel_json="$venv/share/jupyter/kernels/nar-gap/kernel.json"
force=0
created=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        -h | --help) awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; exit 0 ;;
        *) echo "nar_gap: ensure_env.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

# pip, run without two kinds of noise and with every real warning and error kept:
# - pip on some machines is configured with local mirror indexes and warns
#   "Location 'file:///...' is ignored" for every package a mirror lacks; sed drops
#   exactly those lines (sed, unlike grep -v, succeeds when no line is left, so
#   pipefail reports pip's own exit status);
# - setuptools reminds on every editable install that a folder named like the
#   package shadows it ("Editable installation. Please be careful ..."); here
#   that is the point, so that one warning, matched by its text, is ignored.
pip_quiet() {
    { PYTHONWARNINGS="${PYTHONWARNINGS:+$PYTHONWARNINGS,}ignore:Editable installation" \
        "$venv/bin/python" -m pip "$@" 2>&1 1>&3 3>&- \
        | sed "/^WARNING: Location 'file:[^']*' is ignored/d" >&2 3>&-; } 3>&1
}

if [[ ! -x "$venv/bin/python" ]]; then
    if ! command -v "$python" >/dev/null; then
        echo "nar_gap: '$python' not found; set PYTHON to a Python >= 3.10" >&2
        exit 1
    fi
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
        echo "nar_gap: needs Python >= 3.10; '$python' is" \
            "$("$python" --version 2>&1). Set PYTHON to a newer one" >&2
        exit 1
    fi
    echo "nar_gap: creating virtual environment $venv"
    created=1
    if ! "$python" -m venv "$venv"; then
        echo "nar_gap: '$python -m venv' failed (on Debian/Ubuntu: apt install python3-venv)" >&2
        exit 1
    fi
fi

want="$("$venv/bin/python" -c 'import hashlib, sys
digest = hashlib.sha256()
for name in sys.argv[1:]:
    digest.update(open(name, "rb").read())
print(digest.hexdigest())' pyproject.toml "$lock")"
have="$(cat "$stamp" 2>/dev/null || true)"

if [[ "$force" == 1 || "$want" != "$have" ]]; then
    if [[ "$created" == 1 || -z "$have" ]]; then
        echo "nar_gap: installing dependencies (first run takes a few minutes)"
    elif [[ "$want" == "$have" ]]; then
        echo "nar_gap: reinstalling dependencies (--force)"
    else
        echo "nar_gap: pyproject.toml or requirements/lock.txt changed; updating dependencies"
    fi
    rm -f "$stamp"
    have=""
    # pip itself first, at the locked version, then everything else under the lock.
    pip_quiet install -q "$(grep -i '^pip==' "$lock")"
    pip_quiet install -q -c "$lock" -e ".[test]"
    # Re-register the kernel below: its kernel.json names this venv's python.
    rm -f "$kernel_json"
fi

if [[ ! -f "$kernel_json" ]]; then
    if ! log="$("$venv/bin/python" -m ipykernel install --sys-prefix \
        --name nar-gap --display-name "Python (nar_gap)" 2>&1)"; then
        echo "$log" >&2
        echo "nar_gap: could not register the Jupyter kernel 'nar-gap'" >&2
        exit 1
    fi
fi

# Written last, so an interrupted install is retried on the next run.
[[ "$want" == "$have" ]] || echo "$want" >"$stamp"
