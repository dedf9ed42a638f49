#!/usr/bin/env bash
# Run 75 (2026-12-04): MoE expert GEMMs grouped as Transformer Engine's GroupedLinear runs them
# (one cuBLAS GEMM per local expert, round-robin over 4 streams) against one GEMM of all their
# rows, which is how the trace writes them (calib/probes/grouped_gemm.py): the catalog's MoE
# expert shapes (Mixtral 8x7B and 8x22B, Llama 4 Maverick, DeepSeek-V3; fc1 and fc2, forward
# layout), 2-32 experts of 256-8192 rows, BF16 then FP8, each one process after 20 s of heater
# matmuls, cut by a deadline. Usage: calib/scripts/run_grouped_gemm.sh RESULTS_DIR. Never changes
# GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_grouped_gemm.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_grouped_gemm grouped_gemm
for dtype in bf16 fp8; do
  step "grouped_gemm_$dtype" 270 python3 "$ROOT/calib/probes/grouped_gemm.py" --device 0 \
    --dtypes "$dtype" --heat-s 20 --out "$OUT_DIR/grouped_gemm_$dtype.csv"
done
stop_telemetry
log "run_grouped_gemm done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
