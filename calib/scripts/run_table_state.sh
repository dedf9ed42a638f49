#!/usr/bin/env bash
# Run 49 (2026-12-02): each compute-bound table's rate against the same call in its own
# sustained power state. The GEMM grids and the attention table queue every sample behind BF16
# heater GEMMs; the power-state boost of runs 24-25 is a ratio to the kind running alone. This
# run measures both in one process per kind, at training shapes:
#   GEMMs (probe_gemm): --mode grid behind 10 s of heater (the tables' procedure) and
#     --mode sustained (7 s back to back), BF16 fwd, FP8 TN and FP8 TN with fast accumulation;
#   attention (attention_state.py): attention.py's measure() against 6 s back to back, fwd and
#     bwd, 5 shapes.
# Run 51 (the same day) repeats the GEMM part at ten more shapes: SHAPES=m:n:k,... ATTENTION=0.
# Usage: [SHAPES=...] [ATTENTION=0] calib/scripts/run_table_state.sh RESULTS_DIR. Never changes
# GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_table_state.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_table_state table_state
build_probes
# m tokens x n out x k in: cube, runs 24-25's GEMM, GPT-3 175B fc1 and proj at TP4 (2,048
# tokens), Llama 3 70B fc1 at TP4 and Llama 3 405B proj at TP8 (8,192 tokens).
SHAPES=${SHAPES:-8192:8192:8192,4096:8192:8192,2048:12288:12288,2048:12288:3072,8192:14336:8192,8192:16384:2048}
P="$BUILD/probe_gemm --device 0 --pool-gib 48"
step grid_bf16 40 $P --mode grid --combos bf16:fwd --heat-s 10 --shapes $SHAPES --out "$OUT_DIR/grid_bf16.csv"
step grid_fp8 40 $P --mode grid --combos fp8:tn --heat-s 10 --shapes $SHAPES --out "$OUT_DIR/grid_fp8.csv"
step grid_fp8_fastacc 40 $P --mode grid --combos fp8:tn --fast-accum 1 --heat-s 10 --shapes $SHAPES --out "$OUT_DIR/grid_fp8_fastacc.csv"
step sustained_bf16 110 $P --mode sustained --dtypes bf16 --idle 0 --seconds 7 --shapes $SHAPES --out "$OUT_DIR/sustained_bf16.csv"
step sustained_fp8 110 $P --mode sustained --dtypes fp8 --idle 0 --seconds 7 --shapes $SHAPES --out "$OUT_DIR/sustained_fp8.csv"
step sustained_fp8_fastacc 110 $P --mode sustained --dtypes fp8 --fast-accum 1 --idle 0 --seconds 7 --shapes $SHAPES --out "$OUT_DIR/sustained_fp8_fastacc.csv"
[[ ${ATTENTION:-1} == 1 ]] && cd "$ROOT/calib/probes" && step attention_state 150 python3 attention_state.py --device 0 --out "$OUT_DIR/attention_state.csv"
stop_telemetry
grep -h "SPOT CHECK FAILED\|Error\|error" "$OUT_DIR"/*.log | head -5
log "run_table_state done in $SECONDS s"
