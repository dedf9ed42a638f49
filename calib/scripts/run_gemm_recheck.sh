#!/usr/bin/env bash
# Run 61 (2026-12-02): the GEMM grid nodes that leave-one-out flags (prediction from their axis
# neighbours off by more than 7%, calib/scripts/gemm_loo_points.py over the committed
# gemm_bf16.csv, gemm_fp8.csv and gemm_fp8_fastacc.csv) measured again with those neighbours, in
# every layout (BF16 fwd, dgrad, wgrad; FP8 TN with split and with fast accumulation), two passes
# (a, b), each after 20 s of heater GEMMs: a node that a new measurement reproduces is a step of
# the kernel choice, one it does not is noise. Then the context-parallel cuDNN attention blocks
# of run 59 twice more (passes c, d), for a four-pass mean.
# Usage: calib/scripts/run_gemm_recheck.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_gemm_recheck.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_gemm_recheck gemm_recheck
build_probes
D=$ROOT/calib/data/h200
SHAPES=$(python3 "$ROOT/calib/scripts/gemm_loo_points.py" --over 0.07 --shapes \
  "$D/gemm_bf16.csv" "$D/gemm_fp8.csv" "$D/gemm_fp8_fastacc.csv")
log "shapes: $(echo "$SHAPES" | tr ',' '\n' | wc -l)"
G="$BUILD/probe_gemm --mode grid --device 0 --pool-gib 48 --heat-s 20"
for pass in a b; do
  step "recheck_main_$pass" 150 $G --combos bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn \
    --shapes "$SHAPES" --out "$OUT_DIR/recheck_main_$pass.csv"
  step "recheck_fastacc_$pass" 80 $G --combos fp8:tn --fast-accum 1 --shapes "$SHAPES" \
    --out "$OUT_DIR/recheck_fastacc_$pass.csv"
done
for pass in c d; do
  step "attention_cp_cudnn_$pass" 120 python3 "$ROOT/calib/probes/attention_cp.py" \
    --device 0 --backend cudnn --grid dense --heat-s 30 --point-budget 0.2 \
    --out "$OUT_DIR/attention_cp_cudnn_$pass.csv"
done
stop_telemetry
log "run_gemm_recheck done in $SECONDS s"
