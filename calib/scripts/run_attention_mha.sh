#!/usr/bin/env bash
# Run 58 (2026-12-02): the MHA attention set on a dense grid (attention.py --grid mha_dense:
# heads 6-128 and seq 1k-32k on 1.5x steps, cuDNN and FlashAttention-2), measured twice, each
# pass after 30 s of heater matmuls as runs 10 and 47, so that the table is the geometric mean of
# two runs like the rest of attention.csv (calib/scripts/mean_runs.py). One GPU.
# Usage: calib/scripts/run_attention_mha.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_mha.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_attention_mha attention_mha
attention_passes attention_mha 270 a b -- --grid mha_dense
stop_telemetry
log "run_attention_mha done in $SECONDS s"
