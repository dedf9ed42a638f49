#!/usr/bin/env bash
# Run 45 (2026-12-01): the GEMM rows that runs 9, 11 and 44 measured before the GPU had reached
# the sustained state, measured again after 20 s of heater GEMMs (probe_gemm --heat-s 20).
# Each grid process starts on a GPU that idled during the build or between steps; its first
# ~2-3 s of rows (m = 1024 with the smallest n and k) ran at 1.56-1.98 GHz and 90-600 W instead
# of ~1.47 GHz and ~690 W (their own power_w / sm_mhz columns). Shapes, every layout:
#  - m = 1024, n = 512 and 768, every k: the first rows of runs 9 and 11 (19-21 per table);
#  - m = 1024, n = 49152, every k: the first rows of run 44;
#  - m = 1024, n = 32768, k = 2048, 8192, 32768: run 44's seam rows.
# BF16 dgrad ran second in run 9's process (warm); it is measured again as a control.
# Usage: calib/scripts/run_gemm_warm.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_gemm_warm.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_gemm_warm
start_telemetry "$OUT_DIR/telemetry_gemm_warm.csv" 1000 -i 0
build_probes
SHAPES=$(python3 - "$ROOT/calib/scripts" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from sizes import sizes
ks = sizes(512, 32768)
s = [(1024, n, k) for n in (512, 768, 49152) for k in ks] + [(1024, 32768, k) for k in (2048, 8192, 32768)]
print(",".join(f"{m}:{n}:{k}" for m, n, k in s))
PY
)
G="$BUILD/probe_gemm --mode grid --device 0 --pool-gib 48 --heat-s 20"
step warm_main 200 $G --combos bf16:fwd,bf16:wgrad,fp8:tn,bf16:dgrad --shapes "$SHAPES" \
  --out "$OUT_DIR/warm_main.csv"
step warm_fastacc 100 $G --combos fp8:tn --fast-accum 1 --shapes "$SHAPES" \
  --out "$OUT_DIR/warm_fastacc.csv"
stop_telemetry
log "run_gemm_warm done in $SECONDS s"
