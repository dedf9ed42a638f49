#!/usr/bin/env bash
# Run 59 (2026-12-02): the unmasked context-parallel attention blocks on a dense grid
# (attention_cp.py --grid dense: heads 4-64 and seq_q 1k-16k on 1.5x steps, seq_kv / seq_q 0.5,
# 1, 2), cuDNN and FlashAttention-2, each measured twice (passes a and b, each after 30 s of
# heater matmuls as runs 16, 47 and 52), so that each table is the geometric mean of two passes
# (calib/scripts/mean_runs.py). One GPU.
# Usage: calib/scripts/run_attention_cp_dense.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_cp_dense.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_attention_cp_dense attention_cp_dense
for backend in cudnn flash; do
  for pass in a b; do
    step "attention_cp_${backend}_$pass" 140 python3 "$ROOT/calib/probes/attention_cp.py" \
      --device 0 --backend "$backend" --grid dense --heat-s 30 --point-budget 0.2 \
      --out "$OUT_DIR/attention_cp_${backend}_$pass.csv"
  done
done
stop_telemetry
log "run_attention_cp_dense done in $SECONDS s"
