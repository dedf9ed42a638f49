#!/usr/bin/env bash
# Run 10 (2026-11-30): attention (GPU 1) and composition (GPU 0) at the sustained power state of
# back-to-back GEMMs, like the GEMM grids of run 9: 30 s of BF16 matmuls first, then every timed
# batch queued behind heater matmuls instead of a one-SM spin (under which a power-limited GPU
# clocks up).
# Usage: calib/scripts/run_heated.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_heated.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_heated
start_telemetry "$OUT_DIR/telemetry_heated.csv" 1000
step attention 420 python3 "$ROOT/calib/probes/attention.py" --device 1 --grid full --point-budget 0.5 \
  --heat-s 30 --out "$OUT_DIR/attention.csv" &
P1=$!
step composition 200 python3 "$ROOT/calib/probes/composition.py" --device 0 --heat-s 30 \
  --out "$OUT_DIR/composition.csv"
wait $P1
stop_telemetry
log "run_heated done in $SECONDS s"
