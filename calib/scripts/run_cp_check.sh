#!/usr/bin/env bash
# Runs 37-38 (2026-11-30): real training steps with context parallelism over two H200 (the Llama
# 3 paper's all-gather K/V exchange, run 37, and Transformer Engine's P2P ring, run 38, both with
# Megatron's load-balanced chunks; calib/probes/cp_model.py),
# 4 layers of Llama-3-8B's shape at 8k/16k/32k tokens, beside clustersim's prediction of the same
# job (cp_comm_type: all_gather / p2p; docs/validation.md "Real steps on H200"). Needs the 2-GPU kind;
# about 3 minutes. Usage: calib/scripts/run_cp_check.sh RESULTS_DIR. Never changes GPU clocks or
# settings; NCCL_NVLS_ENABLE=0 (common.sh).
set -uo pipefail
OUT_DIR=${1:?usage: run_cp_check.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_cp_check
PROBES=$ROOT/calib/probes
SEQS=${SEQS:-8192,16384,32768}
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,power.limit --format=csv >>"$LOG" 2>&1
start_telemetry "$OUT_DIR/telemetry.csv" 500
for comm in ${CP_COMMS:-all_gather p2p}; do
  name=step_cp2$([[ $comm == p2p ]] && echo _p2p)
  step "$name" 400 python3 -m torch.distributed.run --standalone --nproc_per_node 2 "$PROBES/step_check.py" \
    --layout cp --cp-comm "$comm" --layers 4 --seqs "$SEQS" --out "$OUT_DIR/$name.csv"
done
stop_telemetry
log "run_cp_check done in $SECONDS s"
