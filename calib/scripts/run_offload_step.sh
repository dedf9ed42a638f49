#!/usr/bin/env bash
# Run 36 (2026-11-30): the host-side operations of DeepSpeed ZeRO-3's CPU optimizer offload step
# (calib/probes/offload_step.py), in one process and with 4 and 8 processes sharing the host.
# One GPU, about 2 minutes. Usage: calib/scripts/run_offload_step.sh RESULTS_DIR.
# Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_offload_step.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_offload_step
lscpu >"$OUT_DIR/lscpu.txt" 2>&1
step offload_step 400 python3 "$ROOT/calib/probes/offload_step.py" --device 0 \
  --out "$OUT_DIR/offload_step.csv"
log "run_offload_step done in $SECONDS s"
