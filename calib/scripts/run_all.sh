#!/usr/bin/env bash
# Builds and runs every calibration probe on a machine with 2 H200 GPUs (NVLink) in one device
# call: about 9 minutes (full) with a hard stop at 9.5 (CALIB_DEADLINE, calib/scripts/common.sh).
# calib/scripts/run_all.sh RESULTS_DIR [full|smoke] (smoke: about 2 minutes). Full runs the GEMM
# grids with n and k in 2x steps (343 points per layout); the committed grids have 1.5x points
# between (run_gemm_dense.sh, run_fastacc.sh), which one call cannot also fit.
#
# Phase 0: environment (nvidia-smi, topology, versions) and a telemetry log every 500 ms.
# Phase 1, in parallel: GPU 0 runs the GEMM probe (burst; BF16 fwd/dgrad and FP8 grids; catalog
#          shapes; sustained), the TP-overlap GEMMs (BF16 fwd and wgrad), the composition
#          probe and the context-parallel attention blocks (in GPU 0's ~55 s of slack against
#          GPU 1, run 14's timings); GPU 1 runs the attention probe (PyTorch SDPA, cuDNN and flash backends), the
#          BF16 wgrad and FP8 fast-accumulation grids, the memory-bound probe and the TP-overlap
#          GEMMs (BF16 dgrad and FP8).
# Phase 2: NCCL probe over both GPUs, one process per NCCL_ALGO/NCCL_PROTO setting.
# Phase 3: interference probe over both GPUs, at the sustained power state.
# Never changes clocks, power limits or other GPU settings. NVLink multicast stays off.
set -uo pipefail

OUT_DIR=${1:?usage: run_all.sh RESULTS_DIR [full|smoke]}
GRID=${2:-full}
source "$(dirname "$0")/common.sh"
PROBES=$ROOT/calib/probes
export CUBLASLT_LOG_MASK=5  # cuBLASLt errors and hints (why an algorithm is refused)
export CUBLASLT_LOG_FILE=${1:-.}/cublaslt_%i.log
calib_start run_all
export CALIB_DEADLINE=${CALIB_DEADLINE:-$(($(date +%s) + 570))}

# ---- Phase 0 --------------------------------------------------------------------------------
log "run_all $GRID start"
{
  date -u; uname -a; nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink -s
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE
  nvcc --version; cmake --version | head -1
  ls -l /usr/include/nccl.h /usr/lib/x86_64-linux-gnu/libnccl* 2>&1
  ls /usr/local/cuda/lib64 | grep -E 'cublasLt|cudnn|nccl'
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
  env | grep -E '^(NCCL|CUDA|TORCH|NVSHMEM)_' | sort
} >"$OUT_DIR/environment.txt" 2>&1
start_telemetry "$OUT_DIR/telemetry.csv" 500
build_probes

if [[ $GRID == smoke ]]; then
  GEMM_GRID=(--m 1024,4096 --nk 1024,4096); CUBES=4096; SUSTAIN=2; IDLE=0.5
  CATALOG=8192:6144:4096,8192:128256:4096
  MEM_BYTES=1048576,268435456; NCCL_BYTES=(--bytes 4096,1048576,268435456)
  ATT_GRID=smoke; INT_ARGS=(--sizes 16777216 --channels default,4 --compute-calls 10 --reps 2)
  COMP_ARGS=(--shards gpt3_175b_tp4_s2k --layers 2 --reps 3)
  TPO_SHAPES=2048:8192:8192,8192:8192:8192; TPO_VARIANTS=full,margin:16,split:4,split:4:16
else
  # m, n, k in powers of 2 (the probe's default axes); the 1.5x points: run_gemm_dense.sh
  GEMM_GRID=(--point-budget 0.2); CUBES=4096,8192,16384
  SUSTAIN=15; IDLE=2
  CATALOG=$(python3 "$ROOT/calib/scripts/catalog_shapes.py")
  # 32 KiB..4 GiB (memory-bound) and 512 B..4 GiB (NCCL) in steps of 2 with 1.5x points between
  MEM_BYTES=$(python3 "$ROOT/calib/scripts/sizes.py" 32768 4294967296)
  NCCL_BYTES=(--bytes "$(python3 "$ROOT/calib/scripts/sizes.py" 512 4294967296)" --size-budget 0.5)
  ATT_GRID=full; INT_ARGS=(--reps 3); COMP_ARGS=(--reps 5)
  TPO_SHAPES=$(python3 -c 'print(",".join(f"{m}:{n}:{k}" for m in (2048,4096,8192,16384) for n in (2048,4096,8192,16384) for k in (2048,4096,8192,16384)))')
  TPO_VARIANTS=full,margin:1,margin:2,margin:4,margin:8,margin:16,margin:24,margin:32,split:2,split:4,split:8,split:4:16,split:4:24
