#!/usr/bin/env bash
# Run 84 (2026-12-05): a 4-layer Llama-3-8B-shaped step alone and with pinned host copies issued
# in pace with its layers (calib/probes/copy_pace.py: one d2h copy after each layer's forward,
# one h2d copy before each layer's backward), two chunk sizes, with one profiled step of each
# kind for the per-kernel prediction (calib/scripts/copy_pace_predict.py). One GPU, about three
# minutes. Usage: calib/scripts/run_copy_pace.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_copy_pace.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_copy_pace copy_pace
cd "$ROOT/calib/probes" || exit 1
for mib in 256 64; do
  step copy_pace_$mib 240 python3 copy_pace.py --device 0 --chunk-mib $mib \
    --out "$OUT_DIR/copy_pace_$mib.csv" --kernels-out "$OUT_DIR/copy_pace_kernels_$mib.csv"
done
stop_telemetry
log "run_copy_pace done in $SECONDS s"
