#!/usr/bin/env bash
# Run 102 (2026-12-07): TF32 against BF16 GEMM time at the same shapes (calib/probes/gemm_tf32.py):
# the FP32 router's backward GEMMs of Megatron-core's moe_router_dtype fp32 (tokens 2k-32k,
# 64-256 experts, hidden 2k-7k; data gradient, weight gradient and the forward layout) and three
# square shapes, each timed in TF32 and in BF16 back to back in one process at the sustained
# state (after 10 s of BF16 heater matmuls). The ratio per shape checks the cost model's TF32 rule
# (BF16 time x 2; docs/cost-model.md). Usage: calib/scripts/run_tf32.sh RESULTS_DIR. Never
# changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_tf32.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_tf32 tf32
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv >"$OUT_DIR/gpus.txt" 2>&1
step gemm_tf32 300 env PYTHONPATH="$ROOT/calib/probes" python3 "$ROOT/calib/probes/gemm_tf32.py" \
  --device 0 --heat-s 10 --out "$OUT_DIR/gemm_tf32.csv"
stop_telemetry
log "run_tf32 done in $SECONDS s"
