#include "workloads/layer_memory.hpp"

#include <algorithm>
#include <cstdint>

#include "workloads/memory.hpp"
#include "workloads/schedule.hpp"

namespace clustersim::workloads {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

// Bytes per element of a transformer-layer GEMM input kept for the backward. With FP8,
// Transformer Engine's Linear saves the FP8 cast of its input for the weight gradient, not the
// BF16 tensor (transformer_engine/pytorch/module/linear.py, _Linear.forward: saved_inputmat /
// saved_inputmat_t are the FP8 tensors unless the recipe overrides wgrad precision); its
// LayerNormLinear likewise keeps the FP8 norm output.
double gemm_input_bytes(const WorkloadSpec& spec) {
  return spec.training.precision == Precision::FP8 ? 1.0 : kBf16Bytes;
}

// Bytes per element of q, k, v and the attention output: BF16, FP8 with fp8_attention.
double attention_tensor_bytes(const WorkloadSpec& spec) {
  return spec.training.fp8_attention ? 1.0 : kBf16Bytes;
}

// Selective recompute of the core attention under `recompute`: the job's recompute_modules
// decide when it is selective itself, else the default (core_attn).
bool core_attn_recomputed(const WorkloadSpec& spec, Recompute recompute) {
  if (recompute != Recompute::Selective) return false;
  return spec.training.recompute != Recompute::Selective || spec.training.recomputes(RecomputeModule::CoreAttn);
}

// Attention-block activations kept for the backward (bytes per microbatch on one rank).
double attention_bytes(const WorkloadSpec& spec, const LayerShape& x, Recompute recompute,
                       const ActivationOptions& opt) {
  const RankShapes& s = x.s;
  const double a = d(s.heads);
  const double gin = gemm_input_bytes(spec);
  const double att = attention_tensor_bytes(spec);
  double bytes = 0.0;
  if (spec.model.attention == AttentionKind::Mla) {
    // Input of the down projections, the latents (norm inputs, BF16, and up-projection
    // inputs, kept as sequence shards), then q, k, v expanded per head.
    bytes += gin * x.tsp * x.h + (kBf16Bytes + gin) * x.tsp * d(s.q_lora + s.kv_lora);
    bytes += att * x.t * a * d(2 * s.head_dim + s.v_head_dim);
  } else {
    bytes += gin * x.tin * x.h;  // QKV GEMM input (the norm output)
    bytes += att * x.t * d((s.heads + 2 * s.kv_heads) * s.head_dim);  // q, k, v
    // qk_layernorm: each norm keeps its BF16 input and an FP32 1/rms per row (Transformer
    // Engine's RMSNorm/LayerNorm save the input and rsigma; LayerNorm's mean adds 4 B more).
    if (spec.model.qk_layernorm) {
      const double stats = spec.model.norm == NormKind::LayerNorm ? 8.0 : 4.0;
      bytes += x.t * d(s.heads + s.kv_heads) * (kBf16Bytes * d(s.head_dim) + stats);
    }
  }
  // Attention output = projection input: one tensor, unless the projection runs in FP8 on a
  // BF16 output, when it keeps its own FP8 copy beside the output attention keeps.
  double out = att * x.t * a * d(s.v_head_dim);
  if (gin < att) out += gin * x.t * a * d(s.v_head_dim);
  if (opt.flash_attention) {
    // Flash attention keeps its output and the FP32 log-sum-exp per head and token; selective
    // recompute of the core attention drops the latter.
    bytes += out + (core_attn_recomputed(spec, recompute) ? 0.0 : 4.0 * x.t * a);
  } else {
    // Korthikanti et al.: softmax output (2 bytes), its dropout mask (1) and dropout output (2)
    // per score, a * s^2 * b scores; selective recompute drops them.
    const double scores = a * d(s.seq) * x.t;
    if (!core_attn_recomputed(spec, recompute)) bytes += (opt.dropout ? 5.0 : 2.0) * scores;
    bytes += out;
  }
  if (opt.dropout) bytes += x.tsp * x.h;  // projection dropout mask
  return bytes;
}

// A MoE block's activations by tensor (bytes per microbatch on one rank).
struct MoeBytes {
  double router_in = 0, probs = 0, experts = 0, fc2_in = 0, outputs = 0, shared = 0;
  double total() const { return router_in + probs + experts + outputs + shared; }
};

MoeBytes moe_bytes(const WorkloadSpec& spec, const LayerShape& x) {
  const RankShapes& s = x.s;
  const double gin = gemm_input_bytes(spec);
  const double rows = d(s.expert_rows);  // the busiest rank's received rows: x expert_load
  MoeBytes b;
  b.router_in = kBf16Bytes * x.tsp * x.h;  // router input (BF16 router GEMM): the norm output
  b.probs = 4.0 * d(s.moe_tokens) * d(s.experts);  // FP32 routing probabilities
  // Expert GEMM inputs (FP8 with fp8) and the activation input (BF16); fc2's input is the
  // activation's output.
  b.fc2_in = rows * gin * d(s.expert_ffn);
  b.experts = rows * (gin * x.h + kBf16Bytes * d(s.expert_fc1_out)) + b.fc2_in;
  // The combine returns this rank's own token copies (t_sp * top_k), whatever the load of the
  // ranks that computed them: the unpermuted outputs kept for the weighting's backward do not
  // grow with the imbalance (moe_ops.cpp, unpermute).
  b.outputs = kBf16Bytes * d(s.moe_tokens * spec.model.top_k) * x.h;
  b.shared = x.t * (kBf16Bytes * d(s.shared_fc1_out) + gin * d(s.shared_ffn));  // shared experts
  // Overlapped shared experts (moe_shared_expert_overlap) gather the sequence before their fc1
  // themselves (SharedExpertMLP.pre_forward_comm), so fc1 keeps the gathered input for its
  // weight gradient instead of the shard TE's sequence-parallel linear keeps and re-gathers.
  if (s.shared_overlap && s.sequence_parallel) b.shared += gin * x.t * x.h;
  return b;
}

// A dense MLP's activations: FC1 input (the norm output), activation input and FC2 input.
double dense_mlp_bytes(const WorkloadSpec& spec, const LayerShape& x) {
  const double gin = gemm_input_bytes(spec);
  return gin * x.tin * x.h + x.t * (kBf16Bytes * d(x.s.fc1_out) + gin * d(x.s.ffn));
}

// MLP or MoE-block activations.
double mlp_bytes(const WorkloadSpec& spec, const LayerShape& x, int layer, const ActivationOptions& opt) {
  const double dropout = opt.dropout ? x.tsp * x.h : 0.0;  // MLP dropout mask
  if (spec.model.is_moe_layer(layer)) return moe_bytes(spec, x).total() + dropout;
  return dense_mlp_bytes(spec, x) + dropout;
}

// What Hugging Face transformers' eager modules (training.elementwise: eager) keep beyond the
// fused kernels, from the modules' code: LlamaRMSNorm upcasts its input to FP32 and keeps that
// copy (4 B) and the BF16 normalized tensor for the weight's gradient (2 B), where a fused norm
// keeps its BF16 input (2 B): +4 B per element, two norms per layer; act_fn(gate) * up keeps the
// SiLU output (2 B per FFN element) beside the gate and up a fused SwiGLU keeps (routed and
// shared experts alike). LayerNorm and GeLU are single PyTorch kernels either way. Checked
// against calibration run 19 (docs/calibration.md): a transformers LlamaDecoderLayer keeps
// 209.5 KB per token after its forward at h 4096, ffn 14336; fused terms + these extras + the
// layer input its harness holds give 208.7.
double eager_extra_bytes(const WorkloadSpec& spec, const LayerShape& x, int layer) {
  if (spec.training.elementwise != Elementwise::Eager) return 0.0;
  const ModelSpec& m = spec.model;
  const RankShapes& s = x.s;
  double bytes = m.norm == NormKind::RmsNorm ? 2.0 * 4.0 * x.tsp * x.h : 0.0;
  // Qwen3RMSNorm, the eager query and key norms of transformers' Qwen3 (qk_layernorm): the same
  // +4 B per element over the heads of the rank.
  if (m.norm == NormKind::RmsNorm && m.qk_layernorm) {
    bytes += 4.0 * x.t * d((s.heads + s.kv_heads) * s.head_dim);
  }
  if (m.activation != Activation::Swiglu) return bytes;
  if (m.is_moe_layer(layer)) {
    bytes += kBf16Bytes * d(s.expert_rows) * d(s.expert_fc1_out) / 2.0;
    return bytes + kBf16Bytes * x.t * d(s.shared_fc1_out) / 2.0;
  }
  return bytes + kBf16Bytes * x.t * d(s.fc1_out) / 2.0;
}

}  // namespace

