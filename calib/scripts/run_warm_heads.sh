#!/usr/bin/env bash
# Run 46 (2026-12-01): the first shapes of the catalog GEMM table (run 9) and of the TP-overlap
# and held-SM grids (runs 42-43), which their processes measured before the GPU had reached the
# sustained state (their own power_w below 640 W: 8 catalog rows, the first 2-3 shapes of each
# process's first layout), measured again after 20 s of heater GEMMs (--heat-s 20), with the
# same probes, variants and budgets. calib/scripts/warm_replace.py then puts them in the tables.
# Usage: calib/scripts/run_warm_heads.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_warm_heads.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_warm_heads
start_telemetry "$OUT_DIR/telemetry_warm_heads.csv" 1000 -i 0
build_probes
CATALOG=2048:36864:12288,2048:12288:12288,2048:49152:12288,2048:12288:49152,2048:51200:12288,2048:18432:12288,2048:12288:6144,2048:24576:12288
HEADS=2048:2048:2048,2048:2048:3072,2048:2048:4096
TPV=full,margin:1,margin:2,margin:4,margin:8,margin:16,margin:24,margin:32,split:2,split:4,split:8,split:4:16,split:4:24
BUSYV=full,margin:2,margin:4,margin:16,busy:0,busy:2,busy:4,busy:16,busymargin:16
step catalog 120 "$BUILD/probe_gemm" --mode grid --device 0 --heat-s 20 --combos bf16:fwd \
  --shapes "$CATALOG" --point-budget 0.15 --out "$OUT_DIR/warm_catalog.csv"
step tp_heads 150 "$BUILD/probe_gemm_tp_overlap" --device 0 --heat-s 20 --combos bf16:fwd,bf16:dgrad \
  --shapes "$HEADS" --variants "$TPV" --out "$OUT_DIR/warm_tp_overlap.csv"
step busy_heads 150 "$BUILD/probe_gemm_tp_overlap" --device 0 --heat-s 20 --combos bf16:fwd,bf16:wgrad \
  --shapes "$HEADS" --variants "$BUSYV" --out "$OUT_DIR/warm_busy_sms.csv"
stop_telemetry
log "run_warm_heads done in $SECONDS s"
