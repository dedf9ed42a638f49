#!/usr/bin/env bash
# Run 39 (2026-11-30): real training steps with expert parallelism over two H200
# (calib/probes/moe_model.py: 4 Mixtral-8x7B-shaped layers, 8 experts split 4 + 4, top-2 with
# balanced routing, all-to-all token dispatch, the rest data parallel) at 4k/8k/16k tokens per
# GPU, beside clustersim's prediction of the same job (docs/validation.md "Real steps on H200").
# Needs the 2-GPU kind; about 2 minutes. Usage: calib/scripts/run_moe_check.sh RESULTS_DIR.
# Never changes GPU clocks or settings; NCCL_NVLS_ENABLE=0 (common.sh).
set -uo pipefail
OUT_DIR=${1:?usage: run_moe_check.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_moe_check
PROBES=$ROOT/calib/probes
SEQS=${SEQS:-4096,8192,16384}
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,power.limit --format=csv >>"$LOG" 2>&1
start_telemetry "$OUT_DIR/telemetry.csv" 500
step step_ep2 400 python3 -m torch.distributed.run --standalone --nproc_per_node 2 "$PROBES/step_check.py" \
  --layout moe --layers 4 --seqs "$SEQS" --out "$OUT_DIR/step_ep2.csv"
stop_telemetry
log "run_moe_check done in $SECONDS s"
