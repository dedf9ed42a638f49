#!/usr/bin/env bash
# Run 53 (2026-12-02): whether run 52's table-procedure rates of FlashAttention-2 (6-17% below
# the committed flash rows of attention.csv at the same shapes) come from the GPU or from
# attention_state.py's shorter warm-up (3 s of heater, against the table runs' 30 s): the
# whole flash table again as runs 10 and 47 measured it (attention.py --backends flash, 30 s of
# heater first, every batch queued behind heater matmuls), then attention_state.py --backend
# flash at three of run 52's shapes, and cuDNN's at one (the control run 49 reproduced).
# One GPU. Usage: calib/scripts/run_flash_repeat.sh RESULTS_DIR. Never changes GPU clocks or
# settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_flash_repeat.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_flash_repeat flash_repeat
cd "$ROOT/calib/probes" || exit 1
step attention_flash 300 python3 attention.py --device 0 --backends flash --grid full \
  --point-budget 0.5 --heat-s 30 --out "$OUT_DIR/attention_flash.csv"
step attention_state_flash 120 python3 attention_state.py --device 0 --backend flash \
  --seconds 5 --shapes 16:2:4096,16:2:8192,24:24:4096 --out "$OUT_DIR/attention_state_flash.csv"
step attention_state_cudnn 60 python3 attention_state.py --device 0 --backend cudnn \
  --seconds 5 --shapes 16:2:8192 --out "$OUT_DIR/attention_state_cudnn.csv"
stop_telemetry
log "run_flash_repeat done in $SECONDS s"
