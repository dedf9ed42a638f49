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
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PROBE_BUILD_DIR:-$ROOT/build-probes}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/run_gemm_dense.log
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$OUT_DIR/$name.log" 2>&1
  log "$name: rc=$? in $((SECONDS - t0)) s"
}
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active \
  --format=csv -lms 1000 >"$OUT_DIR/telemetry_gemm_dense.csv" 2>&1 &
TELE_PID=$!
cmake -S "$ROOT/calib/probes" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$OUT_DIR/build.log" 2>&1 &&
  cmake --build "$BUILD" -j 16 >>"$OUT_DIR/build.log" 2>&1 || { log "build failed"; kill "$TELE_PID"; exit 1; }
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
kill "$TELE_PID" 2>/dev/null
log "run_gemm_dense done in $SECONDS s"
