#!/usr/bin/env bash
# Follow-up of the first full run (2026-11-29), same machine kind (2x H200): re-measures what
# that run got wrong or too coarse, with the probes as fixed since:
#  - FP8 GEMMs with per-tensor scales (the first run's cuBLASLt refused the scale pointers, which
#    were 4 bytes apart, so its FP8 rows ran unscaled): burst, grid, catalog shapes, sustained;
#  - memory-bound kernels at 2x size steps (the first run used 4x steps).
# calib/scripts/run_all.sh now does both itself; this script exists to reproduce the follow-up.
# Usage: calib/scripts/run_followup.sh RESULTS_DIR
set -uo pipefail
OUT_DIR=${1:?usage: run_followup.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_followup
start_telemetry "$OUT_DIR/telemetry_followup.csv" 500
build_probes
CATALOG=$(python3 "$ROOT/calib/scripts/catalog_shapes.py")
MEM_BYTES=$(python3 -c 'print(",".join(str(65536 << i) for i in range(17)))')
G="$BUILD/probe_gemm --device 0"
gpu0() {
  step gemm_burst_fp8 90 $G --mode burst --dtypes fp8 --cubes 4096,8192,16384 --idle 2 --out "$OUT_DIR/gemm_burst_fp8.csv"
  step gemm_grid_fp8 150 $G --mode grid --combos fp8:tn --out "$OUT_DIR/gemm_fp8.csv"
  step gemm_catalog_fp8 90 $G --mode grid --combos fp8:tn --shapes "$CATALOG" --point-budget 0.15 --out "$OUT_DIR/gemm_catalog_fp8.csv"
  step gemm_sustained_fp8 40 $G --mode sustained --dtypes fp8 --cubes 8192 --idle 0 --seconds 15 --out "$OUT_DIR/gemm_sustained_fp8.csv"
}
gpu1() {
  step membound 120 "$BUILD/probe_membound" --device 1 --bytes "$MEM_BYTES" --out "$OUT_DIR/membound.csv"
}
gpu0 & P0=$!
gpu1 & P1=$!
wait $P0 $P1
stop_telemetry
log "followup done in $SECONDS s; failed steps: $(grep -c 'rc=[1-9]' "$LOG")"
