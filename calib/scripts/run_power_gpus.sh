#!/usr/bin/env bash
# Run 41 (2026-11-30): the power-state pattern of run 24 (calib/probes/power_phases.py: BF16 GEMM
# phases between memory-bound phases) on each GPU of a 2-GPU machine, alone and both at once,
# to see how much the boost varies from GPU to GPU. About 2 minutes. Usage:
# calib/scripts/run_power_gpus.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_power_gpus.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_power_gpus
P="$ROOT/calib/probes/power_phases.py"
ARGS=(--phases-ms "" --seconds 4 --warm-s 2)
nvidia-smi --query-gpu=index,clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >"$OUT_DIR/before.txt"
step gpu0_alone 120 python3 "$P" --device 0 "${ARGS[@]}" --out "$OUT_DIR/power_phases_gpu0_alone.csv"
step gpu1_alone 120 python3 "$P" --device 1 "${ARGS[@]}" --out "$OUT_DIR/power_phases_gpu1_alone.csv"
python3 "$P" --device 0 "${ARGS[@]}" --out "$OUT_DIR/power_phases_gpu0_both.csv" >"$OUT_DIR/b0.log" 2>&1 &
step gpu1_both 120 python3 "$P" --device 1 "${ARGS[@]}" --out "$OUT_DIR/power_phases_gpu1_both.csv"
wait
log "run_power_gpus done in $SECONDS s"
