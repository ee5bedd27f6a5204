#!/usr/bin/env bash
set -euo pipefail
# Lint, as CI runs it before the tests: ruff (style, imports, docstrings) on the
# package, tests, benchmarks, scripts and notebooks; ruff format; and the
# layering contract (import-linter: each folder imports only from the folders
# below it, and no import cycles; see pyproject.toml).
#
#   scripts/lint.sh          check
#   scripts/lint.sh --fix    fix what ruff can, reformat, then check

cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/ensure_env.sh
venv="${NAR_GAP_VENV:-.venv}"
paths=(nar_gap tests benchmarks scripts notebooks)
if [[ "${1:-}" == --fix ]]; then
    "$venv/bin/ruff" check --fix --quiet "${paths[@]}" || true
    "$venv/bin/ruff" format --quiet "${paths[@]}"
fi
"$venv/bin/ruff" check "${paths[@]}"
"$venv/bin/ruff" format --check "${paths[@]}"
"$venv/bin/lint-imports" --no-cache | tail -n 4
