#include "workloads/memory.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>
#include <stdexcept>

#include "workloads/activation_offload.hpp"
#include "workloads/dp_buckets.hpp"
#include "workloads/dp_sync.hpp"
#include "workloads/flops.hpp"
#include "workloads/job_checks.hpp"
#include "workloads/layer_memory.hpp"
#include "workloads/stage_layout.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;
constexpr double kBf16 = kBf16Bytes;
// Adam with BF16 parameters: FP32 master weight, first and second moment (Megatron-LM
// docs/source/api-guide/dist_optimizer.md: 12 bytes per parameter, sharded over DP with the
// distributed optimizer).
constexpr double kOptimizerBytes = 12.0;
// With Megatron's use_precision_aware_optimizer, Transformer Engine's FusedAdam keeps the master
// weight as the 16-bit remainder of the FP32 value beside the BF16 parameter
// (megatron/core/optimizer/optimizer_config.py: store_param_remainders defaults to True; TE
// >= 2.1): 2 + 4 + 4 bytes per parameter.
constexpr double kOptimizerBytesRemainders = 10.0;
// Measured on an H200 (CUDA 13.0, PyTorch 2.11, NCCL 2.28.9, NVLS off) with
// workloads/probes/memory_overheads.py; device memory outside PyTorch's allocator:
//  - CUDA context with PyTorch loaded: 523 MiB; cuBLAS workspace and kernels: 66 MiB;
//  - NCCL: 446 MiB once per process, 486 MiB per communicator running collectives, and 384 MiB
//    more per communicator that runs point-to-point or all-to-all (its P2P connections).
constexpr double kCudaContextBytes = 523.0 * kMiB;
constexpr double kCublasBytes = 66.0 * kMiB;
constexpr double kNcclProcessBytes = 446.0 * kMiB;
constexpr double kNcclCommunicatorBytes = 486.0 * kMiB;
constexpr double kNcclP2pBytes = 384.0 * kMiB;
// PyTorch caching allocator: reserved / allocated peak over a Llama-shaped training loop (4
// layers of h 4096, seq 8192, AdamW), measured with the same probe from the second step on:
// 1.108 with the default allocator, 1.024 with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.
// Applied to all tensor memory as an explicit factor.
constexpr double kFragmentation = 1.108;
constexpr double kFragmentationExpandable = 1.024;

double d(std::int64_t v) { return static_cast<double>(v); }

// True when `stage` holds a MoE layer: one of its chunks' decoder layers, or on the last stage
// an MTP depth's layer (a MoE layer when the decoder's last is). A stage of dense layers only
// (DeepSeek-V3's first stage) never dispatches tokens nor holds experts.
bool stage_has_moe(const WorkloadSpec& spec, int stage) {
  const ModelSpec& m = spec.model;
  if (m.experts <= 0) return false;
  if (stage == spec.parallel.pp - 1 && m.mtp_layers > 0 && m.is_moe_layer(m.layers)) return true;
  for (const LayerRange& chunk : stage_chunks(m, spec.parallel, stage)) {
    for (int l = chunk.begin; l < chunk.end; ++l) {
      if (m.is_moe_layer(l)) return true;
    }
  }
  return false;
}

// NCCL communicators a rank of `stage` uses, and their memory. PyTorch creates a group's NCCL
// communicator at its first collective (lazy init), so a stage without MoE layers, which never
// runs the EP all-to-all nor reduces expert gradients, does not pay for the EP, ETP and EDP
// communicators.
double nccl_bytes(const WorkloadSpec& spec, int stage) {
  const ParallelSpec& p = spec.parallel;
  const bool moe = stage_has_moe(spec, stage);
  int collective = 0, p2p = 0;
  collective += p.tp > 1;
  collective += spec.dp_cp() > 1;
  // Megatron's amax reduction group (tp x cp x dp), a process group of its own that Transformer
  // Engine's FP8 amax all-reduces use (generator.cpp, AmaxReductions).
  collective += fp8_amax_reduced(spec);
  p2p += p.cp > 1;    // ring attention exchanges K/V point to point
  p2p += p.pp > 1;
  if (moe) {
    collective += p.ep > 1;
    p2p += p.ep > 1;  // all-to-all connections
    collective += p.etp > 1;
    collective += spec.edp() > 1 && spec.edp() != spec.dp_cp();
  }
  collective += spec.model.embedding_on_last_stage() && p.pp > 1 && (stage == 0 || stage == p.pp - 1);
  if (collective + p2p == 0) return 0.0;
  // A point-to-point group is a communicator of its own.
  return kNcclProcessBytes + kNcclCommunicatorBytes * (collective + p2p) + kNcclP2pBytes * p2p;
}

