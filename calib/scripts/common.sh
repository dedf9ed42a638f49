# Shared pieces of the calibration run scripts; sourced, not run. After setting OUT_DIR:
#   source "$(dirname "$0")/common.sh"; calib_start NAME
# gives ROOT, BUILD, the NVLS-off environment, log, step, telemetry, build_probes, nccl_suite,
# attention_passes and gemm_plane_steps.
# Nothing here changes GPU clocks or settings.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${PROBE_BUILD_DIR:-$ROOT/build-probes}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
TELE_FIELDS=timestamp,index,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active
TELE_PID=

# calib_start NAME: creates OUT_DIR; the run's log is OUT_DIR/NAME.log.
calib_start() {
  mkdir -p "$OUT_DIR"
  LOG=$OUT_DIR/$1.log
}

# calib_start_device_call NAME TELEMETRY: calib_start NAME, a deadline 560 s from now (unless
# CALIB_DEADLINE is set: one device call allows 600 s) and GPU 0's telemetry every second in
# OUT_DIR/telemetry_TELEMETRY.csv until stop_telemetry.
calib_start_device_call() {
  calib_start "$1"
  CALIB_DEADLINE=${CALIB_DEADLINE:-$(($(date +%s) + 560))}
  start_telemetry "$OUT_DIR/telemetry_$2.csv" 1000 -i 0
}

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }

# step NAME TIMEOUT_S CMD...: runs CMD with a time limit, its output in OUT_DIR/NAME.log, and
# logs its exit status and duration. With CALIB_DEADLINE (epoch seconds) set, the limit shrinks
# to the time left before it, and a step with none left is skipped (logged as rc=124).
step() {
  local name=$1 limit=$2; shift 2
  if [[ -n ${CALIB_DEADLINE:-} ]]; then
    local left=$((CALIB_DEADLINE - $(date +%s)))
    ((left < limit)) && limit=$left
    if ((limit < 5)); then
      log "$name: rc=124 in 0 s (skipped: deadline)"
      return
    fi
  fi
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$OUT_DIR/$name.log" 2>&1
  log "$name: rc=$? in $((SECONDS - t0)) s"
}

# start_telemetry FILE INTERVAL_MS [nvidia-smi args]: clocks, power and temperature in the
# background until stop_telemetry.
start_telemetry() {
  local file=$1 ms=$2; shift 2
  nvidia-smi --query-gpu=$TELE_FIELDS --format=csv -lms "$ms" "$@" >"$file" 2>&1 &
  TELE_PID=$!
}
stop_telemetry() { [[ -n $TELE_PID ]] && kill "$TELE_PID" 2>/dev/null; TELE_PID=; }

# build_probes: configures and builds calib/probes into BUILD (log: OUT_DIR/build.log); on
# failure prints the log's tail, stops the telemetry and exits.
build_probes() {
  if cmake -S "$ROOT/calib/probes" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$OUT_DIR/build.log" 2>&1 &&
     cmake --build "$BUILD" -j 16 >>"$OUT_DIR/build.log" 2>&1; then
    log "build: rc=0"
    return
  fi
  log "build failed"
  tail -30 "$OUT_DIR/build.log" >&2
  stop_telemetry
  exit 1
}

# nccl_suite full|smoke [probe args...]: the NCCL probe over both GPUs, one process per setting:
# NCCL's default (all collectives, with its TUNING log), Ring x LL/LL128/Simple (all_reduce,
# all_gather, reduce_scatter) and Tree x LL/LL128/Simple (all_reduce; smoke: Tree/LL only).
nccl_suite() {
  local grid=$1; shift
  step nccl_default 150 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING \
    "$BUILD/probe_nccl" --collectives all_reduce,all_gather,reduce_scatter,all_to_all,sendrecv,send \
    "$@" --out "$OUT_DIR/nccl_default.csv"
  local proto p
  for proto in LL LL128 Simple; do
    p=$(echo "$proto" | tr 'A-Z' 'a-z')
    step "nccl_ring_$p" 150 env NCCL_ALGO=Ring NCCL_PROTO=$proto "$BUILD/probe_nccl" \
      --collectives all_reduce,all_gather,reduce_scatter "$@" --out "$OUT_DIR/nccl_ring_$p.csv"
    [[ $grid == smoke && $proto != LL ]] && continue
    step "nccl_tree_$p" 150 env NCCL_ALGO=Tree NCCL_PROTO=$proto "$BUILD/probe_nccl" \
      --collectives all_reduce "$@" --out "$OUT_DIR/nccl_tree_$p.csv"
  done
}

