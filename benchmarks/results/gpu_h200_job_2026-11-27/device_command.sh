#!/usr/bin/env bash
# The gpu profile's job on the lent GPU: install from the bundle (once per
# machine), run `nar-gap job`, and bring back the archive, job.json, the log
# and nvidia-smi's samples.  PY picks the Python; BUDGET the job's seconds;
# PROFILE the profile; TAG names this call's files.  A job cut by the budget
# resumes on the next call on the same machine (its checkpoints stay in
# build/runs); unlike the 2026-11-26 script, a cut call brings back only the
# tables written so far, not the checkpoints (a gigabyte that cannot return).
set -uo pipefail
export PYTHONUNBUFFERED=1 TQDM_MININTERVAL=15
PY=${PY:-python3}; BUDGET=${BUDGET:-540}; PROFILE=${PROFILE:-gpu}; TAG=${TAG:-call}
OUT=${OUT:-build/device-out}; mkdir -p "$OUT"
SITE=${SITE:-/tmp/site}
export JAX_COMPILATION_CACHE_DIR=$PWD/build/jax-cache-$PROFILE
t0=$(date +%s)
stage() { echo "== $(( $(date +%s) - t0 )) s: $*"; }
stage start; nvidia-smi -L 2>/dev/null; nproc
if [ ! -f "$SITE/.installed" ]; then
  PYTHON=$PY bash build/bundle_gpu/install.sh --target "$SITE" 2>&1 | tail -4 && touch "$SITE/.installed"
fi
export PYTHONPATH=$SITE
stage installed
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 5 > "$OUT/nvidia_smi_$TAG.csv" 2>&1 &
fi
timeout "$BUDGET" $PY -m nar_gap job --profile "$PROFILE" --archive "$OUT/$PROFILE.tar.gz" > "$OUT/job_$TAG.log" 2>&1
rc=$?
stage "job rc=$rc"
tail -c 5000 "$OUT/job_$TAG.log"
res=build/$PROFILE/results
[ -f "$res/job.json" ] && cp "$res/job.json" "$OUT/"
if [ ! -f "$OUT/$PROFILE.tar.gz" ]; then
  tar czf "$OUT/partial_$TAG.tar.gz" build/$PROFILE 2>/dev/null
fi
du -sh build/runs/$PROFILE 2>/dev/null
ls -la "$OUT"
stage done