// What recompute_modules other than core_attn free. Normal checkpoints (mlp, moe,
// shared_experts) keep their input only; output-discarding ones (layernorm, moe_act,
// mla_up_proj) free their output, which the consumer kept: under FP8 Megatron-core makes that
// consumer save its original BF16 input (set_save_original_input) so the discard frees it, so
// the tensor is counted as this model keeps it. Attention side: mla_up_proj frees the
// up-projection inputs and q, k, v; layernorm MLA's input-norm output (the down projections'
// input). MLP side: mlp a dense MLP's tensors; moe all of the MoE block's but its input (the
// router's); moe_act the experts' fc2 input; shared_experts the shared experts' tensors;
// layernorm the pre-MLP norm's output (the router input, the moe checkpoint's input).
RecomputedBytes recomputed_module_bytes(const WorkloadSpec& spec, const LayerShape& x, int layer) {
  const TrainingSpec& t = spec.training;
  RecomputedBytes r;
  if (t.recompute != Recompute::Selective) return r;
  const RankShapes& s = x.s;
  const double gin = gemm_input_bytes(spec);
  if (spec.model.attention == AttentionKind::Mla) {
    if (t.recomputes(RecomputeModule::MlaUpProj)) {
      r.attention += gin * x.tsp * d(s.q_lora + s.kv_lora) +
                     attention_tensor_bytes(spec) * x.t * d(s.heads) * d(2 * s.head_dim + s.v_head_dim);
    }
    if (t.recomputes(RecomputeModule::Layernorm)) r.attention += gin * x.tsp * x.h;
  }
  if (!spec.model.is_moe_layer(layer)) {
    if (t.recomputes(RecomputeModule::Mlp)) r.mlp += dense_mlp_bytes(spec, x);
    return r;
  }
  const MoeBytes b = moe_bytes(spec, x);
  if (t.recomputes(RecomputeModule::Moe)) {
    r.mlp += b.total() - b.router_in;
  } else {
    if (t.recomputes(RecomputeModule::MoeAct)) r.mlp += b.fc2_in;
    if (t.recomputes(RecomputeModule::SharedExperts)) r.mlp += b.shared;
  }
  if (t.recomputes(RecomputeModule::Layernorm)) r.mlp += b.router_in;
  return r;
}

