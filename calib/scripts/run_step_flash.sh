#!/usr/bin/env bash
# Runs 54-55 (2026-12-02): run 23's single-GPU real step (calib/probes/step_check.py, a 4-layer
# Llama-3-8B-shaped transformers model, micro batch 1, 4k/8k/16k tokens) with SDPA forced to
# FlashAttention-2 (--sdpa-backend flash), beside the job with `attention_backend: flash2`
# (tests/tools/test_step_check.cpp), and the same with cuDNN forced (--sdpa-backend cudnn) as
# the control that must repeat run 23. One GPU. Usage: calib/scripts/run_step_flash.sh
# RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_step_flash.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_step_flash step_flash
for backend in flash cudnn; do
  step "step_single_$backend" 250 python3 "$ROOT/calib/probes/step_check.py" --layout single \
    --layers 4 --sdpa-backend "$backend" --out "$OUT_DIR/step_single_$backend.csv"
done
stop_telemetry
log "run_step_flash done in $SECONDS s"
