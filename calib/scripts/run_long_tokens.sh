#!/usr/bin/env bash
# Run 64 (2026-12-03): GEMMs and attention beyond the measured grids, at long-context shapes,
# to check the cost model's fallbacks there (docs/calibration.md, "Beyond the grids"). The GEMM
# grids end at 65,536 tokens (m of fwd/dgrad, k of wgrad) and the attention table at 131,072;
# beyond, a GEMM takes the rate of the nearest in-grid shape and attention the 128k node scaled
# by seq^2. S3's Llama 3.1 8B sweep (one sequence of up to 262,144 tokens per GPU) runs there.
#  - GEMMs, BF16, in the grids' procedure (heater-queued samples, --heat-s 20): Llama 3 8B's five
#    linears (qkv 6144x4096, proj 4096x4096, fc1 28672x4096, fc2 4096x14336, output 128256x4096)
#    at 65,536 (the grid's edge: the seam), 131,072, 196,608 and 262,144 tokens, in the forward
#    (tokens, out, in), data-gradient (tokens, in, out) and weight-gradient (out, in, tokens)
#    layouts; Llama 3 70B's at tp 8 (1280x8192, 8192x1024, 7168x8192, 8192x3584) forward at
#    131,072 and 262,144. The output layer's shapes (up to 63 GiB operands) in a step of their own.
#  - attention: attention.py --grid long (cuDNN, after 30 s of heater matmuls).
# With `fp8` as second argument (run 66, the same day): the same shapes in FP8 (E4M3, per-tensor
# scales, BF16 output) as the model reads them: the forward shapes in TN with fast accumulation
# (Transformer Engine's forward GEMMs), the data- and weight-gradient shapes as the trace writes
# them, (tokens, in, out) and (in, out, tokens), in TN with split accumulation; no attention.
# Usage: calib/scripts/run_long_tokens.sh RESULTS_DIR [fp8|fp8fwd]. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_long_tokens.sh RESULTS_DIR [fp8|fp8fwd]}
MODE=${2:-bf16}
source "$(dirname "$0")/common.sh"
calib_start_device_call run_long_tokens long_tokens
build_probes
shapes() {  # shapes LAYOUT VOCAB(0|1): the layout's shapes as m:n:k,...
  python3 - "$1" "$2" <<'PY'
import sys
layout, vocab = sys.argv[1], sys.argv[2] == "1"
lin = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]  # (out, in), Llama 3 8B
if vocab:
    lin = [(128256, 4096)]
toks = (65536, 131072, 196608, 262144)
if layout == "fwd":
    s = [(t, o, i) for t in toks for o, i in lin]
    if not vocab:  # Llama 3 70B at tp 8
        s += [(t, o, i) for t in (131072, 262144)
              for o, i in ((1280, 8192), (8192, 1024), (7168, 8192), (8192, 3584))]
elif layout == "dgrad":
    s = [(t, i, o) for t in toks for o, i in lin]
elif layout == "wgrad_op":  # the trace's wgrad op, (in, out, tokens): FP8 reads it as is
    s = [(i, o, t) for t in toks for o, i in lin]
else:
    s = [(o, i, t) for t in toks for o, i in lin]
print(",".join(f"{m}:{n}:{k}" for m, n, k in s))
PY
}
G="$BUILD/probe_gemm --mode grid --device 0 --heat-s 20"
if [[ $MODE == fp8 || $MODE == fp8fwd ]]; then
  for v in 0 1; do
    # FP8 writes its BF16 output apart from the C operand: the widest outputs need the big pool
    # (run 66's first call lost its forward rows from 256k x 28672 on at --pool-gib 24; `fp8fwd`
    # measures the forward steps alone, as its second call did).
    step "long_fp8_fwd_$v" 90 $G --pool-gib 100 --combos fp8:tn --fast-accum 1 \
      --shapes "$(shapes fwd $v)" --out "$OUT_DIR/long_fp8_fwd_$v.csv"
    [[ $MODE == fp8fwd ]] && continue
    bwd="$(shapes dgrad $v),$(shapes wgrad_op $v)"
    step "long_fp8_bwd_$v" 120 $G --pool-gib $((v ? 100 : 24)) --combos fp8:tn --shapes "$bwd" \
      --out "$OUT_DIR/long_fp8_bwd_$v.csv"
  done
  stop_telemetry
  log "run_long_tokens fp8 done in $SECONDS s"
  tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
  exit 0
fi
for layout in fwd dgrad wgrad; do
  step "long_$layout" 90 $G --pool-gib 24 --combos "bf16:$layout" --shapes "$(shapes $layout 0)" \
    --out "$OUT_DIR/long_$layout.csv"
done
for layout in fwd dgrad wgrad; do
  step "long_vocab_$layout" 60 $G --pool-gib 100 --combos "bf16:$layout" \
    --shapes "$(shapes $layout 1)" --out "$OUT_DIR/long_vocab_$layout.csv"
done
attention_passes attention_long 200 a -- --grid long --backends cudnn
stop_telemetry
log "run_long_tokens done in $SECONDS s"
# One archive: a device call returns at most 8 files.
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
