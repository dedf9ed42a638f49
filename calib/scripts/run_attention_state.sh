#!/usr/bin/env bash
# Run 50 (2026-12-02): run 49's attention comparison (attention.py's table procedure against the
# same call back to back in its own sustained power state) along the sequence axis: Llama 3 8B
# (32 q / 8 kv heads) 2k-128k, Llama 3 70B at TP4 (16 / 2) 2k-64k, GPT-3 175B at TP4 (24 MHA
# heads) 2k-8k. Usage: calib/scripts/run_attention_state.sh RESULTS_DIR. Never changes GPU
# clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_attention_state.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_attention_state attention_state
SHAPES=$(python3 -c "
s = [(32, 8, 2048 << i) for i in range(7)] + [(16, 2, 2048 << i) for i in range(6)]
s += [(24, 24, 2048 << i) for i in range(3)]
print(','.join(f'{h}:{kv}:{q}' for h, kv, q in s))")
cd "$ROOT/calib/probes" && step attention_state 520 python3 attention_state.py --device 0 \
  --seconds 5 --shapes "$SHAPES" --out "$OUT_DIR/attention_state_seq.csv"
stop_telemetry
log "run_attention_state done in $SECONDS s"