// Elements of the transformer-layer GEMM weights among `params` (what runs in FP8 with fp8).
// Transformer Engine keeps an FP8 copy of each such weight and of its transpose from the first
// microbatch of a step to the last (Megatron passes is_first_microbatch, which turns TE's FP8
// weight cache on: transformer_engine/pytorch/module/base.py, get_weight_workspace), so FP8
// training holds 2 bytes per element more than BF16.
double linear_weight_elements(const std::vector<ParamInfo>& params) {
  double n = 0.0;
  for (const auto& prm : params) {
    if (is_linear_weight(prm)) n += d(prm.numel);
  }
  return n;
}

// PyTorch FSDP2 (fully_shard per unit with MixedPrecisionPolicy(param_dtype=bfloat16)), at its
// peak, the start of the backward: the FP32 parameter shards (the master weights; AdamW steps
// them in place), AdamW's FP32 moments, the BF16 parameters of the unit in use and of the one
// prefetched, and the BF16 gradients of the unit in its backward before their reduce-scatter.
// No gradient shards: zero_grad(set_to_none=True), PyTorch's default, frees them after every
// step and the backward re-creates them unit by unit while it frees that unit's activations
// (measured: calibration run 23's FSDP2 steps, tests/tools/test_step_check.cpp).
void add_fsdp2_states(double shard, double largest, double second, std::vector<MemoryComponent>& out) {
  constexpr double kFp32 = 4.0;
  out.push_back({"weights", kFp32 * shard, "FSDP2: FP32 parameter shard, the master weights: 4 B x params / (dp*cp)"});
  out.push_back({"weight_gather_buffers", kBf16 * (largest + second),
                 "FSDP2: BF16 parameters of the unit in use and of the one prefetched"});
  out.push_back({"gradients", 0.0, "FSDP2: gradient shards freed by zero_grad(set_to_none=True); "
                                   "re-created in the backward as activations are freed"});
  out.push_back({"gradient_buffers", kBf16 * largest,
                 "FSDP2: BF16 gradients of the unit in its backward, before reduce-scatter"});
  out.push_back({"optimizer_states", 2.0 * kFp32 * shard, "AdamW: FP32 first and second moments = 8 B x params / (dp*cp)"});
}

// Parameters of the two largest ZeRO-3 units (layer, embedding or head) among `params`: the
// one in use and the one gathered ahead of it.
std::pair<double, double> two_largest_units(const std::vector<ParamInfo>& params) {
  std::map<int, double> units;
  for (const auto& prm : params) {
    const bool embedding = prm.group == ParamGroup::WordEmbedding || prm.group == ParamGroup::PositionEmbedding;
    units[prm.layer >= 0 ? prm.layer : (embedding ? kEmbeddingUnit : kHeadUnit)] += d(prm.numel);
  }
  double largest = 0.0, second = 0.0;
  for (const auto& [id, numel] : units) {
    if (numel > largest) {
      second = largest;
      largest = numel;
    } else {
      second = std::max(second, numel);
    }
  }
  return {largest, second};
}

