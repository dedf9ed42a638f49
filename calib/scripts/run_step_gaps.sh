#!/usr/bin/env bash
# Run 101 (2026-12-06): run 23's single-GPU step (4 Llama-3-8B-shaped layers, seq 4k/8k/16k) and
# run 30's (2 Llama3-70B-shaped layers in the TP layout at TP 1, seq 4k/8k) once more, now also
# profiling one forward + backward alone (calib/probes/step_check.py, fwd_bwd_split): its kernel
# time by kind without the optimizer, the union of its kernels' intervals and their count, so
# that the time the GPU runs no kernel of the pass (the timed pass less that union) is measured
# apart from the memory-bound kernels (docs/validation.md, "Real steps on H200"). One GPU, about
# 4 minutes. Usage: calib/scripts/run_step_gaps.sh RESULTS_DIR. Never changes GPU clocks or
# settings; NCCL_NVLS_ENABLE=0 (common.sh).
set -uo pipefail
OUT_DIR=${1:?usage: run_step_gaps.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_step_gaps gaps
PROBES=$ROOT/calib/probes
nvidia-smi --query-gpu=index,name,memory.total,power.limit,clocks.max.sm,driver_version \
  --format=csv >>"$LOG" 2>&1
step step_single 240 python3 "$PROBES/step_check.py" --layout single --layers 4 \
  --seqs 4096,8192,16384 --out "$OUT_DIR/step_single.csv"
step step_tp1_70b 240 python3 -m torch.distributed.run --standalone --nproc_per_node 1 \
  "$PROBES/step_check.py" --layout tp --tp 1 --shape llama3_70b --layers 2 --seqs 4096,8192 \
  --out "$OUT_DIR/step_tp1_70b.csv"
stop_telemetry
grep -h "Error\|error" "$OUT_DIR"/*.log | head -5
log "run_step_gaps done in $SECONDS s"
