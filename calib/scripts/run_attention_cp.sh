#!/usr/bin/env bash
# Run 16 (2026-11-30): the unmasked attention blocks of context parallelism
# (calib/probes/attention_cp.py) at the sustained power state (30 s of BF16 matmuls first, every
# timed span queued behind heater matmuls, as runs 9-13), after a smoke pass that must succeed.
# Usage: calib/scripts/run_attention_cp.sh RESULTS_DIR (1 GPU). Never changes GPU clocks or
# settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_cp.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_attention_cp
python3 "$ROOT/calib/probes/attention_cp.py" --grid smoke --point-budget 0.05 \
  --out "$OUT_DIR/attention_cp_smoke.csv" >"$OUT_DIR/smoke.log" 2>&1 || {
  log "smoke failed"; tail -20 "$OUT_DIR/smoke.log" >&2; exit 1; }
log "smoke: rc=0"
start_telemetry "$OUT_DIR/telemetry_attention_cp.csv" 1000
step attention_cp 480 python3 "$ROOT/calib/probes/attention_cp.py" --heat-s 30 --point-budget 0.2 \
  --out "$OUT_DIR/attention_cp.csv"
stop_telemetry
log "run_attention_cp done in $SECONDS s"
