#!/usr/bin/env bash
# Run 19 (2026-11-30): Hugging Face transformers' eager element-wise modules (the table the cost
# model reads for training.elementwise: eager, membound_eager.csv) and a whole transformers
# LlamaDecoderLayer as its check (run19/hf_layer*.csv), at the sustained state (heater matmuls).
# Not part of run_all.sh: with it, run 21 of that script reached its 9.5-minute stop and lost
# the interference step (docs/calibration.md). One GPU, about 2.5 minutes.
# Usage: calib/scripts/run_eager.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_eager.sh RESULTS_DIR}
source "$(dirname "$0")/common.sh"
calib_start run_eager
PROBES=$ROOT/calib/probes
step membound_eager 120 python3 "$PROBES/eager_ops.py" --device 0 --heat-s 20 \
  --out "$OUT_DIR/membound_eager.csv"
step hf_layer 150 python3 "$PROBES/hf_layer.py" --device 0 --heat-s 20 \
  --out "$OUT_DIR/hf_layer.csv"
step hf_layer_128k 150 python3 "$PROBES/hf_layer.py" --device 0 --heat-s 15 --seqs 131072 \
  --budget-s 3 --out "$OUT_DIR/hf_layer_128k.csv"
log "run_eager done in $SECONDS s"
