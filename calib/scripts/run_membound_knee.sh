#!/usr/bin/env bash
# Run 62 (2026-12-02): the memory-bound kernels (probe_membound: copy, RMSNorm, LayerNorm, SwiGLU,
# GeLU, RoPE, cross entropy, AdamW) at quarter-octave sizes from 4 MiB to 128 MiB, where they
# leave the ~5 us launch floor for their bandwidth (the knee at which leave-one-out over run 7's
# 1.5x/2x axis misses by 10-12%): 1, 1.25, 1.5, 1.75 x each power of two, twice (passes a, b),
# the 1x and 1.5x sizes, which membound.csv holds, as the seam check. One GPU.
# Usage: calib/scripts/run_membound_knee.sh RESULTS_DIR [full]. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_membound_knee.sh RESULTS_DIR [full]}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_membound_knee membound_knee
build_probes
BYTES=$(python3 -c "
m = 1 << 20
knee = {int(f * (m << e)) for e in range(2, 7) for f in (1, 1.25, 1.5, 1.75)} | {128 * m}
import sys; sys.path.insert(0, '$ROOT/calib/scripts'); from sizes import sizes
full = set(sizes(32768, 4294967296)) if '${2:-}' == 'full' else set()
print(','.join(str(b) for b in sorted(knee | full)))")
log "bytes: $BYTES"
for pass in a b; do
  step "membound_knee_$pass" 120 "$BUILD/probe_membound" --device 0 --bytes "$BYTES" \
    --out "$OUT_DIR/membound_knee_$pass.csv"
done
stop_telemetry
log "run_membound_knee done in $SECONDS s"
