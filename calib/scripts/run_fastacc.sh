#!/usr/bin/env bash
# Run 11 (2026-11-30): the FP8 GEMM grid with fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM),
# as Transformer Engine runs its forward GEMMs, on the grid and at the sustained state of run 9
# (heater GEMMs before every sample). Usage: calib/scripts/run_fastacc.sh RESULTS_DIR.
set -uo pipefail
OUT_DIR=${1:?usage: run_fastacc.sh RESULTS_DIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PROBE_BUILD_DIR:-$ROOT/build-probes}
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/run_fastacc.log
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active \
  --format=csv -lms 1000 -i 0 >"$OUT_DIR/telemetry_fastacc.csv" 2>&1 &
TELE_PID=$!
cmake -S "$ROOT/calib/probes" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$OUT_DIR/build.log" 2>&1 &&
  cmake --build "$BUILD" -j 16 >>"$OUT_DIR/build.log" 2>&1 || { log "build failed"; kill "$TELE_PID"; exit 1; }
t0=$SECONDS
timeout 300 "$BUILD/probe_gemm" --mode grid --device 0 --combos fp8:tn --fast-accum 1 \
  --nk "$(python3 "$ROOT/calib/scripts/sizes.py" 512 32768)" --out "$OUT_DIR/gemm_fp8_fastacc.csv" \
  >"$OUT_DIR/gemm_fp8_fastacc.log" 2>&1
log "gemm_fp8_fastacc: rc=$? in $((SECONDS - t0)) s"
kill "$TELE_PID" 2>/dev/null
