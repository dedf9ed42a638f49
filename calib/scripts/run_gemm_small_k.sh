#!/usr/bin/env bash
# Run 77 (2026-12-04): the GEMM grids one plane lower on k, k = 256, so that GEMMs contracting
# fewer than 512 elements interpolate inside a measured grid instead of taking the k = 512
# edge's rate. Such GEMMs are the weight gradients of grouped MoE experts with few rows each (the
# contraction is the expert's tokens; run 76 found the per-expert rule 12% fast at the median
# for FP8 weight gradients of 256-512 rows, where the k = 512 edge serves them). Same probe,
# layouts and sustained state as runs 73-74, on one GPU:
#  - the plane k = 256 x every m (256-64k) x every n of each table (BF16 fwd, dgrad, wgrad: n
#    512-64k; FP8 TN: n to 128k; FP8 TN with fast accumulation: as BF16);
#  - then, in the same process, 12 seam shapes at k = 512 (m 1k, 4k, 16k, 64k x n 1k, 4k, 16k).
# Each layout one process after 15 s of heater GEMMs.
# Usage: calib/scripts/run_gemm_small_k.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_gemm_small_k.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_gemm_small_k gemm_small_k
build_probes
shapes() {  # shapes N_HI [EXTRA_N]: the plane k = 256, then the seam rows
  python3 - "$ROOT/calib/scripts" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from sizes import sizes
n_hi = int(sys.argv[2])
extra_n = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 and sys.argv[3] else []
ms = [256 << i for i in range(9)]
plane = [f"{m}:{n}:256" for m in ms for n in sizes(512, n_hi) + extra_n]
seam = [f"{m}:{n}:512" for m in (1024, 4096, 16384, 65536) for n in (1024, 4096, 16384)]
print(",".join(plane + seam))
PY
}
BF16=$(shapes 65536)
FP8=$(shapes 65536 98304,131072)
log "k = 256: $(echo "$BF16" | tr ',' '\n' | wc -l) BF16 shapes, $(echo "$FP8" | tr ',' '\n' | wc -l) FP8 TN shapes (seam rows included)"
gemm_plane_steps k256 100 "$BF16" "$FP8" bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn,fp8:tn_fastacc
stop_telemetry
log "run_gemm_small_k done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