// Weights, gradients and optimizer states of the stage's parameters on one rank.
void add_states(const WorkloadSpec& spec, int stage, std::vector<MemoryComponent>& out) {
  const ParallelSpec& p = spec.parallel;
  const auto params = stage_parameters(spec, stage);
  const StageParamCount n = count_params(params);
  const double all = n.dense + n.expert;
  const double shard = n.dense / spec.dp_cp() + n.expert / spec.edp();
  const double grad = p.grad_reduce_in_fp32 ? 4.0 : 2.0;
  const auto [largest, second] = two_largest_units(params);
  if (p.zero_stage == 3 && p.zero_impl == ZeroImpl::Fsdp2) {
    add_fsdp2_states(shard, largest, second, out);
    return;
  }
  if (p.zero_stage == 3) {
    out.push_back({"weights", kBf16 * shard, "BF16 parameter shard: 2 B x params / (dp*cp) (experts / edp)"});
    out.push_back({"weight_gather_buffers", 2.0 * kBf16 * largest,
                   "ZeRO-3: two units gathered (the one in use and the prefetched one)"});
  } else {
    // With fp8_param_gather (TE fp8_model_init) the layer GEMM weights are themselves FP8 (1 B
    // in Megatron's parameter buffer) and TE caches only their transpose; otherwise TE caches an
    // FP8 copy and its transpose from the first microbatch of a step to the last.
    const double linear = linear_weight_elements(params);
    const bool fp8_params = p.fp8_param_gather;
    out.push_back({"weights", kBf16 * all - (fp8_params ? linear : 0.0),
                   fp8_params ? "parameters: FP8 layer GEMM weights (1 B, fp8_param_gather), BF16 others (2 B)"
                              : "BF16 parameters: 2 B x params on this rank"});
    if (spec.training.precision == Precision::FP8) {
      out.push_back({"fp8_weight_caches", (fp8_params ? 1.0 : 2.0) * linear,
                     fp8_params ? "FP8 transposes of the FP8 layer GEMM weights (TE caches them "
                                  "across microbatches): 1 B x linear params"
                                : "FP8 copies of the layer GEMM weights and their transposes (TE "
                                  "caches them across microbatches): 2 B x linear params"});
    }
  }
  if (p.zero_stage <= 1) {
    out.push_back({"gradients", grad * all, "gradient buffer (FP32 with grad_reduce_in_fp32) for all params"});
  } else {
    out.push_back({"gradients", grad * shard, "gradient shard: params / (dp*cp) (experts / edp)"});
    const double bucket = p.zero_stage == 2
                              ? std::min(all, static_cast<double>(default_bucket_size(p.dp)))
                              : largest;
    out.push_back({"gradient_buffers", 2.0 * grad * bucket,
                   p.zero_stage == 2 ? "ZeRO-2: two gradient buckets being filled and reduce-scattered"
                                     : "ZeRO-3: full gradients of two units before reduce-scatter"});
  }
  const bool offload = p.optimizer_offload == OptimizerOffload::Cpu;
  const double opt_params = p.zero_stage == 0 ? all : shard;
  const bool remainders = optimizer_param_remainders(spec);
  out.push_back({"optimizer_states",
                 offload ? 0.0 : (remainders ? kOptimizerBytesRemainders : kOptimizerBytes) * opt_params,
                 offload      ? "offloaded to host memory"
                 : remainders ? "Adam: 16-bit master remainder + 2 FP32 moments = 10 B x params "
                                "(precision-aware optimizer; sharded with ZeRO >= 1)"
                 : p.precision_aware_optimizer
                     ? "Adam: FP32 master + 2 moments = 12 B x params (sharded with ZeRO >= 1; the "
                       "precision-aware optimizer keeps no remainders under FP8 current scaling)"
                     : "Adam: FP32 master + 2 moments = 12 B x params (sharded with ZeRO >= 1)"});
}

// Pinned host memory of activation offloading at the stage's peak: the offloaded groups' bytes
// of every chunk-microbatch held, by the same play of the schedule as the activations (the
// groups Megatron keeps on the GPU are counted too: a slight overcount).
double host_offload_bytes(const WorkloadSpec& spec, int stage) {
  if (spec.training.offload_modules.empty()) return 0.0;
  return in_flight(spec, stage, chunk_copied_bytes(spec, stage_chunks(spec.model, spec.parallel, stage))).bytes;
}

// What one stage's chunks keep: per chunk, one microbatch's activations and its deferred
// weight-gradient inputs; over all layers, the largest working set of a layer's backward.
struct ChunkActivations {
  std::vector<double> per_chunk, per_chunk_w;
  double working = 0.0;
};

