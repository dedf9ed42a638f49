#!/usr/bin/env bash
# Run 44 (2026-12-01): the GEMM grids of runs 9 and 11 widened on n to 49152 and 65536, so that
# the catalog's wide linears (GPT-3's unsharded QKV, n = 36864; FC1 at tp 1, n = 49152; Llama's
# output layer at tp 2, n = 64128) interpolate inside a measured grid instead of falling back to
# the fitted roofline. Same probe, heaters and sustained state as run 9, on one GPU:
#  - the new n values x every m (1k..64k) x every k (512..32768, 1.5x points): 182 shapes per
#    layout (BF16 fwd, dgrad, wgrad; FP8 TN; FP8 TN with fast accumulation);
#  - beside them, 21 shapes of the old grid's edge (n = 32768, k = 2048, 8192, 32768, every m)
#    per layout, to state how this GPU and hour compare with runs 9 and 11 at the seam.
# Tables in priority order, each cut by CALIB_DEADLINE (epoch s) if it is set.
# Usage: calib/scripts/run_gemm_wide.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_gemm_wide.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_gemm_wide
start_telemetry "$OUT_DIR/telemetry_gemm_wide.csv" 1000 -i 0
build_probes
WIDE=$(python3 - "$ROOT/calib/scripts" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from sizes import sizes
ms = [1024 << i for i in range(7)]
print(",".join(f"{m}:{n}:{k}" for m in ms for n in (49152, 65536) for k in sizes(512, 32768)))
EOF
)
SEAM=$(python3 -c "print(','.join(f'{1024 << i}:32768:{k}' for i in range(7) for k in (2048, 8192, 32768)))")
# The widest shape (65536 x 65536 x 32768, BF16: 16 GiB of operands) needs a pool above the
# default 12 GiB; slots stay capped by what defeats the L2, so smaller shapes run as in run 9.
G="$BUILD/probe_gemm --mode grid --device 0 --pool-gib 48"
for combo in bf16:fwd fp8:tn bf16:dgrad bf16:wgrad fp8:tn_fastacc; do
  name=${combo/:/_}
  args=(--combos "${combo%_fastacc}")
  [[ $combo == *fastacc ]] && args+=(--fast-accum 1)
  step "wide_$name" 200 $G "${args[@]}" --shapes "$WIDE" --out "$OUT_DIR/wide_$name.csv"
  step "seam_$name" 40 $G "${args[@]}" --shapes "$SEAM" --out "$OUT_DIR/seam_$name.csv"
done
stop_telemetry
log "run_gemm_wide done in $SECONDS s"
