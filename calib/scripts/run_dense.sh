#!/usr/bin/env bash
# Run 7 (2026-11-30): denser size axes where the leave-one-out check (clustersim calib check)
# missed at kinks and at the edges of the tables, on a 2x H200 machine:
#  - GPU 1: attention (PyTorch SDPA, cuDNN and flash) with seq from 512 in 1.5x/2x steps;
#  - GPU 0 meanwhile: memory-bound kernels, 32 KiB..4 GiB in 1.5x/2x steps;
#  - then NCCL over both GPUs, 512 B..4 GiB in 1.5x/2x steps, 0.5 s per size, one process per
#    NCCL_ALGO/NCCL_PROTO setting, and the algorithm choice of the default run from its log.
# run_all.sh uses the same axes; this script re-measures only these tables.
# Usage: calib/scripts/run_dense.sh RESULTS_DIR [all|nccl]. Never changes GPU clocks or settings.
set -uo pipefail
OUT_DIR=${1:?usage: run_dense.sh RESULTS_DIR [all|nccl]}
PARTS=${2:-all}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PROBE_BUILD_DIR:-$ROOT/build-probes}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/run_dense.log
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$OUT_DIR/$name.log" 2>&1
  log "$name: rc=$? in $((SECONDS - t0)) s"
}
nvidia-smi --query-gpu=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active \
  --format=csv -lms 500 >"$OUT_DIR/telemetry_dense.csv" 2>&1 &
TELE_PID=$!
cmake -S "$ROOT/calib/probes" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$OUT_DIR/build.log" 2>&1 &&
  cmake --build "$BUILD" -j 16 >>"$OUT_DIR/build.log" 2>&1 || { log "build failed"; kill "$TELE_PID"; exit 1; }
MEM_BYTES=$(python3 "$ROOT/calib/scripts/sizes.py" 32768 4294967296)
NCCL_BYTES=$(python3 "$ROOT/calib/scripts/sizes.py" 512 4294967296)
if [[ $PARTS == all ]]; then
step attention 420 python3 "$ROOT/calib/probes/attention.py" --device 1 --grid full --point-budget 0.5 \
  --out "$OUT_DIR/attention.csv" &
P1=$!
step membound 120 "$BUILD/probe_membound" --device 0 --bytes "$MEM_BYTES" --out "$OUT_DIR/membound.csv"
wait $P1
fi
nccl() {  # nccl TAG "ENV..." COLLECTIVES
  step "nccl_$1" 150 env $2 "$BUILD/probe_nccl" --collectives "$3" --bytes "$NCCL_BYTES" \
    --size-budget 0.5 --out "$OUT_DIR/nccl_$1.csv"
}
nccl default "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING" \
  all_reduce,all_gather,reduce_scatter,all_to_all,sendrecv,send
for proto in LL LL128 Simple; do
  p=$(echo $proto | tr 'A-Z' 'a-z')
  nccl "ring_$p" "NCCL_ALGO=Ring NCCL_PROTO=$proto" all_reduce,all_gather,reduce_scatter
  nccl "tree_$p" "NCCL_ALGO=Tree NCCL_PROTO=$proto" all_reduce
done
grep -v ' Bytes -> Algo ' "$OUT_DIR/nccl_default.log" >"$OUT_DIR/nccl_default_init.log"
if python3 "$ROOT/calib/scripts/nccl_choices.py" "$OUT_DIR/nccl_default.log" "$(date -u +%F)" \
  "$(grep -m1 -o 'NCCL version [0-9.]*' "$OUT_DIR/nccl_default.log" | cut -d' ' -f3)" \
  >"$OUT_DIR/nccl_default_algo_choice.csv"; then
  # The per-call TUNING lines run to megabytes: keep the first 2000 for the record.
  grep -m 2000 ' Bytes -> Algo ' "$OUT_DIR/nccl_default.log" >"$OUT_DIR/nccl_default_tuning_head.log"
  rm -f "$OUT_DIR/nccl_default.log"
else
  log "nccl_choices failed; nccl_default.log kept"
fi
kill "$TELE_PID" 2>/dev/null
log "run_dense done in $SECONDS s"
