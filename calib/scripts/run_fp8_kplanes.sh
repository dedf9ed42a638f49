#!/usr/bin/env bash
# Run 68 (2026-12-03): FP8 split-accumulation GEMMs (TN, as Transformer Engine runs the data and
# weight gradients) on four new k planes of the table's m x n grid, so that gemm_fp8.csv's k axis
# runs 512-262,144 instead of ending at 32,768. Runs 66-67 found the split rate falling 1-9% below
# the k = 32k edge from 64k to 256k (15% for the 128,256-wide output layer), where the model took
# the edge rate: a weight gradient's k is the tokens of a microbatch and rank.
#  - every m (1k..64k) x every n (512..64k, 1.5x points) at k = 49,152, 65,536, 131,072 and
#    262,144, one step per plane, in the grid's procedure (heater-queued samples, heater GEMMs first);
#    run 66's points at k = 196,608 stay out of the table and check the interpolation between
#    131,072 and 262,144 (`calib check`, "beyond the grids");
#  - the seam first: every m x n = 4096, 16384, 65536 at k = 32,768 (in the table), to state how
#    this GPU and hour compare with the table's edge.
# The largest shape (65,536 x 65,536 x 262,144) holds 43 GB of operands: --pool-gib 100.
# Usage: calib/scripts/run_fp8_kplanes.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_fp8_kplanes.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_fp8_kplanes fp8_kplanes
build_probes
plane() {  # plane K [N...]: every m of the grid x the given n (default: every n of the grid) at k = K
  python3 - "$ROOT/calib/scripts" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from sizes import sizes
k = int(sys.argv[2])
ns = [int(n) for n in sys.argv[3:]] or sizes(512, 65536)
print(",".join(f"{1024 << i}:{n}:{k}" for i in range(7) for n in ns))
PY
}
G="$BUILD/probe_gemm --mode grid --device 0 --pool-gib 100 --combos fp8:tn"
# 20 s of heater GEMMs before the first step, 10 s before each later one (the GPU is warm from
# the step before; the heaters cover the process start).
step seam_k32768 60 $G --heat-s 20 --shapes "$(plane 32768 4096 16384 65536)" --out "$OUT_DIR/seam_k32768.csv"
for k in 49152 65536 131072 262144; do
  step "plane_k$k" 200 $G --heat-s 10 --shapes "$(plane $k)" --out "$OUT_DIR/plane_k$k.csv"
done
stop_telemetry
log "run_fp8_kplanes done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
