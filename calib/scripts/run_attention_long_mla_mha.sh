#!/usr/bin/env bash
# Run 69 (2026-12-03): cuDNN's causal attention, the table's MLA set (heads 16-128, head_dim
# 192/128) and MHA set (heads 6-128) at 49,152, 65,536, 98,304 and 131,072 tokens
# (attention.py --grid long_mla, long_mha), one pass each after 30 s of heater matmuls, so that
# both seq axes reach 128k as the gqa set's does (runs 64-65 found the seq^2 fallback from the
# table's edge 4-12% fast for cuDNN's forward). One GPU, about 5 minutes.
# Usage: calib/scripts/run_attention_long_mla_mha.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_long_mla_mha.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_attention_long_mla_mha attention_long_mla_mha
attention_passes attention_long_mla 240 a -- --grid long_mla --backends cudnn
attention_passes attention_long_mha 300 a -- --grid long_mha --backends cudnn
stop_telemetry
log "run_attention_long_mla_mha done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