ChunkActivations chunk_activations(const WorkloadSpec& spec, int stage, const LayerShape& x,
                                   const std::vector<LayerRange>& chunks) {
  const Recompute recompute = spec.training.recompute;
  ChunkActivations a;
  double& working = a.working;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    double bytes = 0.0;
    // Full recompute keeps each group's checkpointed input (recompute_groups) and re-creates
    // the group's layers before the backward of its last: at the peak of layer l's backward the
    // group's layers up to l are alive. Layers outside every group (method block) keep all
    // their activations; an MTP depth's layer is checkpointed alone.
    const std::vector<LayerRange> groups = recompute_groups(spec.training, chunks[c]);
    auto add_layer = [&](int l) {
      int first = l;  // first layer of l's recompute group; -1 when l is not recomputed
      if (l < spec.model.layers) {
        const LayerRange* g = recompute_group_of(groups, l);
        first = g != nullptr ? g->begin : -1;
      } else if (recompute != Recompute::Full) {
        first = -1;
      }
      double ws = backward_transients(spec, x, l);
      // Recomputed modules' activations live again while their part of the backward runs.
      const RecomputedBytes again = recomputed_module_bytes(spec, x, l);
      ws += std::max(again.attention, again.mlp);
      if (first < 0) {
        bytes += layer_activation_bytes(spec, l, recompute == Recompute::Full ? Recompute::None : recompute);
      } else {
        if (first == l) bytes += layer_activation_bytes(spec, l, Recompute::Full);
        for (int k = first; k <= l; ++k) ws += layer_activation_bytes(spec, k, Recompute::None);
        ws -= freed_before_peak(spec, x, l);
      }
      working = std::max(working, ws);
    };
    for (int l = chunks[c].begin; l < chunks[c].end; ++l) add_layer(l);
    // The MTP depths after the decoder, on the last chunk of the last stage: each depth's layer
    // and what its projection keeps (the checkpointed embedding and hidden state under full
    // recompute; else the two norm inputs and eh_proj's sequence-parallel input shard, 2h wide).
    if (stage == spec.parallel.pp - 1 && c + 1 == chunks.size()) {
      for (std::int64_t depth = 0; depth < spec.model.mtp_layers; ++depth) {
        add_layer(static_cast<int>(spec.model.layers + depth));
        bytes += kBf16 * x.tsp * x.h * (recompute == Recompute::Full ? 2.0 : 4.0);
      }
    }
    double w = 0.0;
    for (int l = chunks[c].begin; l < chunks[c].end; ++l) {
      bytes -= layer_offload(spec, l).freed;
      w += deferred_wgrad_bytes(spec, x, l);
    }
    a.per_chunk.push_back(bytes);
    a.per_chunk_w.push_back(w);
  }
  return a;
}

// The last stage's logits and the communication buffers of context and expert parallelism.
void add_logits_and_buffers(const WorkloadSpec& spec, int stage, const LayerShape& x,
                            int last_chunk_max, std::vector<MemoryComponent>& out) {
  const ParallelSpec& p = spec.parallel;
  if (stage == p.pp - 1) {
    // One microbatch's loss at its backward's peak, the others of the last chunk in flight
    // holding what their forward kept.
    // The main head's logits and each MTP depth's.
    const double logits = x.t * d(x.s.vocab) * d(1 + spec.model.mtp_layers);
    const LogitBytes per = logit_bytes_per_element(spec.training.cross_entropy);
    out.push_back({"logits", logits * (per.peak + per.kept * (std::max(1, last_chunk_max) - 1)),
                   std::string("output logits, cross entropy ") + to_string(spec.training.cross_entropy)});
  }
  double buffers = 0.0;
  if (p.cp > 1) {
    const std::int64_t kv = x.s.q_up_out > 0 ? x.s.heads : x.s.kv_heads;
    const double block = kBf16 * x.t * d(kv * (x.s.head_dim + x.s.v_head_dim));
    if (p.cp_comm_type == CpCommType::AllGather) {
      buffers += d(p.cp) * block;  // the gathered K/V of the whole sequence
    } else if (p.cp_comm_type == CpCommType::A2a) {
      buffers += block + kBf16 * x.t * d(x.s.heads * x.s.head_dim);  // exchanged q, k, v
    } else {
      buffers += 2.0 * block;  // ring: the K/V block being received next to the one in use
    }
  }
  if (p.ep > 1 && stage_has_moe(spec, stage)) {
    // All-to-all send and receive buffers of the routed token copies, on stages that dispatch.
    buffers += 2.0 * kBf16 * d(x.s.moe_tokens * spec.model.top_k) * x.s.expert_load * x.h;
  }
  out.push_back({"comm_buffers", buffers,
                 "context-parallel K/V buffers (ring: two blocks; all_gather: the gathered K/V; "
                 "a2a: the exchanged q, k, v), MoE all-to-all buffers"});
}