// Gradient tensors alive at the peak of a layer's backward (the MLP activation backward): the
// residual-stream gradient, the gradients of the activation input and output, and with
// sequence parallelism the re-gathered input for the weight gradient.
double backward_transients(const WorkloadSpec& spec, const LayerShape& x, int layer) {
  const RankShapes& s = x.s;
  double bytes = kBf16Bytes * x.tsp * x.h;
  if (spec.model.is_moe_layer(layer)) {
    bytes += kBf16Bytes * d(s.expert_rows) * d(s.expert_fc1_out + s.expert_ffn + s.hidden);
  } else {
    bytes += kBf16Bytes * x.t * d(s.fc1_out + s.ffn);
    if (s.sequence_parallel && !s.tp_backward_blocking) bytes += kBf16Bytes * x.t * x.h;
  }
  return bytes;
}

// Each weight GEMM's input (as kept: FP8 with FP8 GEMMs, the sequence shard of a column-parallel
// input with SP, which the W gathers again) and its BF16 output gradient (a row-parallel
// GEMM's gathered [t, h]). The two MLA down projections share their input, as fc1's gate and up.
double deferred_wgrad_bytes(const WorkloadSpec& spec, const LayerShape& x, int layer) {
  const RankShapes& s = x.s;
  const double gin = gemm_input_bytes(spec);
  const double g = kBf16Bytes;
  double bytes = gin * x.t * d(s.attn_out) + g * x.t * x.h;  // output projection
  if (spec.model.attention == AttentionKind::Mla) {
    bytes += gin * x.tsp * (x.h + d(s.q_lora + s.kv_lora)) +
             g * x.tsp * d(s.q_lora + s.kv_lora + s.rope_dim) + g * x.t * d(s.q_up_out + s.kv_up_out);
  } else {
    bytes += gin * x.tin * x.h + g * x.t * d(s.qkv_out);
  }
  if (!spec.model.is_moe_layer(layer)) {
    return bytes + gin * x.tin * x.h + g * x.t * d(s.fc1_out) + gin * x.t * d(s.ffn) + g * x.t * x.h;
  }
  const double rows = d(s.expert_rows);
  bytes += g * x.tsp * x.h + 4.0 * d(s.moe_tokens) * d(s.experts);  // router (FP32 logit gradient)
  bytes += rows * (gin * (x.h + d(s.expert_ffn)) + g * d(s.expert_fc1_out + s.hidden));
  if (s.shared_ffn > 0) {
    bytes += gin * x.tin * x.h + g * x.t * d(s.shared_fc1_out) + gin * x.t * d(s.shared_ffn) + g * x.t * x.h;
  }
  return bytes;
}

