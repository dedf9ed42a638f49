#!/usr/bin/env bash
# Regenerates the seed studies of docs/scaling-and-sweeps.md (CSV, SVG, JSON in docs/studies/).
# Usage, from the repository root after building: bash docs/studies/make_studies.sh [build dir]
set -euo pipefail
B=${1:-build}
D=docs/studies
# The three scaling studies with --uncertainty: each point also at both ends of the cost model's
# stated uncertainty (the MFU band of the plots; docs/cost-model.md).
# Llama3-70B weak scaling, 64 -> 2,048 H100 (S0 layout TP4 PP2 CP2), beside S0's measured MFU.
"$B"/clustersim scale "$D"/llama3_70b_weak.yaml --gpus 64,128,256,512,1024,2048 --mode weak --uncertainty \
  --csv "$D"/llama3_70b_weak.csv --svg "$D"/llama3_70b_weak.svg \
  --measured-case s0_llama3_70b_64_bf16 --measured-case s0_llama3_70b_2048_bf16 \
  --title "Llama3-70B BF16 on H100, weak scaling (TP4 PP2 CP2 VP5)"
# Llama3-405B weak scaling, 576 -> 2,304 H100 (DGX Cloud recipe TP8 PP9 CP2 VP7), beside S0.
"$B"/clustersim scale "$D"/llama3_405b_weak.yaml --gpus 576,1152,2304 --mode weak --uncertainty \
  --csv "$D"/llama3_405b_weak.csv --svg "$D"/llama3_405b_weak.svg \
  --measured-case s0_llama3_405b_576_2304_bf16 \
  --title "Llama3-405B BF16 on H100, weak scaling (TP8 PP9 CP2 VP7)"
# The same recipe from 576 to 16,128 H100 at a fixed 16.5M-token batch (strong scaling), with
# energy, cost and the 15.6T-token training run with failures.
"$B"/clustersim scale "$D"/llama3_405b_16k.yaml --gpus 576,1152,2304,4608,16128 --mode strong --uncertainty \
  --csv "$D"/llama3_405b_16k.csv --svg "$D"/llama3_405b_16k.svg \
  --title "Llama3-405B BF16 on H100 to 16,128 GPUs, 16.5M-token batch: MFU, strong scaling, goodput"
# Llama-3.1-8B on 8 H200 vs 8 B200, seq 8K-256K (ZeRO-3, full recompute, CPU offload), and
# the ZeRO-2 8K point: simulated beside case s3_* (TFLOP/s, B200/H200 ratio, peak memory).
"$B"/clustersim validate --case s3_llama31_8b_seq_sweep --case s3_llama31_8b_8k_zero2 \
  --plot "$D" --json "$D"/s3_llama31_8b.json
# DeepSeek-V3 on 2,048 H100 (its report's layout): token dispatcher, FP8 recipe, recompute.
"$B"/clustersim sweep "$D"/deepseek_v3_sweep.yaml --gpus 2048 \
  --space dispatcher=alltoall,deepep fp8_recipe=delayed,blockwise recompute_method=uniform,block \
  recompute_layers=1,2,4 --csv "$D"/deepseek_v3_sweep.csv
# Which layout for Llama3-70B on 2,048 H100: a sweep pruned by the memory model.
"$B"/clustersim sweep "$D"/llama3_70b_sweep.yaml --gpus 2048 --space tp=2,4,8 pp=2,4,8 vp=1,5 cp=1,2 \
  --csv "$D"/llama3_70b_sweep.csv
# DeepSeek-V3 on 1,536 H200 (PP3 VP7 EP64): Megatron-core's combined 1F1B and delayed wgrads.
"$B"/clustersim sweep "$D"/deepseek_v3_combined.yaml --gpus 1536 \
  --space dispatcher=alltoall,deepep ep_overlap=false,true delay_wgrad=false,true \
  -j 2 --csv "$D"/deepseek_v3_combined.csv
# The same layout: full recompute, or no recompute with fine-grained activation offloading,
# with and without the combined 1F1B.
"$B"/clustersim sweep "$D"/deepseek_v3_offload.yaml --gpus 1536 \
  --space recompute=none,full offload=none,expert_fc1+moe_act,core_attn+attn_proj+mlp_norm+expert_fc1+moe_act \
  ep_overlap=false,true -j 2 --csv "$D"/deepseek_v3_offload.csv
# Which pipeline schedule for Llama3-70B on 2,048 H100 at a small batch: 1F1B, zero-bubble
# ZB-H1 and the interleaved schedule at PP4 and PP8.
"$B"/clustersim sweep "$D"/llama3_70b_schedules.yaml --gpus 2048 \
  --space pp=4,8 schedule=1f1b,zb_h1,interleaved vp=1,2,5 -j 2 --csv "$D"/llama3_70b_schedules.csv
# Llama3-405B FP8 on 16 NVL72 racks, GB200 against GB300 (Blackwell Ultra): the same sweep on both.
for p in gb200 gb300; do
  "$B"/clustersim sweep "$D"/llama3_405b_${p}_nvl72.yaml --gpus 1152 \
    --space tp=4,8 pp=1,2,4,8 vp=1,2,4 cp=1,2 -j 2 --csv "$D"/llama3_405b_${p}_nvl72.csv
done