fi

# ---- Phase 1: GPU 0 GEMMs || GPU 1 attention, memory-bound -----------------------------------
gpu0() {
  step gemm_burst 120 "$BUILD/probe_gemm" --device 0 --mode burst --cubes "$CUBES" --idle "$IDLE" \
    --out "$OUT_DIR/gemm_burst.csv"
  step gemm_grid 480 "$BUILD/probe_gemm" --device 0 --mode grid "${GEMM_GRID[@]}" \
    --combos bf16:fwd,bf16:dgrad,fp8:tn --out "$OUT_DIR/gemm.csv"
  if ! grep -q '^fp8,' "$OUT_DIR/gemm.csv" 2>/dev/null; then  # FP8 through PyTorch instead
    step gemm_fp8_torch 150 python3 "$PROBES/gemm_fp8_torch.py" --device 0 "${GEMM_GRID[@]}" \
      --out "$OUT_DIR/gemm_fp8_torch.csv"
  fi
  step gemm_catalog 120 "$BUILD/probe_gemm" --device 0 --mode grid --combos bf16:fwd,fp8:tn \
    --shapes "$CATALOG" --point-budget 0.15 --out "$OUT_DIR/gemm_catalog.csv"
  step gemm_sustained 60 "$BUILD/probe_gemm" --device 0 --mode sustained --cubes 8192 --idle 0 \
    --seconds "$SUSTAIN" --out "$OUT_DIR/gemm_sustained.csv"
  step gemm_tp_overlap_fwd_wgrad 150 "$BUILD/probe_gemm_tp_overlap" --device 0 \
    --combos bf16:fwd,bf16:wgrad --shapes "$TPO_SHAPES" --variants "$TPO_VARIANTS" \
    --out "$OUT_DIR/gemm_tp_overlap_fwd_wgrad.csv"
  step composition 180 python3 "$PROBES/composition.py" --device 0 --heat-s 10 "${COMP_ARGS[@]}" \
    --out "$OUT_DIR/composition.csv"
  step attention_cp 120 python3 "$PROBES/attention_cp.py" --device 0 --grid "$ATT_GRID" \
    --heat-s 10 --point-budget 0.2 --out "$OUT_DIR/attention_cp.csv"
}
gpu1() {
  step attention 300 python3 "$PROBES/attention.py" --device 1 --grid "$ATT_GRID" --point-budget 0.3 \
    --heat-s 20 --out "$OUT_DIR/attention.csv"
  step gemm_grid_wgrad 240 "$BUILD/probe_gemm" --device 1 --mode grid "${GEMM_GRID[@]}" \
    --combos bf16:wgrad --out "$OUT_DIR/gemm_wgrad.csv"
  step gemm_fp8_fastacc 200 "$BUILD/probe_gemm" --device 1 --mode grid "${GEMM_GRID[@]}" \
    --combos fp8:tn --fast-accum 1 --out "$OUT_DIR/gemm_fp8_fastacc.csv"
  step membound 120 "$BUILD/probe_membound" --device 1 --bytes "$MEM_BYTES" \
    --out "$OUT_DIR/membound.csv"
  step gemm_tp_overlap_dgrad_fp8 150 "$BUILD/probe_gemm_tp_overlap" --device 1 \
    --combos bf16:dgrad,fp8:tn --shapes "$TPO_SHAPES" --variants "$TPO_VARIANTS" \
    --out "$OUT_DIR/gemm_tp_overlap_dgrad_fp8.csv"
}
gpu0 & P0=$!
gpu1 & P1=$!
wait $P0 $P1

# ---- Phase 2: NCCL, one process per algorithm/protocol --------------------------------------
nccl_suite "$GRID" "${NCCL_BYTES[@]}"
nccl_choice_table

# ---- Phase 3: interference ------------------------------------------------------------------
step interference 180 python3 "$PROBES/interference.py" --heat-s 10 "${INT_ARGS[@]}" \
  --out "$OUT_DIR/interference.csv"

stop_telemetry
python3 "$ROOT/calib/scripts/summarize.py" "$OUT_DIR" | tee "$OUT_DIR/summary.txt"
FAILED=$(grep -c 'rc=[1-9]' "$LOG")
log "run_all done in $SECONDS s; failed steps: $FAILED"
[[ $FAILED -eq 0 ]]
