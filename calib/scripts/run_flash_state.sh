#!/usr/bin/env bash
# Run 52 (2026-12-02): PyTorch's FlashAttention-2 (SDPBackend.FLASH_ATTENTION) for
# `training.attention_backend: flash2`: (1) its sustained-state ratio, attention_state.py
# --backend flash (the attention table's procedure against the same call back to back in its own
# power state, as run 50 measured cuDNN) along the sequence axis: Llama 3 8B (32 q / 8 kv heads)
# and Llama 3 70B at TP4 (16 / 2) 2k-32k (the flash table's range), GPT-3 175B at TP4 (24 MHA
# heads) 2k-8k; (2) the unmasked context-parallel blocks with FlashAttention-2, attention_cp.py
# --backend flash, as run 16 measured cuDNN's (30 s of heater matmuls first, the same budget),
# after a smoke pass that must succeed. One GPU.
# Usage: calib/scripts/run_flash_state.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_flash_state.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_flash_state flash_state
cd "$ROOT/calib/probes" || exit 1
python3 attention_cp.py --backend flash --grid smoke --point-budget 0.05 \
  --out "$OUT_DIR/attention_cp_flash_smoke.csv" >"$OUT_DIR/smoke.log" 2>&1 || {
  log "smoke failed"; tail -20 "$OUT_DIR/smoke.log" >&2; stop_telemetry; exit 1; }
log "smoke: rc=0"
SHAPES=$(python3 -c "
s = [(32, 8, 2048 << i) for i in range(5)] + [(16, 2, 2048 << i) for i in range(5)]
s += [(24, 24, 2048 << i) for i in range(3)]
print(','.join(f'{h}:{kv}:{q}' for h, kv, q in s))")
step attention_state_flash 300 python3 attention_state.py --device 0 --backend flash \
  --seconds 5 --shapes "$SHAPES" --out "$OUT_DIR/attention_state_flash.csv"
step attention_cp_flash 200 python3 attention_cp.py --device 0 --backend flash --heat-s 30 \
  --point-budget 0.2 --out "$OUT_DIR/attention_cp_flash.csv"
stop_telemetry
log "run_flash_state done in $SECONDS s"