// FC2 input (or the expert FC2 input): freed by the FC2 weight gradient before the peak.
double freed_before_peak(const WorkloadSpec& spec, const LayerShape& x, int layer) {
  const RankShapes& s = x.s;
  const double gin = gemm_input_bytes(spec);
  return spec.model.is_moe_layer(layer) ? gin * d(s.expert_rows) * d(s.expert_ffn)
                                        : gin * x.t * d(s.ffn);
}

// Peak of the activations held over the schedule: the sum over model chunks of (microbatches
// whose forward is done and backward is not) x (bytes per microbatch), plus what the backwards
// whose weight gradients wait keep for them (`per_chunk_w`, zero-bubble schedules), taken after
// every step. 1F1B and the interleaved schedule peak after a forward (their backwards only
// free). Under zb_h1 a deferred backward (B) frees its microbatch's activations but keeps its W's
// GEMM inputs and output gradients until the W runs (Qi et al., arXiv 2401.10241), so whenever a
// W keeps more than a microbatch's activations (TP + SP, full recompute) the stage peaks after a
// backward (the last stage after its last: every deferred W waiting, nothing held).
InFlight in_flight(const WorkloadSpec& spec, int stage, const std::vector<double>& per_chunk,
                   const std::vector<double>& per_chunk_w) {
  const ParallelSpec& p = spec.parallel;
  const auto steps = pipeline_steps(p.schedule, p.pp, stage, static_cast<int>(spec.num_microbatches()),
                                    p.vp, p.overlap_moe_expert_parallel_comm);
  std::vector<int> held(per_chunk.size(), 0), waiting(per_chunk.size(), 0);
  InFlight peak;
  // A forward's sample wins ties (the count reported is the latest forward's, as before the
  // other steps were sampled); a backward's or W's only when strictly higher.
  auto sample = [&](bool forward) {
    double bytes = 0.0, w = 0.0;
    int count = 0;
    for (std::size_t i = 0; i < held.size(); ++i) {
      bytes += held[i] * per_chunk[i];
      if (waiting[i] > 0) w += waiting[i] * per_chunk_w.at(i);
      count += held[i];
    }
    if (bytes + w > peak.bytes || (forward && bytes + w == peak.bytes)) {
      peak.bytes = bytes + w;
      peak.wgrad_bytes = w;
      peak.count = count;
    }
  };
  for (const auto& step : steps) {
    const auto c = static_cast<std::size_t>(step.chunk);
    if (step.kind == StepKind::Forward) {
      ++held[c];
      sample(true);
      peak.last_chunk_max = std::max(peak.last_chunk_max, held.back());
    } else if (step.kind == StepKind::Backward) {
      --held[c];
      waiting[c] += step.defer_wgrad;
      sample(false);
    } else if (step.kind == StepKind::WeightGrad) {
      --waiting[c];
      sample(false);
    }
  }
  return peak;
}

