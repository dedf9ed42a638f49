#!/usr/bin/env bash
# Run 18 (2026-11-30): GEMMs while other kernels hold some SMs for their whole duration, as
# Transformer Engine's userbuffers kernels hold num_sm SMs (calib/probes/gemm_tp_overlap.cu,
# variants busy:S and busymargin:S), beside the plain and margin-planned GEMM, at the sustained
# state of run 9 (heater GEMMs before every sample). A one-shape smoke pass must succeed first.
# Usage: calib/scripts/run_busy_sms.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_busy_sms.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_busy_sms
build_probes
VARIANTS=full,margin:2,margin:4,margin:16,busy:0,busy:2,busy:4,busy:16,busymargin:16
timeout 60 "$BUILD/probe_gemm_tp_overlap" --device 0 --combos bf16:fwd --shapes 4096:4096:4096 \
  --variants "$VARIANTS" --out "$OUT_DIR/smoke.csv" >"$OUT_DIR/smoke.log" 2>&1 || {
  log "smoke failed"; tail -20 "$OUT_DIR/smoke.log" >&2; exit 1; }
log "smoke: rc=0"
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
start_telemetry "$OUT_DIR/telemetry_busy_sms.csv" 1000
busy() {  # busy DEVICE COMBOS NAME
  step "$3" ${STEP_LIMIT_S:-420} "$BUILD/probe_gemm_tp_overlap" --device "$1" --combos "$2" \
    --shapes "$SHAPES" --variants "$VARIANTS" --out "$OUT_DIR/$3.csv"
}
if [[ $(nvidia-smi -L | wc -l) -ge 2 ]]; then
  # Two GPUs: the layouts split between them, then one table (each part keeps its provenance).
  busy 0 bf16:fwd,bf16:dgrad gemm_busy_sms_a &
  P0=$!
  busy 1 bf16:wgrad,fp8:tn gemm_busy_sms_b
  wait $P0
  python3 "$ROOT/calib/scripts/merge_csv.py" "$OUT_DIR/gemm_busy_sms.csv" \
    "$OUT_DIR/gemm_busy_sms_a.csv" "$OUT_DIR/gemm_busy_sms_b.csv" && rm "$OUT_DIR"/gemm_busy_sms_[ab].csv
else
  busy 0 bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn gemm_busy_sms
fi
stop_telemetry
log "run_busy_sms done in $SECONDS s"
