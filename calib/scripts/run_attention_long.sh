#!/usr/bin/env bash
# Run 65 (2026-12-03): cuDNN's causal attention, the table's gqa set (heads 4-128, kv_heads
# heads/8) at 196,608 and 262,144 tokens (attention.py --grid long_full), one pass after 30 s
# of heater matmuls, so that attention.csv's gqa seq axis reaches 256k. Run 64 had measured
# two of these head counts beyond the table and found the forward 4-12% slower than the model's
# fallback there (the 128k node scaled by seq^2). One GPU, about 4.5 minutes.
# Usage: calib/scripts/run_attention_long.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_long.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_attention_long attention_long
attention_passes attention_long_full 420 a -- --grid long_full --backends cudnn
stop_telemetry
log "run_attention_long done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
