#!/usr/bin/env bash
# Run 7 (2026-11-30): denser size axes where the leave-one-out check (clustersim calib check)
# missed at kinks and at the edges of the tables, on a 2x H200 machine:
#  - GPU 1: attention (PyTorch SDPA, cuDNN and flash) with seq from 512 in 1.5x/2x steps;
#  - GPU 0 meanwhile: memory-bound kernels, 32 KiB..4 GiB in 1.5x/2x steps;
#  - then NCCL over both GPUs, 512 B..4 GiB in 1.5x/2x steps, 0.5 s per size, one process per
#    NCCL_ALGO/NCCL_PROTO setting, and the algorithm choice of the default run from its log.
# run_all.sh uses the same axes; this script re-measures only these tables.
# Usage: calib/scripts/run_dense.sh RESULTS_DIR [all|nccl]. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_dense.sh RESULTS_DIR [all|nccl]}
PARTS=${2:-all}
source "$(dirname "$0")/common.sh"
calib_start run_dense
start_telemetry "$OUT_DIR/telemetry_dense.csv" 500
build_probes
MEM_BYTES=$(python3 "$ROOT/calib/scripts/sizes.py" 32768 4294967296)
NCCL_BYTES=$(python3 "$ROOT/calib/scripts/sizes.py" 512 4294967296)
if [[ $PARTS == all ]]; then
step attention 420 python3 "$ROOT/calib/probes/attention.py" --device 1 --grid full --point-budget 0.5 \
  --out "$OUT_DIR/attention.csv" &
P1=$!
step membound 120 "$BUILD/probe_membound" --device 0 --bytes "$MEM_BYTES" --out "$OUT_DIR/membound.csv"
wait $P1
fi
nccl_suite full --bytes "$NCCL_BYTES" --size-budget 0.5
nccl_choice_table
stop_telemetry
log "run_dense done in $SECONDS s"
