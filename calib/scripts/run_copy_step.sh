#!/usr/bin/env bash
# Run 82 (2026-12-05): a 4-layer Llama-3-8B-shaped step alone and beside both-direction pinned
# host copies, with its kernel counts (calib/probes/copy_step.py): does the per-kernel delay of
# runs 80-81 add up over a step? One GPU, about two minutes. Runs 82-83 found the step waiting
# for the queued copies (calib/probes/copy_step.py says why this does not answer the question).
# Usage: calib/scripts/run_copy_step.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_copy_step.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_copy_step copy_step
cd "$ROOT/calib/probes" || exit 1
step copy_step 400 python3 copy_step.py --device 0 --out "$OUT_DIR/copy_step.csv"
stop_telemetry
log "run_copy_step done in $SECONDS s"
