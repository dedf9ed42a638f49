#!/usr/bin/env bash
# Run 72 (2026-12-04): FlashAttention-2 (PyTorch's flash backend, `attention_backend: flash2`),
# the table's gqa set (heads 4-128, kv heads/8) and mha set (heads 6-128) at 49,152, 65,536,
# 98,304 and 131,072 tokens (attention.py --grid long_flash --flash-max-seq 131072), one pass
# after 30 s of heater matmuls, so that FlashAttention-2's seq axes reach 128k as cuDNN's do
# (runs 64-65, 69) instead of the 32k node scaled by seq^2. The gqa set first. One GPU, about
# 7 minutes. Usage: calib/scripts/run_attention_long_flash.sh RESULTS_DIR. Never changes GPU
# clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_long_flash.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_attention_long_flash attention_long_flash
attention_passes attention_long_flash 520 a -- --grid long_flash --backends flash \
  --flash-max-seq 131072
stop_telemetry
log "run_attention_long_flash done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
