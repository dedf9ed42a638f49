#!/usr/bin/env bash
# Run 67 (2026-12-03): is the FP8 weight-gradient GEMM's fall below the k = 32k edge rate at long
# k (run 66) split accumulation's? The same (in, out, tokens) shapes, 4096 x 4096 and
# 4096 x 128256 at k = 32k (in the grid), 64k, 128k and 256k, in TN with split and with fast
# accumulation, back to back in one process after 20 s of heater GEMMs. If only split
# accumulation falls, its periodic FP32 promotion is the cause.
# Usage: calib/scripts/run_fp8_longk.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_fp8_longk.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_fp8_longk fp8_longk
build_probes
SHAPES=$(python3 -c "print(','.join(f'4096:{n}:{k}' for n in (4096, 128256) for k in (32768, 65536, 131072, 262144)))")
G="$BUILD/probe_gemm --mode grid --device 0 --heat-s 20 --pool-gib 48 --combos fp8:tn"
step longk_split 60 $G --shapes "$SHAPES" --out "$OUT_DIR/longk_split.csv"
step longk_fastacc 60 $G --fast-accum 1 --shapes "$SHAPES" --out "$OUT_DIR/longk_fastacc.csv"
stop_telemetry
log "run_fp8_longk done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
