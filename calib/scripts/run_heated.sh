#!/usr/bin/env bash
# Run 10 (2026-11-30): attention (GPU 1) and composition (GPU 0) at the sustained power state of
# back-to-back GEMMs, like the GEMM grids of run 9: 30 s of BF16 matmuls first, then every timed
# batch queued behind heater matmuls instead of a one-SM spin (under which a power-limited GPU
# clocks up).
# Usage: calib/scripts/run_heated.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_heated.sh RESULTS_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONUNBUFFERED=1
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/run_heated.log
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$OUT_DIR/$name.log" 2>&1
  log "$name: rc=$? in $((SECONDS - t0)) s"
}
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active \
  --format=csv -lms 1000 >"$OUT_DIR/telemetry_heated.csv" 2>&1 &
TELE_PID=$!
step attention 420 python3 "$ROOT/calib/probes/attention.py" --device 1 --grid full --point-budget 0.5 \
  --heat-s 30 --out "$OUT_DIR/attention.csv" &
P1=$!
step composition 200 python3 "$ROOT/calib/probes/composition.py" --device 0 --heat-s 30 \
  --out "$OUT_DIR/composition.csv"
wait $P1
kill "$TELE_PID" 2>/dev/null
log "run_heated done in $SECONDS s"
