#!/usr/bin/env bash
# Run 73 (2026-12-04): the GEMM grids one plane lower on m, so that GEMMs with fewer than 1,024
# rows interpolate inside a measured grid instead of taking the m = 1024 edge's rate (the
# edge-rate roofline, docs/cost-model.md). Such GEMMs are the weight gradients of narrow outputs
# (MLA's kv_down, 576 wide; a MoE router, one row per expert) and the linears of microbatches
# under 1,024 tokens per rank (short sequences, high context parallelism). Same probe, layouts
# and sustained state as runs 9, 11 and 44, on one GPU:
#  - the plane m = M (default 512) x every n x every k of each table (BF16 fwd, dgrad, wgrad:
#    n 512-64k, k 512-32k; FP8 TN: n to 128k, k to 256k; FP8 TN with fast accumulation: as BF16);
#  - then, in the same process, 12 shapes of the old edge m = 1024 (n 512, 2048, 8192, 32768 x
#    k 2048, 8192, 32768), to state how this GPU and hour compare with the table at the seam.
# Each layout is one process after HEAT_S (default 15) s of heater GEMMs. COMBOS picks the
# layouts (default all five, "bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn,fp8:tn_fastacc"), so that a
# plane can be split over device calls of at most 600 s each.
# Usage: calib/scripts/run_gemm_small_m.sh RESULTS_DIR [M] [COMBOS]. Never changes GPU clocks or
# settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_gemm_small_m.sh RESULTS_DIR [M] [COMBOS]}
M=${2:-512}
COMBOS=${3:-bf16:fwd,bf16:dgrad,bf16:wgrad,fp8:tn,fp8:tn_fastacc}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_gemm_small_m gemm_small_m
build_probes
shapes() {  # shapes M N_HI K_HI [EXTRA_N] [EXTRA_K]: the plane m = M, then the seam rows
  python3 - "$ROOT/calib/scripts" "$@" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from sizes import sizes
m, n_hi, k_hi = (int(a) for a in sys.argv[2:5])
extra_n = [int(x) for x in sys.argv[5].split(",")] if len(sys.argv) > 5 and sys.argv[5] else []
extra_k = [int(x) for x in sys.argv[6].split(",")] if len(sys.argv) > 6 and sys.argv[6] else []
plane = [f"{m}:{n}:{k}" for n in sizes(512, n_hi) + extra_n for k in sizes(512, k_hi) + extra_k]
seam = [f"1024:{n}:{k}" for n in (512, 2048, 8192, 32768) for k in (2048, 8192, 32768)]
print(",".join(plane + seam))
EOF
}
BF16=$(shapes "$M" 65536 32768)
FP8=$(shapes "$M" 65536 65536 98304,131072 131072,262144)
log "m = $M: $(echo "$BF16" | tr ',' '\n' | wc -l) BF16 shapes, $(echo "$FP8" | tr ',' '\n' | wc -l) FP8 TN shapes (seam rows included)"
gemm_plane_steps "m$M" 150 "$BF16" "$FP8" "$COMBOS"
stop_telemetry
log "run_gemm_small_m done in $SECONDS s"
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
