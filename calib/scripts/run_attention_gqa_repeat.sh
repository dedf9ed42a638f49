#!/usr/bin/env bash
# Run 63 (2026-12-02): cuDNN's attention on the gqa and mla sets of the full grid (attention.py
# --grid gqa_mla: heads 4-128 with kv_heads heads / 8, seq 512-128k; MLA 16-128 heads, 512-32k),
# twice more (passes a, b, each after 30 s of heater matmuls, budget 0.5 s a point, as runs 10 and
# 47), so that those tables, whose single points move by 8-13% between runs at the 90th
# percentile (docs/calibration.md), become the mean of four runs. One GPU.
# Usage: calib/scripts/run_attention_gqa_repeat.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_gqa_repeat.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_attention_gqa_repeat attention_gqa_repeat
attention_passes attention_gqa_mla 250 a b -- --grid gqa_mla --backends cudnn
stop_telemetry
log "run_attention_gqa_repeat done in $SECONDS s"
