#!/usr/bin/env bash
# Run 47 (2026-12-01): runs 10 and 16 again, unchanged (attention.py --grid full, attention_cp.py,
# each after 30 s of heater matmuls, the same budgets), on another H200 and hour: how well a
# point of the attention tables reproduces, beside the tables' leave-one-out errors
# (docs/calibration.md). One GPU; the two probes one after the other.
# Usage: calib/scripts/run_attention_repeat.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_repeat.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_attention_repeat
start_telemetry "$OUT_DIR/telemetry_attention_repeat.csv" 1000 -i 0
step attention 300 python3 "$ROOT/calib/probes/attention.py" --device 0 --grid full --point-budget 0.5 \
  --heat-s 30 --out "$OUT_DIR/attention.csv"
step attention_cp 150 python3 "$ROOT/calib/probes/attention_cp.py" --device 0 --heat-s 30 \
  --point-budget 0.2 --out "$OUT_DIR/attention_cp.csv"
stop_telemetry
log "run_attention_repeat done in $SECONDS s"
