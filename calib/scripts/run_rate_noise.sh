#!/usr/bin/env bash
# Run 71 (2026-12-04): rate noise of one H200 under sustained load (calib/probes/rate_noise.py):
# BF16 and FP8 GEMMs and a Llama3-70B TP4 layer pass back to back, 40 s each after 8 s of heater
# GEMMs. The item times and their Allan deviation by
# window length say how far identical ranks drift apart between two blocking collectives.
# About 3 minutes. Usage: calib/scripts/run_rate_noise.sh RESULTS_DIR. Never changes GPU clocks
# or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_rate_noise.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_rate_noise rate_noise
nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.sm,power.draw,power.limit,temperature.gpu \
  --format=csv >"$OUT_DIR/before.txt"
step rate_noise 400 python3 "$ROOT/calib/probes/rate_noise.py" --device 0 --seconds 40 \
  --warm-s 8 --workloads gemm_bf16,gemm_fp8,layer_pass \
  --series "$OUT_DIR" --out "$OUT_DIR/rate_noise.csv"
stop_telemetry
log "run_rate_noise done in $SECONDS s"