LogitBytes logit_bytes_per_element(CrossEntropy ce) {
  switch (ce) {
    // Megatron vocab-parallel cross entropy: the BF16 logits cast to FP32 (2 + 4 at the
    // forward's peak); the FP32 softmax is kept and the backward writes the gradient into it.
    case CrossEntropy::Unfused: return {4.0, 6.0};
    // Fused: the BF16 logits are kept and overwritten with their gradient.
    case CrossEntropy::Fused: return {2.0, 2.0};
    // Chunked (fused linear + cross entropy): one chunk at a time, negligible.
    case CrossEntropy::Chunked: return {0.0, 0.0};
    // transformers' ForCausalLMLoss: logits.float(), then F.cross_entropy = log_softmax +
    // nll_loss. The FP32 log-softmax output is saved (4); at the start of the backward,
    // nll_loss_backward writes a dense FP32 gradient and log_softmax_backward a second one
    // beside it, while the saved output is alive: 4 + 4 + 4 (the BF16 and FP32 logits are freed
    // after the forward; its forward peak, 2 + 4 + 4, is lower). Measured on H200 (run 29,
    // calib/data/h200/run29/eager_loss.csv): 10.0, 4.0 and 12.0 B per logit at the forward's
    // peak, after it and at the backward's peak, 2k-16k tokens; in a whole step (run 23,
    // run23/step_single.csv) the peak grows by 2.376 MB per token, the model by 2.436.
    case CrossEntropy::Eager: return {4.0, 12.0};
  }
  return {};
}

LayerShape layer_shape(const WorkloadSpec& spec) {
  LayerShape x;
  x.s = RankShapes::of(spec);
  x.t = d(x.s.tokens);
  x.tsp = d(x.s.sp_tokens);
  // Megatron keeps a column-parallel GEMM's input as its sequence shard and gathers it again in
  // the backward; the autograd order (tp_backward_comm: blocking) keeps the gathered input.
  x.tin = x.s.tp_backward_blocking ? x.t : x.tsp;
  x.h = d(x.s.hidden);
  return x;
}

double layer_activation_bytes(const WorkloadSpec& spec, int layer, Recompute recompute,
                              const ActivationOptions& options) {
  const LayerShape x = layer_shape(spec);
  // Full recompute keeps only the layer input (BF16; the sequence shard with SP).
  if (recompute == Recompute::Full) return kBf16Bytes * x.tsp * x.h;
  const double norms = 2.0 * kBf16Bytes * x.tsp * x.h;  // inputs of the two norms
  double recomputed = 0.0;
  if (recompute == Recompute::Selective) {
    const RecomputedBytes r = recomputed_module_bytes(spec, x, layer);
    recomputed = r.attention + r.mlp;
  }
  return norms + attention_bytes(spec, x, recompute, options) + mlp_bytes(spec, x, layer, options) +
         eager_extra_bytes(spec, x, layer) - recomputed;
}

}  // namespace clustersim::workloads
