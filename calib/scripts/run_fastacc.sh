#!/usr/bin/env bash
# Run 11 (2026-11-30): the FP8 GEMM grid with fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM),
# as Transformer Engine runs its forward GEMMs, on the grid and at the sustained state of run 9
# (heater GEMMs before every sample). Usage: calib/scripts/run_fastacc.sh RESULTS_DIR.
set -uo pipefail
OUT_DIR=${1:?usage: run_fastacc.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_fastacc
start_telemetry "$OUT_DIR/telemetry_fastacc.csv" 1000 -i 0
build_probes
step gemm_fp8_fastacc 300 "$BUILD/probe_gemm" --mode grid --device 0 --combos fp8:tn --fast-accum 1 \
  --nk "$(python3 "$ROOT/calib/scripts/sizes.py" 512 32768)" --out "$OUT_DIR/gemm_fp8_fastacc.csv"
stop_telemetry