// Activations in flight, the working set of the layer in backward, logits and buffers.
void add_activations(const WorkloadSpec& spec, int stage, std::vector<MemoryComponent>& out,
                     int& in_flight_count) {
  const Recompute recompute = spec.training.recompute;
  const LayerShape x = layer_shape(spec);
  const auto chunks = stage_chunks(spec.model, spec.parallel, stage);
  const ChunkActivations a = chunk_activations(spec, stage, x, chunks);
  const InFlight flight = in_flight(spec, stage, a.per_chunk, a.per_chunk_w);
  in_flight_count = flight.count;
  if (flight.wgrad_bytes > 0.0) {
    out.push_back({"deferred_wgrads", flight.wgrad_bytes,
                   "weight-GEMM inputs and output gradients kept for the deferred W passes at the "
                   "peak (zero-bubble schedule)"});
  }
  out.push_back({"activations", flight.bytes - flight.wgrad_bytes,
                 spec.training.offload_modules.empty()
                     ? "per-layer activations (Korthikanti et al.) x microbatch-chunks in flight"
                     : "per-layer activations (Korthikanti et al.) less the offloaded modules' x "
                       "microbatch-chunks in flight"});
  if (!spec.training.offload_modules.empty()) {
    out.push_back({"activation_offload", offload_kept_on_gpu(spec, chunks),
                   "offloaded groups kept on the GPU: the last of each module of one chunk, and "
                   "one group reloaded ahead"});
  }
  out.push_back({"activation_working_set", a.working,
                 recompute == Recompute::Full
                     ? "recomputed layer + gradient tensors at the peak of its backward"
                     : "gradient tensors at the peak of a layer's backward"});
  add_logits_and_buffers(spec, stage, x, flight.last_chunk_max, out);
}

// ZeRO-3 without zero_init: the framework builds the model unpartitioned, moves it to the GPU
// and only then partitions it (DeepSpeed runtime/engine.py, _configure_distributed_model: a
// module not built under zero.Init is moved to the device before the ZeRO-3 optimizer
// partitions its parameters). What a rank builds is its own part of the model: with tp = pp =
// ep = 1 the whole model, with model parallelism its pipeline stage's layers, its TP shard and
// its local experts (Megatron builds only the local shards), i.e. the stage's parameters on
// this rank before the ZeRO sharding over dp. Until then the GPU holds 2 B per such parameter
// in the caching allocator, which keeps those blocks reserved. The peak is the larger of that
// and the training peak; the excess is charged as its own component. Called after
// fragmentation, so the components so far are the allocator's reserved bytes of the training peak.
void add_model_init(const WorkloadSpec& spec, int stage, std::vector<MemoryComponent>& components) {
  if (spec.parallel.zero_stage != 3 || spec.parallel.zero_init) return;
  double reserved = 0.0;
  for (const auto& c : components) reserved += c.bytes;
  const StageParamCount n = count_params(stage_parameters(spec, stage));
  const double built = kBf16 * (n.dense + n.expert);
  if (built <= reserved) return;
  char basis[200];
  std::snprintf(basis, sizeof basis,
                "the rank's unpartitioned BF16 model (%.2f GiB) on the GPU before ZeRO-3 "
                "partitions it (zero_init: false), above the training peak",
                built / kGiB);
  components.push_back({"model_init", built - reserved, basis});
}

}  // namespace

double StageMemory::total() const {
  double sum = 0.0;
  for (const auto& c : components) sum += c.bytes;
  return sum;
}

