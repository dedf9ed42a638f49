#!/usr/bin/env bash
# Run 48 (2026-12-01): the weight-gradient GEMM as Megatron runs it with
# gradient_accumulation_fusion (Transformer Engine: fuse_wgrad_accumulation): its output added
# into the main_grad buffer (beta = 1), FP32 (probe_gemm --accumulate 1, variant accum_f32; the
# BF16 recipes' grad_reduce_in_fp32) or BF16 (--accumulate 2, variant accum_bf16; the FP8
# recipes' grad_reduce_in_fp32 off), beside the same GEMM writing a new BF16 tensor (the committed
# tables' form): BF16 in the wgrad (NT) layout and FP8 (TN), at the sustained state (--heat-s
# 10), m = out and n = in features in {2k..32k}, k = tokens in {1k..16k}, all in one process per
# table so that plain and accumulating rows share the GPU's state. The ratio accum / plain per
# shape is what the cost model applies (docs/cost-model.md, "Weight gradients into main_grad").
# Usage: calib/scripts/run_wgrad_accum.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_wgrad_accum.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_wgrad_accum wgrad_accum
build_probes
SHAPES=$(python3 -c "
w = (2048, 4096, 8192, 16384, 32768)
print(','.join(f'{m}:{n}:{k}' for m in w for n in w for k in (1024, 2048, 4096, 8192, 16384)))")
G="$BUILD/probe_gemm --mode grid --device 0 --pool-gib 48 --heat-s 10 --point-budget 0.12"
for dt in bf16 fp8; do
  combo=bf16:wgrad
  [[ $dt == fp8 ]] && combo=fp8:tn
  step "${dt}_plain" 85 $G --combos $combo --shapes "$SHAPES" --out "$OUT_DIR/${dt}_plain.csv"
  step "${dt}_accum_f32" 85 $G --combos $combo --accumulate 1 --shapes "$SHAPES" --out "$OUT_DIR/${dt}_accum_f32.csv"
  step "${dt}_accum_bf16" 85 $G --combos $combo --accumulate 2 --shapes "$SHAPES" --out "$OUT_DIR/${dt}_accum_bf16.csv"
done
stop_telemetry
grep -h "SPOT CHECK FAILED" "$OUT_DIR"/*.log | head -5
log "run_wgrad_accum done in $SECONDS s"
