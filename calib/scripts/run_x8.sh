#!/usr/bin/env bash
# Issue 9, for the nvidia-h200-x8 kind (not lent so far): the NCCL probe over 2, 4 and 8 GPUs of
# one NVSwitch board, and real training steps on 8 GPUs beside the simulator's prediction
# (calib/probes/step_check.py: DDP and FSDP2 of a 4-layer Llama-3-8B-shaped model, and two
# Llama3-70B-shaped layers at seq 4096 with Megatron-style TP over all GPUs; on 4 GPUs too when
# the x4 kind is what is lent), and the same 70B layers with TP4 x DP2 (TP2 x DP2 on 4 GPUs);
# FSDP2 last, as time allows (issue 9 does not ask for it).
# One device call of about 9 minutes with a hard stop at 9.5 (CALIB_DEADLINE).
# Usage: calib/scripts/run_x8.sh RESULTS_DIR [full|smoke]. Results end up in RESULTS_DIR.tgz;
# commit them under calib/data/h200x8/ with the log. Smoke-tested on 2 GPUs on 2026-11-30 (93 s,
# every step rc=0; its DDP steps within 1.6% of run 23's) and again after the TP x DP, pipeline
# and sequence-parallel options (104 s, every step rc=0; DDP, FSDP2 and the 70B TP2 step within
# 0.2-0.9% of runs 23 and 27). The TP x DP step itself (needs 4 GPUs) ran on 2 as TP 1 x DP 2
# (run 30). Never changes GPU clocks or settings; NCCL_NVLS_ENABLE=0 (common.sh).
set -uo pipefail
OUT_DIR=${1:?usage: run_x8.sh RESULTS_DIR [full|smoke]}
GRID=${2:-full}
source "$(dirname "$0")/common.sh"
calib_start run_x8
export CALIB_DEADLINE=${CALIB_DEADLINE:-$(($(date +%s) + 570))}
PROBES=$ROOT/calib/probes
GPUS=$(nvidia-smi -L | wc -l)
log "run_x8 $GRID on $GPUS GPUs"
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink -s; } >"$OUT_DIR/environment.txt" 2>&1
start_telemetry "$OUT_DIR/telemetry.csv" 500
build_probes
if [[ $GRID == smoke ]]; then
  BYTES=(--bytes 4096,1048576,268435456)
else
  BYTES=(--bytes "$(python3 "$ROOT/calib/scripts/sizes.py" 1024 4294967296)" --size-budget 0.4)
fi
for n in 2 4 8; do
  ((n > GPUS)) && continue
  step "nccl_default_$n" 120 "$BUILD/probe_nccl" --ngpus "$n" \
    --collectives all_reduce,all_gather,reduce_scatter,all_to_all,sendrecv "${BYTES[@]}" \
    --out "$OUT_DIR/nccl_default_${n}gpu.csv"
  for algo in Ring Tree; do
    step "nccl_${algo}_$n" 60 env NCCL_ALGO=$algo "$BUILD/probe_nccl" --ngpus "$n" \
      --collectives all_reduce "${BYTES[@]}" --out "$OUT_DIR/nccl_$(echo $algo | tr A-Z a-z)_${n}gpu.csv"
  done
done
step_check() {  # NAME TIMEOUT ARGS...: step_check.py on all GPUs under torchrun
  local name=$1 limit=$2
  shift 2
  step "$name" "$limit" python3 -m torch.distributed.run --standalone \
    --nproc_per_node "$GPUS" "$PROBES/step_check.py" --warm-s 8 "$@"
}
step_check "step_ddp_$GPUS" 100 --layout ddp --layers 4 --seqs 4096,8192 \
  --out "$OUT_DIR/step_ddp_${GPUS}gpu.csv"
step_check "step_tp_$GPUS" 100 --layout tp --shape llama3_70b --layers 2 --seqs 4096 \
  --out "$OUT_DIR/step_tp_70b_${GPUS}gpu.csv"
if ((GPUS >= 4)); then
  TP=$((GPUS / 2))
  step_check "step_tp${TP}_dp2_$GPUS" 100 --layout tp --tp "$TP" --shape llama3_70b --layers 2 \
    --seqs 4096 --out "$OUT_DIR/step_tp${TP}_dp2_70b_${GPUS}gpu.csv"
fi
step_check "step_fsdp_$GPUS" 100 --layout fsdp --layers 4 --seqs 4096,8192 \
  --out "$OUT_DIR/step_fsdp_${GPUS}gpu.csv"
stop_telemetry
log "run_x8 done in $SECONDS s"
# A device call returns a limited number of files: pack them into one.
tar -czf "$OUT_DIR.tgz" -C "$OUT_DIR" . && rm -rf "$OUT_DIR"
