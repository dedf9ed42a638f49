#!/usr/bin/env bash
# Run 9 (2026-11-30): the GEMM grids with 1.5x points on the weight axes (n, k = 512, 768, 1024,
# 1536, ... 32768; m = 1k..64k in 2x steps), every sample queued behind BF16 8192^3 heater GEMMs
# (host launch excluded, the GPU at the sustained power state of back-to-back GEMMs), on a
# 2x H200 machine:
#  - GPU 0: BF16 fwd and dgrad grids;
#  - GPU 1 meanwhile: BF16 wgrad and FP8 grids, the catalog shapes (BF16 and FP8) and the
#    memory-bound kernels.
# gemm_bf16.csv is then the fwd/dgrad rows of GPU 0 and the wgrad rows of GPU 1.
# Usage: calib/scripts/run_gemm_dense.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_gemm_dense.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_gemm_dense
start_telemetry "$OUT_DIR/telemetry_gemm_dense.csv" 1000
build_probes
NK=$(python3 "$ROOT/calib/scripts/sizes.py" 512 32768)
CATALOG=$(python3 "$ROOT/calib/scripts/catalog_shapes.py")
G="$BUILD/probe_gemm --mode grid"
gpu0() {
  step gemm_bf16_fd 560 $G --device 0 --combos bf16:fwd,bf16:dgrad --nk "$NK" \
    --out "$OUT_DIR/gemm_bf16_fwd_dgrad.csv"
}
gpu1() {
  step gemm_bf16_w 300 $G --device 1 --combos bf16:wgrad --nk "$NK" --out "$OUT_DIR/gemm_bf16_wgrad.csv"
  step gemm_fp8 240 $G --device 1 --combos fp8:tn --nk "$NK" --out "$OUT_DIR/gemm_fp8.csv"
  step gemm_catalog 60 $G --device 1 --combos bf16:fwd,fp8:tn --shapes "$CATALOG" \
    --point-budget 0.15 --out "$OUT_DIR/gemm_catalog.csv"
  step membound 60 "$BUILD/probe_membound" --device 1 \
    --bytes "$(python3 "$ROOT/calib/scripts/sizes.py" 32768 4294967296)" --out "$OUT_DIR/membound.csv"
}
gpu0 & P0=$!
gpu1 & P1=$!
wait $P0 $P1
stop_telemetry
log "run_gemm_dense done in $SECONDS s"
