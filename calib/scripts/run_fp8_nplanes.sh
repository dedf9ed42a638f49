#!/usr/bin/env bash
# Run 70 (2026-12-03): FP8 split-accumulation GEMMs (TN) on two new n planes of gemm_fp8.csv,
# n = 98,304 and 131,072, at every m (1k..64k) and every k of the table (512..32k with the 1.5x
# points, and run 68's 49k, 64k, 128k and 256k), so that the 128,256-wide output layer's weight
# gradient at tp 1 (in, out = vocab, tokens) interpolates inside the grid: at the n = 64k edge's
# rate it was 10-15% fast from 128k tokens (runs 66-67, `calib check`, "beyond the grids").
# Same procedure as run 68 (heater-queued samples, heater GEMMs first). The largest shape
# (65,536 x 131,072 x 262,144) holds 68 GB of operands: --pool-gib 100, one slot.
# Usage: calib/scripts/run_fp8_nplanes.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_fp8_nplanes.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_fp8_nplanes fp8_nplanes
build_probes
shapes() {  # shapes K...: every m of the grid x n = 98304, 131072 at the given k
  python3 - "$@" <<'PY'
import sys
print(",".join(f"{1024 << i}:{n}:{k}" for k in map(int, sys.argv[1:]) for i in range(7)
               for n in (98304, 131072)))
PY
}
G="$BUILD/probe_gemm --mode grid --device 0 --pool-gib 100 --combos fp8:tn"
KS=$(python3 "$ROOT/calib/scripts/sizes.py" 512 32768 | tr , ' ')
step nplanes_k512_32768 200 $G --heat-s 20 --shapes "$(shapes $KS)" --out "$OUT_DIR/nplanes_k512_32768.csv"
step nplanes_k49152_65536 120 $G --heat-s 10 --shapes "$(shapes 49152 65536)" --out "$OUT_DIR/nplanes_k49152_65536.csv"
step nplanes_k131072 120 $G --heat-s 10 --shapes "$(shapes 131072)" --out "$OUT_DIR/nplanes_k131072.csv"
step nplanes_k262144 200 $G --heat-s 10 --shapes "$(shapes 262144)" --out "$OUT_DIR/nplanes_k262144.csv"
stop_telemetry
log "run_fp8_nplanes done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
