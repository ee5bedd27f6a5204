#!/usr/bin/env bash
# Notebook 08's open question for a lent GPU: what size of Transformer, trained
# from scratch on the labelled CLRS-Text, reaches the in-distribution CLRS
# score of 0.9 and the one_hop rule's (each file holds it), from which 08's
# comparisons are testable?  On the 2-core CPU no curve of the notebook's
# text in benchmarks/results/transnar_competence_*_cpu.json did.
#
# Runs benchmarks/transnar_competence.py for a few sizes side by side (the
# models are small; the host draws the data, one process per size), each cut
# at BUDGET seconds.  Each writes its curve to $OUT after every checkpoint, so
# a cut run keeps what it finished.  Install as device_command.sh does: from
# the bundle (scripts/make_bundle.sh build/bundle_gpu, carried), once per
# machine.  Prepared on a CPU; never run on a GPU yet.
#
#   BUDGET=420 bash benchmarks/transnar_competence_device.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
PY=${PY:-python3}; BUDGET=${BUDGET:-420}; OUT=${OUT:-build/device-out}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT"
if [ ! -f "$SITE/.installed" ]; then
  PYTHON=$PY bash build/bundle_gpu/install.sh --target "$SITE" 2>&1 | tail -4 && touch "$SITE/.installed"
fi
export PYTHONPATH=$SITE
# Several processes share one GPU: none may take most of its memory up front.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L 2>/dev/null
# name: flags.  Batch 64 (4x the CPU curves' 16): examples are cheap on a GPU,
# and 10 000 such steps see as many examples as 40 000 of batch 16.
# Each scores its training sizes at 2x and 4x the density of positions too
# (--denser 2,4).  The fourth arm is the hybrid reading the compiled NAR
# (--nar compiled; it needs no trained run), at the smallest size: on the
# CPU the hybrids beat the Transformer alone from step 4 000 but stayed below
# the self rule (docs/transnar.md), so whether reading an exact NAR makes
# competence cheaper is this call's second question.
# Four arms write eight files: the most one device call brings back.
declare -A SIZES=(
  [w128_l4_b64]="--width 128 --layers 4 --batch-size 64 --denser 2,4"
  [w128_l4_b64_compiled]="--width 128 --layers 4 --batch-size 64 --denser 2,4 --nar compiled"
  [w256_l4_b64]="--width 256 --layers 4 --heads 8 --batch-size 64 --learning-rate 5e-4 --denser 2,4"
  [w256_l6_b64]="--width 256 --layers 6 --heads 8 --batch-size 64 --learning-rate 5e-4 --denser 2,4"
)
for name in "${!SIZES[@]}"; do
  # shellcheck disable=SC2086  # the flags are words
  timeout "$BUDGET" "$PY" benchmarks/transnar_competence.py ${SIZES[$name]} \
    --steps 10000 --every 1000 --out "$OUT/transnar_competence_${name}_gpu.json" \
    > "$OUT/transnar_competence_${name}_gpu.log" 2>&1 &
done
wait
ls -la "$OUT"
for name in "${!SIZES[@]}"; do echo "== $name"; tail -n 2 "$OUT/transnar_competence_${name}_gpu.log"; done
