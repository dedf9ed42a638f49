#!/usr/bin/env bash
# Runs 92+ (2026-12-05): the memory-bound probe over run 62's sizes (32 KiB-4 GiB, calls queued
# behind a GPU spin, as the H200's membound.csv and runs 85/87's), PASSES times in a row with
# 20 s between passes, each pass into RESULTS_DIR/pass_N/membound.csv: the run-to-run spread of
# one GPU's memory-bound table, and on an H100 further passes for its own memory-bound table.
# One GPU, about 20 s of build plus 10 s a pass. Usage: run_membound_repeat.sh RESULTS_DIR
# [PASSES, default 3]. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_membound_repeat.sh RESULTS_DIR [PASSES]}
PASSES=${2:-3}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_membound_repeat membound
nvidia-smi --query-gpu=index,name,memory.total,power.limit,clocks.max.sm,clocks.max.mem,driver_version \
  --format=csv >>"$LOG" 2>&1
build_probes
SIZES=$(python3 "$ROOT/calib/scripts/sizes.py" 32768 4294967296)
for ((p = 1; p <= PASSES; p++)); do
  mkdir -p "$OUT_DIR/pass_$p"
  step "membound_pass_$p" 60 "$BUILD/probe_membound" --device 0 --bytes "$SIZES" \
    --out "$OUT_DIR/pass_$p/membound.csv"
  ((p < PASSES)) && sleep 20
done
stop_telemetry
log "run_membound_repeat done in $SECONDS s"
