#!/usr/bin/env bash
# Run 12 (2026-11-30): GEMMs as Transformer Engine's userbuffers TP overlap runs them (split into
# chunk GEMMs on three streams, planned for fewer SMs), at the sustained state of run 9 (heater
# GEMMs before every sample); calib/probes/gemm_tp_overlap.cu. With two GPUs the layouts are
# split between them. Usage: calib/scripts/run_tp_overlap.sh RESULTS_DIR. Never changes GPU
# clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_tp_overlap.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_tp_overlap
start_telemetry "$OUT_DIR/telemetry_tp_overlap.csv" 1000
build_probes
# GRID=dense (runs 42-43): 1.5x steps on m, n and k, as runs 9-10 gave the plain GEMM grids, so
# that a held-out node leaves a 2.25x gap instead of 4x; default: run 12/18's 2x steps. SHAPES set
# in the environment (M:N:K,...) replaces the grid (calib/scripts/run_h100_tp_ratios.sh).
[[ -n ${SHAPES:-} ]] || SHAPES=$(GRID=${GRID:-} python3 - <<'PY'
import os
axis = (2048, 3072, 4096, 6144, 8192, 12288, 16384) if os.environ["GRID"] == "dense" \
    else (2048, 4096, 8192, 16384)
print(",".join(f"{m}:{n}:{k}" for m in axis for n in axis for k in axis))
PY
)
VARIANTS=full,margin:1,margin:2,margin:4,margin:8,margin:16,margin:24,margin:32,split:2,split:4,split:8,split:4:16,split:4:24
probe() {  # probe DEVICE COMBOS NAME
  step "$3" ${STEP_LIMIT_S:-420} "$BUILD/probe_gemm_tp_overlap" --device "$1" --combos "$2" --shapes "$SHAPES" \
    --variants "$VARIANTS" --out "$OUT_DIR/$3.csv"
}
if [[ $(nvidia-smi -L | wc -l) -ge 2 ]]; then
  probe 0 bf16:fwd,bf16:wgrad gemm_tp_overlap_a &
  P0=$!
  probe 1 bf16:dgrad,fp8:tn gemm_tp_overlap_b
  wait $P0
else
  probe 0 bf16:fwd,bf16:wgrad,bf16:dgrad,fp8:tn gemm_tp_overlap_a
fi
stop_telemetry
log "run_tp_overlap done in $SECONDS s"
