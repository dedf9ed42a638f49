#!/usr/bin/env bash
# Runs 79-81 (2026-12-05): activation offloading's host copies beside kernels
# (calib/probes/copy_interference.py): a BF16 GEMM, a narrow BF16 GEMM and a 1 GiB device copy,
# alone and with pinned 256 MiB copies device-to-host, host-to-device or both running beside
# them. One GPU, about a minute. Usage: calib/scripts/run_copy_interference.sh RESULTS_DIR.
# Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_copy_interference.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_copy_interference copy_interference
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE >"$OUT_DIR/nvidia_smi_before.txt" 2>&1
step copy_interference 300 python3 "$ROOT/calib/probes/copy_interference.py" --device 0 \
  --out "$OUT_DIR/copy_interference.csv"
stop_telemetry
log "run_copy_interference done in $SECONDS s"
