#!/usr/bin/env bash
# Runs 56-57 (2026-12-02): one TP4 rank's GPT-3 175B layer (calib/probes/gpt_layer.py, the DGX
# Cloud recipe's TP) in BF16 and in FP8 (Transformer Engine's hybrid delayed-scaling GEMMs
# through torch._scaled_mm), at 2k/4k/8k tokens: queued behind heater GEMMs (the tables'
# state, as run 32) and back to back for 8 s (the layer's own power state), with the profiler's
# GEMM / attention / other split. Checked beside the simulated layer by
# tests/tools/test_eager_layer.cpp. One GPU. Usage: calib/scripts/run_gpt_layer_fp8.sh
# RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_gpt_layer_fp8.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_gpt_layer_fp8 gpt_layer_fp8
cd "$ROOT/calib/probes"
for precision in fp8 bf16; do
  step "gpt_layer_tp4_$precision" 240 python3 gpt_layer.py --device 0 --heat-s 20 --tp 4 \
    --seqs 2048,4096,8192 --precision "$precision" --sustained-s 8 \
    --out "$OUT_DIR/gpt_layer_tp4_$precision.csv"
done
stop_telemetry
log "run_gpt_layer_fp8 done in $SECONDS s"
