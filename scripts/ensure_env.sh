#!/usr/bin/env bash
set -euo pipefail
# Make sure the project's virtual environment exists and is up to date.
#
#   scripts/ensure_env.sh            create/refresh the venv (a no-op when current)
#   scripts/ensure_env.sh --force    reinstall even if pyproject.toml is unchanged
#   scripts/ensure_env.sh --dry-run  print the JAX build chosen and the pip commands
#                                    a full install runs; change nothing
#
# Environment:
#   NAR_GAP_VENV  where the venv lives (default: .venv in the repo root; a relative
#                 path is taken relative to the repo root)
#   PYTHON        interpreter that creates the venv (default: python3, >= 3.10)
#   NAR_GAP_ACCELERATOR  cuda: install JAX's CUDA 12 plugin; cpu: the CPU build
#                 only; unset or empty: cuda when `nvidia-smi -L` (on the PATH)
#                 lists a GPU, else cpu.  Any other value is an error.
#   NAR_GAP_INSTALLER  uv (default) or pip: what installs the locked packages.
#                 uv (itself locked, installed into the venv by pip) installs
#                 them in under half pip's time; it reads no pip.conf, so where
#                 packages come from a mirror or a proxy that pip is configured
#                 for, pip installs them as configured.
#
# Installs the package editable with its test extra, every dependency at the
# exact version of requirements/lock.txt (the environment CI tested; refresh it
# with scripts/update_lock.sh), and registers the Jupyter kernel "nar-gap"
# inside the venv, where papermill and JupyterLab look for it.  For cuda it then
# installs jax-cuda12-plugin[with-cuda] and jax-cuda12-pjrt at the locked jax
# version, with the NVIDIA libraries as wheels, all pinned by the lock (about
# 5 GB; no system CUDA needed, an NVIDIA driver >= 525 is).  CUDA 12 wheels
# because they run on every driver from 525 on, CUDA 13 drivers included;
# JAX's cuda13 wheels need a driver >= 580 and are not locked here.  For cpu it
# removes any jax-cuda*/nvidia-* package an earlier cuda install left, so that
# JAX really runs on the CPU.  A hash of pyproject.toml and the lock, and the
# build (cuda), is kept in the venv; while it matches, nothing is reinstalled
# (edits to nar_gap/*.py need no reinstall: the install is editable), and a
# change of build reinstalls.

cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv="${NAR_GAP_VENV:-.venv}"
python="${PYTHON:-python3}"
stamp="$venv/.nar_gap_installed"
lock=requirements/lock.txt
kernel_json="$venv/share/jupyter/kernels/nar-gap/kernel.json"
force=0
dry_run=0
created=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        --dry-run) dry_run=1 ;;
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

# How many GPUs `nvidia-smi -L` lists: one "GPU 0: NVIDIA H100 ... (UUID: ...)"
# line each, MIG slices indented below their GPU.  The lines decide, not the
# exit status: nvidia-smi fails where no GPU answers (a driver not loaded, a
# container without the device), listing none, and where one GPU of several
# is broken, listing the others.  A hung driver can keep it waiting; after 30 s
# (where coreutils' timeout exists) it counts as none.
# nar_gap/system/accelerator.py applies the same rule for `nar-gap info`.
count_gpus() {
    local listing
    if command -v timeout >/dev/null; then
        listing="$(timeout 30 nvidia-smi -L 2>/dev/null || true)"
    else
        listing="$(nvidia-smi -L 2>/dev/null || true)"
    fi
    grep -c '^GPU [0-9][0-9]*:' <<<"$listing" || true
}

# Sets accelerator (cpu or cuda) and reason, which says why, for the messages.
choose_accelerator() {
    case "${NAR_GAP_ACCELERATOR:-}" in
        cpu | cuda)
            accelerator="$NAR_GAP_ACCELERATOR"
            reason="NAR_GAP_ACCELERATOR=$accelerator"
            ;;
        "")
            accelerator=cpu
            if ! command -v nvidia-smi >/dev/null; then
                reason="no nvidia-smi on the PATH"
                return
            fi
            local gpus
            gpus="$(count_gpus)"
            reason="nvidia-smi -L lists $gpus GPU(s)"
            if ((gpus > 0)); then accelerator=cuda; fi
            ;;
        *)
            echo "nar_gap: NAR_GAP_ACCELERATOR must be cpu or cuda (or unset: cuda" \
                "when nvidia-smi -L lists a GPU), not '$NAR_GAP_ACCELERATOR'" >&2
            exit 2
            ;;
    esac
}

# pip, or with --dry-run the pip command line it would run.
run_pip() {
    if [[ "$dry_run" == 1 ]]; then
        echo "pip $*"
    else
        pip_quiet "$@"
    fi
}

