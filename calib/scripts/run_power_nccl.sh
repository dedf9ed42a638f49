#!/usr/bin/env bash
# Run 40 (2026-11-30): the power-state boost of GEMMs alternating with memory-bound phases, with
# and without NCCL all-reduces running beside them on two H200 (calib/probes/power_nccl.py).
# Needs the 2-GPU kind; about 2 minutes. Usage: calib/scripts/run_power_nccl.sh RESULTS_DIR.
# Never changes GPU clocks or settings; NCCL_NVLS_ENABLE=0 (common.sh).
set -uo pipefail
OUT_DIR=${1:?usage: run_power_nccl.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_power_nccl
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,power.limit --format=csv >>"$LOG" 2>&1
step power_nccl 300 python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
  "$ROOT/calib/probes/power_nccl.py" --out "$OUT_DIR/power_nccl.csv"
log "run_power_nccl done in $SECONDS s"