# nccl_choice_table: NCCL's algorithm/protocol choice per call of the default run, read off its
# TUNING log (calib/scripts/nccl_choices.py), into OUT_DIR/nccl_default_algo_choice.csv; keeps the
# init part of the log and the first 2000 TUNING lines, and drops the rest (megabytes).
nccl_choice_table() {
  local raw=$OUT_DIR/nccl_default.log
  [[ -f $raw ]] || return
  grep -v ' Bytes -> Algo ' "$raw" >"$OUT_DIR/nccl_default_init.log"
  if python3 "$ROOT/calib/scripts/nccl_choices.py" "$raw" "$(date -u +%F)" \
    "$(grep -m1 -o 'NCCL version [0-9.]*' "$raw" | cut -d' ' -f3)" \
    >"$OUT_DIR/nccl_default_algo_choice.csv"; then
    grep -m 2000 ' Bytes -> Algo ' "$raw" >"$OUT_DIR/nccl_default_tuning_head.log"
    rm -f "$raw"
  else
    log "nccl_choices failed; nccl_default.log kept"
  fi
}

# attention_passes NAME LIMIT_S PASS... -- ARGS: attention.py on GPU 0 once per pass, after 30 s of
# heater matmuls, budget 0.5 s a point (runs 10, 47, 58, 63), into OUT_DIR/NAME_PASS.csv.
attention_passes() {
  local name=$1 limit=$2 pass; shift 2
  local passes=()
  while [[ $1 != -- ]]; do passes+=("$1"); shift; done
  shift
  for pass in "${passes[@]}"; do
    step "${name}_$pass" "$limit" python3 "$ROOT/calib/probes/attention.py" --device 0 \
      --point-budget 0.5 --heat-s 30 "$@" --out "$OUT_DIR/${name}_$pass.csv"
  done
}

# gemm_plane_steps PREFIX LIMIT BF16_SHAPES FP8_SHAPES COMBOS: one probe_gemm grid process per
# layout of COMBOS (comma-separated: bf16:fwd bf16:dgrad bf16:wgrad fp8:tn fp8:tn_fastacc), each
# after HEAT_S (default 15) s of heater GEMMs, limited to LIMIT s, writing
# OUT_DIR/PREFIX_<layout>.csv; FP8 TN takes FP8_SHAPES, the others BF16_SHAPES ("m:n:k,...").
gemm_plane_steps() {
  local prefix=$1 limit=$2 bf16=$3 fp8=$4 combos=$5 combo name
  local g="$BUILD/probe_gemm --mode grid --device 0 --pool-gib 48 --heat-s ${HEAT_S:-15}"
  for combo in ${combos//,/ }; do
    name=${combo/:/_}
    case $combo in
      fp8:tn) step "${prefix}_$name" "$limit" $g --combos fp8:tn --shapes "$fp8" \
                --out "$OUT_DIR/${prefix}_$name.csv" ;;
      fp8:tn_fastacc) step "${prefix}_$name" "$limit" $g --combos fp8:tn --fast-accum 1 \
                        --shapes "$bf16" --out "$OUT_DIR/${prefix}_$name.csv" ;;
      bf16:*) step "${prefix}_$name" "$limit" $g --combos "$combo" --shapes "$bf16" \
                --out "$OUT_DIR/${prefix}_$name.csv" ;;
      *) log "unknown combo $combo" ;;
    esac
  done
}
