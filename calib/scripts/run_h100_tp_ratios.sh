#!/usr/bin/env bash
# The H200's TP-overlap probe (runs 12/42, run_tp_overlap.sh) and held-SM probe (runs 18/43,
# run_busy_sms.sh) on another GPU, one GPU and one device call (about 140 s on an H100: runs 95
# and 96, calib/data/h100/README.md): the same variants, layouts and sustained state on 32
# shapes of their grid (m, n in 2k-16k at 2x steps, k 2048 and 8192, where chunking and held SMs
# cost most). The model applies the H200's
# ratios to derived GPUs unchanged (docs/cost-model.md); this measures whether an H100's differ.
# Compare: calib/scripts/tp_ratio_compare.py H200_TABLES RESULTS_DIR/tp_overlap/...csv (and the
# busy_sms table); two H200 passes (runs 12 vs 42, 18 vs 43, 64 shapes) put every series' median
# ratio within 1.6% of 1 and its 10th / 90th percentiles at 0.92-0.97 / 1.03-1.09.
# Usage: calib/scripts/run_h100_tp_ratios.sh RESULTS_DIR. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_h100_tp_ratios.sh RESULTS_DIR}
HERE=$(dirname "$0")
SHAPES=$(python3 - <<'PY'
axis = (2048, 4096, 8192, 16384)
print(",".join(f"{m}:{n}:{k}" for m in axis for n in axis for k in (2048, 8192)))
PY
)
export SHAPES
STEP_LIMIT_S=${TP_LIMIT_S:-240} bash "$HERE/run_tp_overlap.sh" "$OUT_DIR/tp_overlap"
STEP_LIMIT_S=${BUSY_LIMIT_S:-260} bash "$HERE/run_busy_sms.sh" "$OUT_DIR/busy_sms"
