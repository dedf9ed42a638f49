#!/usr/bin/env bash
# Run 60 (2026-12-02): run 41's power-state pattern (calib/probes/power_phases.py, run 24's BF16
# GEMM phases between memory-bound phases, same arguments) on the one GPU of an `nvidia-h200`
# machine: one more GPU for how much the boost varies from GPU to GPU (a check, not an input).
# About a minute. Usage: calib/scripts/run_power_gpu0.sh RESULTS_DIR. Never changes GPU clocks
# or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_power_gpu0.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_power_gpu0
nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.sm,power.draw,power.limit,temperature.gpu \
  --format=csv >"$OUT_DIR/before.txt"
step gpu0_alone 240 python3 "$ROOT/calib/probes/power_phases.py" --device 0 --phases-ms "" \
  --seconds 4 --warm-s 2 --out "$OUT_DIR/power_phases_gpu0_alone.csv"
log "run_power_gpu0 done in $SECONDS s"
