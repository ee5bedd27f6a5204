#!/usr/bin/env bash
set -euo pipefail
# Install nar_gap from this bundle, with no package index (runs on the node).
#
#   bash install.sh                      into the Python that `python3` is
#   PYTHON=/path/to/python bash install.sh
#   bash install.sh --target DIR         into DIR (pip's --target), for a site
#                                        Python you cannot write to; then
#                                        export PYTHONPATH as it prints
#
# It checks every file against MANIFEST.json and that the Python has the site
# packages the bundle relies on (JAX, Flax, Optax, NumPy, SciPy, matplotlib,
# scikit-learn), then installs with `pip install --no-index --no-deps`:
# nar_gap and dm-clrs always (replacing an installed version), each helper
# wheel only where that distribution is not installed yet, so the site's
# versions are kept.  It never installs JAX: the site's is used.  It ends with
# `python -m nar_gap info`, whose backend self-check tests the site's JAX for
# the XLA bugs nar_gap knows; when that fails, it says so in one line and
# exits 1.  Copied into the bundle by scripts/make_bundle.sh.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
target=""
while (($#)); do
    case "$1" in
    --target)
        target="${2:?install.sh: --target needs a folder}"
        shift 2
        ;;
    --target=*)
        target="${1#*=}"
        shift
        ;;
    -h | --help)
        sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    *)
        echo "install.sh: unknown argument '$1' (expected --target DIR)" >&2
        exit 2
        ;;
    esac
done

fail() {
    echo "nar_gap: install failed: $*" >&2
    exit 1
}

command -v "$python" >/dev/null || fail "no Python '$python'; set PYTHON=/path/to/python"
if [[ -n "$target" ]]; then
    mkdir -p "$target" || fail "cannot create $target"
    target="$(cd "$target" && pwd)"
fi
# Not a checkout: `python -m nar_gap` must find the installed package.
cd "$here"

# The Python, seeing the --target folder first when there is one.
py() {
    if [[ -n "$target" ]]; then
        PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}" "$python" "$@"
    else
        "$python" "$@"
    fi
}

# 1. The files as the builder wrote them, a Python >= 3.10 with pip, and the
# site packages (a copy cut short, or the wrong Python, fails here in one line).
py - <<'EOF' || exit 1
import hashlib, importlib.metadata, importlib.util, json, pathlib, sys

def fail(why):
    sys.exit(f"nar_gap: install failed: {why}")

if sys.version_info < (3, 10):
    fail(f"nar_gap needs Python >= 3.10; {sys.executable} is {sys.version.split()[0]}")
if importlib.util.find_spec("pip") is None:
    fail(f"{sys.executable} has no pip; set PYTHON to the site's Python")
manifest = json.loads(pathlib.Path("MANIFEST.json").read_text())
for record in manifest["files"]:
    path = pathlib.Path(record["path"])
    if not path.is_file() or path.stat().st_size != record["size"] or (
        hashlib.sha256(path.read_bytes()).hexdigest() != record["sha256"]
    ):
        fail(f"{path} is missing or differs from MANIFEST.json; copy the bundle again")
found, missing = [], []
for name, tested in manifest["site_tested"].items():
    try:
        version = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        missing.append(name)
    else:
        note = "" if version == tested else f" (tested: {tested})"
        found.append(f"{name} {version}{note}")
if missing:
    fail(f"{sys.executable} lacks {', '.join(missing)}; the site must provide them "
         "(README.txt), and the bundle never brings them")
print(f"nar_gap: {sys.executable}, Python {sys.version.split()[0]}")
print(f"  site: {', '.join(found)}")
EOF

# 2. Which wheels: nar_gap and dm-clrs always, a helper only if it is absent.
wheels=()
for wheel in wheels/*.whl; do
    dist="$(basename "$wheel")"
    dist="${dist%%-*}"
    if [[ "$dist" != nar_gap && "$dist" != dm_clrs ]] &&
        version="$(py -c 'import importlib.metadata as m, sys
print(m.version(sys.argv[1]))' "$dist" 2>/dev/null)"; then
        echo "  keeping $dist $version (installed)"
        continue
    fi
    echo "  installing $(basename "$wheel")"
    wheels+=("$wheel")
done

# 3. pip, with no index: only these files are installed.
args=(install --no-index --no-deps --force-reinstall --no-warn-script-location -q)
if [[ -n "$target" ]]; then
    args+=(--target "$target" --upgrade)
fi
"$python" -m pip "${args[@]}" "${wheels[@]}" ||
    fail "pip could not install the wheels (above); for a read-only Python use --target DIR"

# 4. The check: versions, devices and the backend self-check.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
echo "nar_gap: python -m nar_gap info"
status=0
py -m nar_gap info 2>&1 | tee "$log" || status=$?
if ((status != 0)); then
    if grep -q "backend self-check FAILED" "$log"; then
        echo "nar_gap: installed, but this Python's JAX fails nar_gap's backend" \
            "self-check (above): it computes wrong numbers here, so check-install," \
            "the notebooks and the tests stop at once; ask the site for another" \
            "jax/jaxlib (MANIFEST.json's site_tested has the versions CI ran)" >&2
    else
        echo "nar_gap: installed, but 'python -m nar_gap info' failed (above)" >&2
    fi
    exit 1
fi
if [[ -n "$target" ]]; then
    echo "nar_gap: installed in $target; before using it, run:"
    echo "  export PYTHONPATH=\"$target\${PYTHONPATH:+:\$PYTHONPATH}\""
fi
echo "nar_gap: installed; next: $python -m nar_gap check-install --out nar_gap_check"
