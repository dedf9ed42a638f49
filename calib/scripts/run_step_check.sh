#!/usr/bin/env bash
# Run 23 (2026-11-30): real training steps of a 4-layer Llama-3-8B-shaped transformers model on
# one H200 and on two (DDP, FSDP2), beside clustersim's predictions of the same jobs
# (calib/probes/step_check.py, docs/validation.md "Real steps on H200"). Needs the 2-GPU kind.
# About 4 minutes. Usage: calib/scripts/run_step_check.sh RESULTS_DIR. Never changes GPU clocks
# or settings; NCCL_NVLS_ENABLE=0 (common.sh).
set -uo pipefail
OUT_DIR=${1:?usage: run_step_check.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_step_check
PROBES=$ROOT/calib/probes
SEQS=${SEQS:-4096,8192,16384}
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,power.limit --format=csv >>"$LOG" 2>&1
start_telemetry "$OUT_DIR/telemetry.csv" 500
[[ ${SKIP_SINGLE:-0} == 1 ]] || step step_single 200 python3 "$PROBES/step_check.py" --layout single --layers 4 --seqs "$SEQS" \
  --out "$OUT_DIR/step_single.csv"
for layout in ddp fsdp; do
  step "step_$layout" 220 python3 -m torch.distributed.run --standalone --nproc_per_node 2 "$PROBES/step_check.py" \
    --layout "$layout" --layers 4 --seqs "$SEQS" --out "$OUT_DIR/step_$layout.csv"
done
stop_telemetry
log "run_step_check done in $SECONDS s"