# `pip install ARGS` through the chosen installer (or, with --dry-run, its
# command line).  uv installs into the venv's python, and compiles the .pyc
# files as pip does: where PYTHONDONTWRITEBYTECODE is set, nothing else writes
# them, and without them importing the test environment took twice as long
# (17 s against 8 s on a 2-core machine).  This script on a fresh CPU venv
# there: 73 s with pip, 37 s with uv from an empty cache, the same packages at
# the same versions.
run_install() {
    if [[ "$installer" == pip ]]; then
        run_pip install "$@"
        return
    fi
    local command=(pip install --python "$venv/bin/python" --compile-bytecode "$@")
    if [[ "$dry_run" == 1 ]]; then
        echo "uv ${command[*]}"
    elif ! "$venv/bin/uv" "${command[@]}"; then
        echo "nar_gap: uv could not install the lock (above); NAR_GAP_INSTALLER=pip" \
            "installs it with pip, as your pip.conf says" >&2
        return 1
    fi
}

# The installed packages that make JAX use CUDA (jax-cuda12-plugin, -pjrt) and
# the NVIDIA wheels they bring; the CPU install has none of them.  Nothing to
# look for in a venv this run created.
installed_cuda_packages() {
    if [[ "$created" == 0 && -x "$venv/bin/python" ]]; then
        pip_quiet list --format=freeze \
            | { grep -i -E '^(jax[-_]cuda[0-9]+[-_]|nvidia[-_])' || true; } | cut -d= -f1
    fi
}

# Everything under the lock: pip itself (and uv) first, then the package with
# its test extra, then the chosen build's JAX plugin (or no plugin at all).
install_dependencies() {
    if [[ "$installer" == pip ]]; then
        run_pip install -q "$(grep -i '^pip==' "$lock")"
    else
        run_pip install -q "$(grep -i '^pip==' "$lock")" "$(grep -i '^uv==' "$lock")"
    fi
    run_install -q -c "$lock" -e ".[test]"
    if [[ "$accelerator" == cuda ]]; then
        local jax_version
        jax_version="$(sed -n 's/^jax==//p' "$lock")"
        run_install -q -c "$lock" "jax-cuda12-plugin[with-cuda]==$jax_version" \
            "jax-cuda12-pjrt==$jax_version"
    else
        local stale
        stale="$(installed_cuda_packages)"
        if [[ -n "$stale" ]]; then
            # shellcheck disable=SC2086  # one package name per word
            run_pip uninstall -q -y $stale
        fi
    fi
}

case "${NAR_GAP_INSTALLER:-uv}" in
    uv | pip) installer="${NAR_GAP_INSTALLER:-uv}" ;;
    *)
        echo "nar_gap: NAR_GAP_INSTALLER must be uv or pip (or unset: uv)," \
            "not '$NAR_GAP_INSTALLER'" >&2
        exit 2
        ;;
esac
choose_accelerator
if [[ "$dry_run" == 1 ]]; then
    echo "nar_gap: JAX build: $accelerator ($reason)"
    install_dependencies
    exit 0
fi

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

# The version line of nar_gap/__init__.py counts too: the installed metadata
# (`nar-gap info`) says the version it was installed at.
digest="$("$venv/bin/python" -c 'import hashlib, sys
digest = hashlib.sha256()
for name in sys.argv[1:]:
    lines = open(name, "rb").read().splitlines(True)
    if name.endswith("__init__.py"):
        lines = [line for line in lines if line.startswith(b"__version__")]
    digest.update(b"".join(lines))
print(digest.hexdigest())' pyproject.toml "$lock" nar_gap/__init__.py)"
# The stamp: the digest, followed by " cuda" for the CUDA build (a CPU venv's
# stamp is the digest alone, as it was before there was a choice).
want="$digest"
if [[ "$accelerator" == cuda ]]; then want="$digest cuda"; fi
have="$(cat "$stamp" 2>/dev/null || true)"

if [[ "$force" == 1 || "$want" != "$have" ]]; then
    if [[ "$created" == 1 || -z "$have" ]]; then
        echo "nar_gap: installing dependencies (first run takes a few minutes)"
    elif [[ "$want" == "$have" ]]; then
        echo "nar_gap: reinstalling dependencies (--force)"
    elif [[ "${have%% *}" == "$digest" ]]; then
        echo "nar_gap: switching JAX to the $accelerator build ($reason)"
    else
        echo "nar_gap: pyproject.toml, requirements/lock.txt or the version changed; updating dependencies"
    fi
    if [[ "$accelerator" == cuda ]]; then
        echo "nar_gap: with JAX's CUDA 12 plugin ($reason; NAR_GAP_ACCELERATOR=cpu for the CPU build)"
    fi
    rm -f "$stamp"
    have=""
    install_dependencies
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
