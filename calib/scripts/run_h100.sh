#!/usr/bin/env bash
# Run 85 (2026-12-05): an H100 SXM's own kernels at points the H200 tables hold, so that the
# H100 derivation rule (calib/measured_tables.cpp: H200 times, memory-bound ops by HBM bandwidth)
# can be checked against measurements, each by the same probe and procedure as the H200 run it is
# set beside (calib/scripts/h100_compare.py), in this order (CALIB_DEADLINE skips what is left):
#   - GEMMs behind 10 s of heater matmuls at runs 49/51's sixteen shapes (BF16 fwd, dgrad, wgrad;
#     FP8 TN with and without fast accumulation);
#   - the memory-bound kernels over run 62's sizes (32 KiB-4 GiB), queued behind a GPU spin;
#   - cuDNN and FlashAttention-2 attention at 34 nodes of the H200 table (attention.py --grid
#     h100), behind heater matmuls;
#   - one TP4 rank's GPT-3 175B layer in FP8 and BF16 (runs 56-57's gpt_layer.py);
#   - the catalog's 77 shapes, BF16 and FP8, behind heater matmuls (run 9);
#   - six of the sixteen shapes back to back, 5 s each (the sustained state, runs 49/51).
# One GPU (nvidia-h100-x1), under 560 s. Usage: calib/scripts/run_h100.sh RESULTS_DIR. Never
# changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_h100.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_h100 h100
nvidia-smi --query-gpu=index,name,memory.total,power.limit,clocks.max.sm,clocks.max.mem,driver_version \
  --format=csv >>"$LOG" 2>&1
build_probes
# Runs 49 and 51's shapes (m tokens x n out x k in), the H200's table_state.csv.
TS=8192:8192:8192,4096:8192:8192,2048:12288:12288,2048:12288:3072,8192:14336:8192,8192:16384:2048
TS=$TS,1024:8192:8192,16384:8192:8192,4096:28672:4096,8192:4096:14336,2048:3072:12288
TS=$TS,12288:12288:2048,8192:8192:4096,4096:4096:16384,16384:16384:16384,2048:2048:2048
SIX=8192:8192:8192,4096:8192:8192,2048:12288:12288,2048:12288:3072,8192:14336:8192,8192:16384:2048
CATALOG=$(python3 "$ROOT/calib/scripts/catalog_shapes.py")
P="$BUILD/probe_gemm --device 0"
step grid_bf16 70 $P --pool-gib 48 --mode grid --combos bf16:fwd,bf16:dgrad,bf16:wgrad --heat-s 10 \
  --shapes $TS --out "$OUT_DIR/grid_bf16.csv"
step grid_fp8 40 $P --pool-gib 48 --mode grid --combos fp8:tn --heat-s 10 --shapes $TS \
  --out "$OUT_DIR/grid_fp8.csv"
step grid_fp8_fastacc 40 $P --pool-gib 48 --mode grid --combos fp8:tn --fast-accum 1 --heat-s 10 \
  --shapes $TS --out "$OUT_DIR/grid_fp8_fastacc.csv"
step membound 60 "$BUILD/probe_membound" --device 0 \
  --bytes "$(python3 "$ROOT/calib/scripts/sizes.py" 32768 4294967296)" --out "$OUT_DIR/membound.csv"
cd "$ROOT/calib/probes" || exit 1
step attention 150 python3 attention.py --device 0 --grid h100 --backends cudnn,flash \
  --point-budget 0.5 --heat-s 20 --out "$OUT_DIR/attention.csv"
for precision in fp8 bf16; do
  step "gpt_layer_tp4_$precision" 90 python3 gpt_layer.py --device 0 --heat-s 20 --tp 4 \
    --seqs 2048,4096,8192 --precision "$precision" --sustained-s 8 \
    --out "$OUT_DIR/gpt_layer_tp4_$precision.csv"
done
cd "$ROOT" || exit 1
step catalog 120 $P --mode grid --combos bf16:fwd,fp8:tn --heat-s 10 --shapes "$CATALOG" \
  --point-budget 0.15 --out "$OUT_DIR/gemm_catalog.csv"
step sustained_bf16 50 $P --pool-gib 48 --mode sustained --dtypes bf16 --idle 0 --seconds 5 \
  --shapes $SIX --out "$OUT_DIR/sustained_bf16.csv"
step sustained_fp8 50 $P --pool-gib 48 --mode sustained --dtypes fp8 --idle 0 --seconds 5 \
  --shapes $SIX --out "$OUT_DIR/sustained_fp8.csv"
stop_telemetry
grep -h "SPOT CHECK FAILED\|Error\|error" "$OUT_DIR"/*.log | head -5
log "run_h100 done in $SECONDS s"
