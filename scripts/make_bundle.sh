#!/usr/bin/env bash
set -euo pipefail
# Build the folder that brings nar_gap to a GPU node without internet.
#
#   scripts/make_bundle.sh OUT_DIR                  with python3's pip
#   scripts/make_bundle.sh OUT_DIR --python PY      with PY's pip (or PYTHON=PY)
#
# Needs internet, git and a Python >= 3.10 with pip; nar_gap need not be
# installed.  OUT_DIR gets wheels/ (nar_gap built from this checkout, dm-clrs
# and the small pure-Python helpers at requirements/lock.txt's versions),
# project.tar.gz (git archive HEAD), install.sh, README.txt and MANIFEST.json,
# at most 64 MiB; never TensorFlow, Haiku, JAX or CUDA.  On the node:
# `bash OUT_DIR/install.sh`.  See docs/notebooks.md, "Running on an offline
# GPU node: the bundle"; the logic is nar_gap/paper/tools/bundle.py, run here as a
# plain script so that it needs only the standard library.

# No cd: OUT_DIR is relative to where you are; bundle.py finds the checkout.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "${PYTHON:-python3}" "$root/nar_gap/paper/tools/bundle.py" "$@"