const MemoryComponent& StageMemory::dominant() const {
  return *std::max_element(components.begin(), components.end(),
                           [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
}

double StageMemory::bytes(const std::string& name) const {
  for (const auto& c : components) {
    if (c.name == name) return c.bytes;
  }
  return 0.0;
}

double MemoryReport::reserved_bytes() const {
  const StageMemory& w = worst();
  return w.total() - w.bytes("cuda_context") - w.bytes("nccl");
}

const StageMemory& MemoryReport::host_worst() const {
  const auto it = std::max_element(stages.begin(), stages.end(), [](const StageMemory& a, const StageMemory& b) {
    return a.host_bytes < b.host_bytes;
  });
  return it == stages.end() ? worst() : *it;
}

bool MemoryReport::host_fits() const {
  return host_capacity_bytes <= 0.0 || stages.empty() || host_worst().host_bytes <= host_capacity_bytes;
}

std::string MemoryReport::oom_message() const {
  if (fits()) return {};
  char text[320];
  if (peak_bytes() <= capacity_bytes) {
    const StageMemory& h = host_worst();
    std::snprintf(text, sizeof text,
                  "pipeline stage %d pins %.1f GiB of host memory per GPU for offloaded activations "
                  "but a GPU's share of its host is %.1f GiB: over by %.1f GiB",
                  h.stage, h.host_bytes / kGiB, host_capacity_bytes / kGiB,
                  (h.host_bytes - host_capacity_bytes) / kGiB);
    return text;
  }
  const StageMemory& w = worst();
  std::snprintf(text, sizeof text,
                "rank %d (pipeline stage %d) needs %.1f GiB but the GPU has %.1f GiB: over by %.1f "
                "GiB; the largest component is %s (%.1f GiB)",
                worst_rank, w.stage, w.total() / kGiB, capacity_bytes / kGiB,
                (w.total() - capacity_bytes) / kGiB, w.dominant().name.c_str(),
                w.dominant().bytes / kGiB);
  return text;
}

MemoryReport estimate_memory(const WorkloadSpec& spec, double hbm_capacity_bytes,
                             double host_capacity_bytes) {
  if (const auto v = find_violation(spec)) {
    throw std::invalid_argument("invalid workload spec: " + v->section + "." + v->key + ": " + v->reason);
  }
  MemoryReport report;
  report.capacity_bytes = hbm_capacity_bytes;
  report.host_capacity_bytes = host_capacity_bytes;
  const sim::RankLayout layout = rank_layout(spec);
  for (int stage = 0; stage < spec.parallel.pp; ++stage) {
    StageMemory m;
    m.stage = stage;
    add_states(spec, stage, m.components);
    add_activations(spec, stage, m.components, m.microbatches_in_flight);
    m.host_bytes = host_offload_bytes(spec, stage);
    const double tensors = m.total();
    const bool expandable = spec.training.expandable_segments;
    m.components.push_back({"fragmentation",
                            tensors * ((expandable ? kFragmentationExpandable : kFragmentation) - 1.0),
                            expandable ? "expandable segments: reserved/allocated 1.024, measured"
                                       : "caching allocator: reserved/allocated 1.108, measured"});
    add_model_init(spec, stage, m.components);
    m.components.push_back({"cuda_context", kCudaContextBytes + kCublasBytes,
                            "CUDA context 523 MiB + cuBLAS 66 MiB, measured"});
    m.components.push_back({"nccl", nccl_bytes(spec, stage),
                            "446 MiB + 486 MiB per communicator (+384 MiB with P2P), measured"});
    report.stages.push_back(std::move(m));
  }
  for (std::size_t s = 0; s < report.stages.size(); ++s) {
    if (report.stages[s].total() > report.worst().total()) report.worst_stage = static_cast<int>(s);
  }
  for (int rank = 0; rank < layout.world(); ++rank) {
    if (layout.coord(rank, sim::GroupKind::PP) == report.worst_stage) {
      report.worst_rank = rank;
      break;
    }
  }
  return report;
}

ParameterCount count_parameters(const ModelSpec& m) {
  ParameterCount c;
  const double norm = d(m.hidden) * (m.norm == NormKind::LayerNorm ? 2.0 : 1.0);
  double embedding = d(m.vocab) * d(m.hidden) * (m.tied_embeddings ? 1.0 : 2.0);
  if (m.position == PositionKind::Learned) embedding += d(m.max_position_embeddings) * d(m.hidden);
  c.total = c.active = embedding + norm;
  // Each MTP depth: enorm, hnorm and its final norm, eh_proj (2h x h), and its layer.
  const double mtp = 3.0 * norm + 2.0 * d(m.hidden) * d(m.hidden);
  c.total += d(m.mtp_layers) * mtp;
  c.active += d(m.mtp_layers) * mtp;
  for (std::int64_t l = 0; l < m.trained_layers(); ++l) {
    // qk_layernorm: a query and a key norm of head_dim each (Megatron-core's q/k_layernorm).
    const double qk_norms =
        m.qk_layernorm ? 2.0 * d(m.head_dim) * (m.norm == NormKind::LayerNorm ? 2.0 : 1.0) : 0.0;
    const double common = attention_linear_weights(m) + 2.0 * norm + qk_norms;
    if (m.is_moe_layer(l)) {
      const double router = d(m.hidden) * d(m.experts);
      const double shared = mlp_weights(m, m.shared_expert_ffn);
      c.total += common + router + shared + d(m.experts) * mlp_weights(m, m.expert_ffn);
      c.active += common + router + shared + d(m.top_k) * mlp_weights(m, m.expert_ffn);
    } else {
      c.total += common + mlp_weights(m, m.ffn);
      c.active += common + mlp_weights(m, m.ffn);
    }
  }
  return c;
}

}  // namespace clustersim::workloads
