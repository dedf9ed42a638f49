#!/usr/bin/env bash
# Run 13 (2026-11-30): the interference probe at the sustained power state of the GEMM grids
# (run 9): 30 s of BF16 matmuls first, then every timed span queued behind 0.1 s of heater
# matmuls on its stream (--heat-s 30), so that compute and all_reduce are timed alone and
# together as in training, at the 700 W limit. Usage: calib/scripts/run_interference.sh
# RESULTS_DIR (2 GPUs). Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_interference.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_interference
start_telemetry "$OUT_DIR/telemetry_interference.csv" 1000
step interference 420 python3 "$ROOT/calib/probes/interference.py" --heat-s 30 \
  --out "$OUT_DIR/interference.csv"
stop_telemetry
log "run_interference done in $SECONDS s"
