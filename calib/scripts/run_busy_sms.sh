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
SHAPES=$(python3 - <<'PY'
print(",".join(f"{m}:{n}:{k}" for m in (2048, 4096, 8192, 16384)
               for n in (2048, 4096, 8192, 16384) for k in (2048, 4096, 8192, 16384)))
PY
)
start_telemetry "$OUT_DIR/telemetry_busy_sms.csv" 1000
step gemm_busy_sms 420 "$BUILD/probe_gemm_tp_overlap" --device 0 \
  --combos bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn --shapes "$SHAPES" --variants "$VARIANTS" \
  --out "$OUT_DIR/gemm_busy_sms.csv"
stop_telemetry
log "run_busy_sms done in $SECONDS s"
