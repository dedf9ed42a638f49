#!/usr/bin/env bash
# Run 78 (2026-12-04): FP8 GEMMs with block scaling, as Transformer Engine's Float8BlockScaling
# recipe runs them through cuBLASLt on Hopper (DeepSeek-V3's fine-grained FP8; Megatron-LM
# --fp8-recipe blockwise): probe_gemm --block-scaling 1 (weights in 128x128 blocks, activations
# in 1x128 blocks: forward and data-gradient GEMMs) and --block-scaling 2 (both operands in 1x128
# blocks: weight gradients), beside the per-tensor-scaled FP8 GEMM on the same shapes, each table
# in one process at the sustained state (--heat-s 10): m = tokens in {1k..64k}, n, k in
# {512..32k}, 2x steps. The ratio block / per-tensor per shape is what the cost model applies to
# the dense per-tensor table (docs/cost-model.md, "FP8 recipes").
# Usage: calib/scripts/run_fp8_block.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_fp8_block.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_fp8_block fp8_block
grep -n "SCALE_MODE\|MATRIX_SCALE_VEC128\|MATRIX_SCALE_BLK128" /usr/local/cuda/include/cublasLt.h \
  >"$OUT_DIR/cublaslt_scale_modes.txt" 2>&1
build_probes
SHAPES=$(python3 -c "
w = (512, 1024, 2048, 4096, 8192, 16384, 32768)
print(','.join(f'{m}:{n}:{k}' for m in (1024, 2048, 4096, 8192, 16384, 32768, 65536) for n in w for k in w))")
G="$BUILD/probe_gemm --mode grid --device 0 --pool-gib 48 --heat-s 10 --point-budget 0.12 --combos fp8:tn"
step smoke 60 $G --block-scaling 1 --shapes 4096:4096:4096,8192:8192:8192 --out "$OUT_DIR/smoke_block2d1d.csv"
step fp8_tensor 150 $G --shapes "$SHAPES" --out "$OUT_DIR/fp8_tensor.csv"
step fp8_block2d1d 150 $G --block-scaling 1 --shapes "$SHAPES" --out "$OUT_DIR/fp8_block2d1d.csv"
step fp8_block1d1d 150 $G --block-scaling 2 --shapes "$SHAPES" --out "$OUT_DIR/fp8_block1d1d.csv"
stop_telemetry
grep -h "SPOT CHECK FAILED\|no algorithm runs\|refused" "$OUT_DIR"/*.log | sort | uniq -c | head -20
log "run_fp8_block done in $SECONDS s"
