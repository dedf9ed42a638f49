#!/usr/bin/env bash
# Runs 75-76 (2026-12-04): MoE expert GEMMs grouped as Transformer Engine's GroupedLinear runs
# them (one cuBLAS GEMM per local expert, round-robin over 4 streams) against one GEMM of all
# their rows, which is how the trace wrote them until then (calib/probes/grouped_gemm.py): the
# catalog's MoE expert shapes (Mixtral 8x7B and 8x22B, Llama 4 Maverick, DeepSeek-V3; fc1 and
# fc2), 2-32 experts of 256-8192 rows, BF16 then FP8. Run 75 ran the probe's first version, the
# forward layout only (commit f9f8cda: one process per dtype after 20 s of heaters); run 76 this
# one: the forward, data-gradient and weight-gradient layouts, one process per dtype and layout
# after 15 s of heater matmuls, cut by a deadline. Usage: calib/scripts/run_grouped_gemm.sh
# RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_grouped_gemm.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_grouped_gemm grouped_gemm
for dtype in bf16 fp8; do
  for layout in fwd dgrad wgrad; do
    step "grouped_gemm_${dtype}_$layout" 120 python3 "$ROOT/calib/probes/grouped_gemm.py" \
      --device 0 --dtypes "$dtype" --layouts "$layout" --heat-s 15 \
      --out "$OUT_DIR/grouped_gemm_${dtype}_$layout.csv"
  done
done
stop_telemetry
log "run_grouped_gemm done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
