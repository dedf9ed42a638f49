// MoE blocks of TransformerOps, as Megatron-core's MoELayer with the all-to-all token
// dispatcher runs them (megatron/core/transformer/moe/token_dispatcher.py
// MoEAlltoAllTokenDispatcher): router and top-k, permutation of the token copies, all-to-all
// over the expert-parallel group, all-gather over the expert-tensor-parallel group, the grouped
// expert GEMMs of the rank's local experts (one op per linear, grouped: a GEMM per expert, TE's
// GroupedLinear), then the reverse
// path (reduce-scatter over ETP, all-to-all over EP, unpermute and weighted sum), plus the
// shared experts as a TP-sharded MLP. Without moe_shared_expert_overlap the exchanges run on
// the compute stream (blocking) and the shared experts after them.
//
// With moe_shared_expert_overlap (megatron/core/transformer/moe/shared_experts.py,
// SharedExpertMLP): the shared experts run on a CUDA stream of their own, their fc1 and
// activation launched right after the dispatch all-to-all and their fc2 right after the
// combine all-to-all, so each overlaps one exchange; their linears do no TP communication of
// their own (parallel_mode None, userbuffers off), the sequence is gathered before fc1 and
// reduce-scattered after fc2 on that stream, and the gathered input is what fc1 keeps for its
// weight gradient. The backward mirrors it: Megatron gives the exchanges' and the shared
// branch's autograd nodes the highest priority (set_tensor_grad_fn_sequence_sr), so the
// shared fc2 backward overlaps the combine's backward exchange and the shared fc1 backward the
// dispatch's. Here the exchanges move to the ep_comm stream, launched after the compute op that
// produces their input, the shared work stays on the compute stream in between, and the next
// routed op waits for the exchange.
//
// With moe_token_dispatcher deepep (Megatron-core MoEFlexTokenDispatcher, DeepEP backend,
// megatron/core/transformer/moe/fused_a2a.py) each exchange is a token exchange: the rank's
// tokens (BF16, as Megatron hands them to DeepEP) go once to each GPU holding one of their
// experts and cross the network once per NVLink domain (the engine's deepep plan); the
// permutation into expert order moves the same rows on the receiving side, so the permute and
// unpermute kernels keep their sizes.
//
// Load: with balanced routing every rank receives moe_tokens * top_k token copies; the busiest
// rank receives moe_imbalance times that, capped by moe_capacity_factor (dropped tokens). All
// ranks of a stage share one program, so the program is the busiest rank's: the all-to-alls
// make every rank wait for it.
#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

#include "workloads/transformer_constants.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

using sim::CollectiveKind;
using sim::MemKernel;

// The MoE sizes of RankShapes (`gate`: 2 for SwiGLU's gate and up, else 1).
void RankShapes::set_moe(const WorkloadSpec& spec, std::int64_t gate) {
  const ModelSpec& m = spec.model;
  const ParallelSpec& p = spec.parallel;
  const TrainingSpec& t = spec.training;
  experts = m.experts;
  local_experts = m.experts / p.ep;
  moe_tokens = sp_tokens;
  ep_comm = p.ep > 1;
  etp_comm = p.etp > 1;
  // The busiest rank gets moe_imbalance times the average, capped by the capacity factor
  // (tokens beyond capacity are dropped). Padded to capacity (Megatron's drop_and_pad:
  // token_dispatcher.py preprocess sends capacity x num_experts rows), every rank exchanges
  // and computes the capacity, whatever the routing.
  if (t.moe_pad_to_capacity) {
    expert_load = t.moe_capacity_factor;
  } else {
    expert_load = t.moe_capacity_factor > 0.0 ? std::min(t.moe_imbalance, t.moe_capacity_factor)
                                              : t.moe_imbalance;
  }
  const double rows = static_cast<double>(moe_tokens * m.top_k * p.etp) * expert_load;
  expert_rows = std::max<std::int64_t>(1, std::llround(rows));
  expert_ffn = m.expert_ffn / p.etp;
  expert_fc1_out = expert_ffn * gate;
  shared_ffn = m.shared_expert_ffn / p.tp;
  shared_fc1_out = shared_ffn * gate;
  shared_overlap = p.moe_shared_expert_overlap && shared_ffn > 0;
  deepep = p.moe_token_dispatcher == MoeDispatcher::DeepEp;
  router_fp32 = t.moe_router_fp32;
  delay_wgrad = p.delay_wgrad_compute;
  routing = sim::TokenRouting{static_cast<std::int32_t>(m.experts), static_cast<std::int32_t>(m.top_k),
                              static_cast<std::int32_t>(m.router_groups),
                              static_cast<std::int32_t>(m.router_group_topk)};
}

namespace {

// While alive, the TP collectives of the ops added run as the overlapped shared experts run
// theirs (header comment): in line on their stream, no userbuffers, the input gradient reduced
// after the linear's backward with the gathered input kept (tp_backward_blocking's path), and
// the sequence gathered in BF16 by Megatron (gather_from_sequence_parallel_region), not as a
// Transformer Engine linear's FP8 shard.
class SharedExpertComm {
 public:
  explicit SharedExpertComm(RankShapes& s)
      : s_(s), overlap_(s.tp_overlap), blocking_(s.tp_backward_blocking), fp8_gather_(s.fp8_shard_gather) {
    s_.tp_overlap = false;
    s_.tp_backward_blocking = s_.tp_comm;
    s_.fp8_shard_gather = false;
  }
  ~SharedExpertComm() {
    s_.tp_overlap = overlap_;
    s_.tp_backward_blocking = blocking_;
    s_.fp8_shard_gather = fp8_gather_;
  }
  SharedExpertComm(const SharedExpertComm&) = delete;
  SharedExpertComm& operator=(const SharedExpertComm&) = delete;

 private:
  RankShapes& s_;
  bool overlap_, blocking_, fp8_gather_;
};

}  // namespace

// Dispatch direction: all-to-all over EP, then all-gather over ETP; combine direction:
// reduce-scatter over ETP, then all-to-all over EP. The backward of the combine is a dispatch
// and the other way round. On a stream other than the compute stream the exchange starts after
// the last compute op (or after `after`, when given). Returns its ops (none when neither group has more than one rank).
std::vector<std::uint32_t> TransformerOps::expert_exchange(const std::string& label,
                                                           bool dispatch, sim::Stream stream,
                                                           const std::vector<std::uint32_t>* after) {
  const double routed = act_bytes(s_.moe_tokens * spec_.model.top_k, s_.hidden) * s_.expert_load;
  const double gathered = act_bytes(s_.expert_rows, s_.hidden);
  std::vector<std::uint32_t> ops;
  auto deps = [&] {
    std::vector<std::uint32_t> d;
    if (stream != sim::Stream::Compute && ops.empty()) {
      if (after != nullptr) {
        d = *after;
      } else if (auto c = b_.last_compute()) {
        d.push_back(*c);
      }
    }
    return d;
  };
  auto a2a = [&] {
    if (s_.ep_comm && s_.deepep) {
      const double tokens = act_bytes(s_.moe_tokens, s_.hidden) * s_.expert_load;
      ops.push_back(b_.token_exchange(label + "_deepep", sim::GroupKind::EP, stream, tokens,
                                      s_.routing, deps()));
    } else if (s_.ep_comm) {
      ops.push_back(b_.collective(label + "_a2a", CollectiveKind::AllToAll, sim::GroupKind::EP,
                                  stream, routed, deps()));
    }
  };
  auto etp = [&](CollectiveKind kind, const char* suffix) {
    if (s_.etp_comm) {
      ops.push_back(b_.collective(label + suffix, kind, sim::GroupKind::ETP, stream, gathered, deps()));
    }
  };
  if (dispatch) {
    a2a();
    etp(CollectiveKind::AllGather, "_etp_ag");
  } else {
    etp(CollectiveKind::ReduceScatter, "_etp_rs");
    a2a();
  }
  return ops;
}

// An exchange with the shared experts' `shared` work beside it (moe_shared_expert_overlap), or
// on the compute stream before the routed work that needs it. The routed op after it depends
// on each op of the exchange, so that its wait is charged to the communicator it waits for.
void TransformerOps::exchange_beside(const std::string& label, bool dispatch,
                                     const std::function<void()>& shared) {
  if (!s_.shared_overlap) {
    expert_exchange(label, dispatch, sim::Stream::Compute);
    return;
  }
  const std::vector<std::uint32_t> exchange = expert_exchange(label, dispatch, sim::Stream::EpComm);
  {
    SharedExpertComm comm(s_);
    shared();
  }
  for (std::uint32_t op : exchange) b_.defer(op);
}

// Megatron-core runs the local experts as one GEMM each, with its own weight: TEGroupedMLP
// through TE's GroupedLinear (general_grouped_gemm: a cuBLAS GEMM per expert over TE's compute
// streams) or SequentialMLP's loop; the rows split evenly over the experts here, and with fewer
// rows than experts only as many experts as rows run a GEMM (one row each).
std::uint32_t TransformerOps::grouped(std::uint32_t op, sim::GroupAxis axis) {
  const std::int64_t groups = std::min(s_.local_experts, s_.expert_rows);
  if (groups > 1) b_.set_gemm_groups(op, static_cast<int>(groups), axis);
  return op;
}

void TransformerOps::moe_forward() {
  moe_route_forward();
  exchange_beside("ep_dispatch", true,
                  [&] { mlp_fc1_forward("shared_", s_.shared_fc1_out, s_.shared_ffn); });
  moe_experts_forward();
  exchange_beside("ep_combine", false, [&] { linear_out("shared_fc2", s_.hidden, s_.shared_ffn); });
  moe_output_forward(!s_.shared_overlap);
}

void TransformerOps::moe_route_forward() {
  const std::int64_t copies = s_.moe_tokens * spec_.model.top_k;
  const double logits = static_cast<double>(s_.moe_tokens) * static_cast<double>(s_.experts);
  // Megatron's router GEMM runs in the model dtype (BF16), outside the FP8 autocast; with
  // moe_router_dtype fp32 on BF16 operands into FP32 logits (RouterGatingLinearFunction:
  // te_general_gemm(weight, inp, float32)).
  b_.gemm("router", s_.moe_tokens, s_.experts, s_.hidden, sim::DType::BF16,
          s_.router_fp32 ? 4.0 : kOutBytes);
  b_.mem("router_topk", MemKernel::Elementwise, kRouterBytesPerLogit * logits);
  b_.mem("permute", MemKernel::Copy, 2.0 * act_bytes(copies, s_.hidden));
}

// Megatron-core's all-to-all dispatcher receives the tokens ordered by source rank and sorts them
// by local expert before the grouped GEMMs ("Permutation 2", sort_chunks_by_idxs in
// token_dispatcher.py dispatch_postprocess), and unsorts the experts' output before the combine
// (combine_preprocess); both only with more than one local expert. Each is a copy of the
// rank's expert rows (read and write); their backward is the opposite copy. DeepEP's flex
// dispatcher hands the experts their tokens already grouped.
void TransformerOps::sort_by_local_expert(const char* label) {
  if (s_.deepep || s_.local_experts < 2) return;
  b_.mem(label, MemKernel::Copy, 2.0 * act_bytes(s_.expert_rows, s_.hidden));
}

void TransformerOps::moe_experts_forward() {
  sort_by_local_expert("sort_chunks");
  // With fp8 TE's grouped linears cast-transpose their BF16 inputs (transformer_constants.hpp).
  fp8_quantize("expert_fc1_fp8_cast", s_.expert_rows, s_.hidden, kFp8CastTransposeBytes, s_.linear_dtype);
  grouped(b_.gemm("expert_fc1", s_.expert_rows, s_.expert_fc1_out, s_.hidden, s_.linear_dtype,
                  kOutBytes), sim::GroupAxis::M);
  const double act_passes = spec_.model.activation == Activation::Swiglu ? 3.0 : 2.0;
  b_.mem("expert_act", MemKernel::Activation, act_passes * act_bytes(s_.expert_rows, s_.expert_ffn));
  fp8_quantize("expert_fc2_fp8_cast", s_.expert_rows, s_.expert_ffn, kFp8CastTransposeBytes, s_.linear_dtype);
  grouped(b_.gemm("expert_fc2", s_.expert_rows, s_.hidden, s_.expert_ffn, s_.linear_dtype, kOutBytes),
          sim::GroupAxis::M);
  sort_by_local_expert("unsort_chunks");
}

void TransformerOps::moe_output_forward(bool shared_mlp) {
  const std::int64_t copies = s_.moe_tokens * spec_.model.top_k;
  // Unfused (Megatron-core moe_utils.unpermute): the copies scaled by their probabilities (read
  // and written), then scatter-added into the tokens (read again). Fused (moe_permute_fusion,
  // Transformer Engine's moe_unpermute with the merging probabilities): the copies read once and
  // each token's weighted sum written once.
  const double unpermute = spec_.training.moe_permute_fusion
                               ? act_bytes(copies, s_.hidden) + act_bytes(s_.moe_tokens, s_.hidden)
                               : 3.0 * act_bytes(copies, s_.hidden);
  b_.mem("unpermute", MemKernel::Copy, unpermute);
  if (s_.shared_ffn > 0) {
    if (shared_mlp) mlp_forward("shared_", s_.shared_fc1_out, s_.shared_ffn);
    b_.mem("shared_add", MemKernel::Elementwise, 3.0 * act_bytes(s_.sp_tokens, s_.hidden));
  }
}

// What selective recompute re-runs when a MoE layer's backward starts (the gradient of the MoE
// output arrives): with moe the whole MoE block from its checkpointed input, exchanges included
// (MoELayer's tensor_parallel.checkpoint); with layernorm the pre-MLP norm, whose output was
// discarded after the block's forward (TransformerLayer's pre_mlp_norm_checkpoint).
void TransformerOps::moe_recompute() {
  const TrainingSpec& t = spec_.training;
  b_.set_recompute(true);
  if (t.recomputes(RecomputeModule::Layernorm)) norm_forward();
  if (t.recomputes(RecomputeModule::Moe)) moe_forward();
  b_.set_recompute(false);
  if (t.recomputes(RecomputeModule::Layernorm) && s_.shared_ffn > 0 &&
      !t.recomputes(RecomputeModule::SharedExperts)) {
    // The shared experts' fc1 saved the norm's BF16 output (MoELayer's
    // set_for_recompute_pre_mlp_layernorm): its weight gradient quantizes it.
    fp8_quantize("shared_fc1_fp8_input_cast", s_.sp_tokens, s_.hidden, kFp8SavedInputCastBytes,
                 s_.linear_dtype);
  }
}

std::vector<std::uint32_t> TransformerOps::moe_backward(int layer, GradSink* sink) {
  moe_recompute();
  std::vector<std::uint32_t> comm;
  if (s_.shared_ffn > 0 && !s_.shared_overlap) comm = shared_experts_backward(layer, sink);
  moe_output_backward(std::move(comm));
  exchange_beside("ep_combine_bwd", true, [&] {
    mlp_fc2_backward("shared_", s_.shared_ffn, ParamGroup::SharedFc2, layer, sink);
  });
  moe_experts_backward(layer, sink, ExpertGrads::All);
  exchange_beside("ep_dispatch_bwd", false, [&] {
    column_backward("shared_fc1", s_.hidden, s_.shared_fc1_out, s_.linear_dtype,
                    ParamGroup::SharedFc1, layer, sink);
  });
  moe_route_backward(layer, sink);
  return {};
}

std::vector<std::uint32_t> TransformerOps::shared_experts_backward(int layer, GradSink* sink) {
  if (spec_.training.recomputes(RecomputeModule::SharedExperts)) {
    // shared_experts: the shared experts' MLP re-runs from its input (SharedExpertMLP's
    // checkpoint), TP exchanges included; under moe this is a checkpoint nested in the replay.
    b_.set_recompute(true);
    mlp_forward("shared_", s_.shared_fc1_out, s_.shared_ffn);
    b_.set_recompute(false);
  }
  return mlp_backward("shared_", s_.shared_fc1_out, s_.shared_ffn, ParamGroup::SharedFc1,
                      ParamGroup::SharedFc2, layer, sink);
}

void TransformerOps::moe_output_backward(std::vector<std::uint32_t> deps) {
  const std::int64_t copies = s_.moe_tokens * spec_.model.top_k;
  b_.mem("unpermute_bwd", MemKernel::Copy, 3.0 * act_bytes(copies, s_.hidden), std::move(deps));
}

void TransformerOps::moe_experts_backward(int layer, GradSink* sink, ExpertGrads grads) {
  auto fc2_wgrad = [&] {
    // Transformer Engine's GroupedLinear fuses the accumulation as its Linear does.
    const std::uint32_t op = grouped(b_.wgrad("expert_fc2_wgrad", s_.expert_ffn, s_.hidden, s_.expert_rows,
                                              s_.linear_dtype, s_.wgrad_accum), sim::GroupAxis::K);
    if (sink != nullptr) sink->gradient_ready(ParamGroup::ExpertFc2, layer, op);
  };
  auto fc1_wgrad = [&] {
    const std::uint32_t op = grouped(b_.wgrad("expert_fc1_wgrad", s_.hidden, s_.expert_fc1_out, s_.expert_rows,
                                              s_.linear_dtype, s_.wgrad_accum), sim::GroupAxis::K);
    if (sink != nullptr) sink->gradient_ready(ParamGroup::ExpertFc1, layer, op);
  };
  if (grads == ExpertGrads::Weight) {
    fc2_wgrad();
    fc1_wgrad();
    return;
  }
  const bool wgrad = grads == ExpertGrads::All;
  sort_by_local_expert("unsort_chunks_bwd");
  if (spec_.training.recomputes(RecomputeModule::MoeAct)) {
    // moe_act: the activation's output (fc2's input) was discarded after fc2's forward and is
    // recomputed when fc2's output gradient arrives (the experts' CheckpointWithoutOutput).
    b_.set_recompute(true);
    const double passes = spec_.model.activation == Activation::Swiglu ? 3.0 : 2.0;
    b_.mem("expert_act", MemKernel::Activation, passes * act_bytes(s_.expert_rows, s_.expert_ffn));
    b_.set_recompute(false);
    // fc2 saved that BF16 output (set_save_original_input): its weight gradient quantizes it.
    fp8_quantize("expert_fc2_fp8_input_cast", s_.expert_rows, s_.expert_ffn, kFp8SavedInputCastBytes,
                 s_.linear_dtype);
  }
  fp8_quantize("expert_fc2_fp8_grad_cast", s_.expert_rows, s_.hidden, kFp8CastTransposeBytes,
               s_.linear_dtype);
  grouped(b_.gemm("expert_fc2_dgrad", s_.expert_rows, s_.expert_ffn, s_.hidden, s_.linear_dtype,
                  kOutBytes), sim::GroupAxis::M);
  if (wgrad) fc2_wgrad();
  const double act_passes = spec_.model.activation == Activation::Swiglu ? 5.0 : 3.0;
  b_.mem("expert_act_bwd", MemKernel::Activation,
         act_passes * act_bytes(s_.expert_rows, s_.expert_ffn));
  fp8_quantize("expert_fc1_fp8_grad_cast", s_.expert_rows, s_.expert_fc1_out, kFp8CastTransposeBytes,
               s_.linear_dtype);
  grouped(b_.gemm("expert_fc1_dgrad", s_.expert_rows, s_.hidden, s_.expert_fc1_out,
                  s_.linear_dtype, kOutBytes), sim::GroupAxis::M);
  if (wgrad) fc1_wgrad();
  sort_by_local_expert("sort_chunks_bwd");
}

void TransformerOps::moe_route_backward(int layer, GradSink* sink) {
  const std::int64_t copies = s_.moe_tokens * spec_.model.top_k;
  const double logits = static_cast<double>(s_.moe_tokens) * static_cast<double>(s_.experts);
  b_.mem("permute_bwd", MemKernel::Copy, 2.0 * act_bytes(copies, s_.hidden));
  b_.mem("router_bwd", MemKernel::Elementwise, kRouterBytesPerLogit * logits);
  if (s_.router_fp32) {
    router_fp32_backward(layer, sink);
    return;
  }
  b_.gemm("router_dgrad", s_.moe_tokens, s_.hidden, s_.experts, sim::DType::BF16, kOutBytes);
  // The router's weight is a plain parameter (torch linear): its gradient is a new tensor.
  const std::uint32_t wgrad = b_.wgrad("router_wgrad", s_.hidden, s_.experts, s_.moe_tokens,
                                       sim::DType::BF16, sim::GradAccum::None);
  if (sink != nullptr) sink->gradient_ready(ParamGroup::Router, layer, wgrad);
}

// moe_router_dtype fp32 (Megatron-core RouterGatingLinearFunction.backward): the FP32 logit
// gradient times the weight cast to FP32 (TF32 GEMM), its FP32 result cast to the input's BF16;
// the saved BF16 input cast to FP32 for the weight gradient (TF32 GEMM), whose result is cast to
// the weight's BF16. Each cast reads 2 or 4 B per element and writes 4 or 2.
void TransformerOps::router_fp32_backward(int layer, GradSink* sink) {
  const double weight = static_cast<double>(s_.experts) * static_cast<double>(s_.hidden);
  const double inputs = static_cast<double>(s_.moe_tokens) * static_cast<double>(s_.hidden);
  b_.mem("router_weight_fp32_cast", MemKernel::Elementwise, 6.0 * weight);
  b_.gemm("router_dgrad", s_.moe_tokens, s_.hidden, s_.experts, sim::DType::TF32, 4.0);
  b_.mem("router_dgrad_bf16_cast", MemKernel::Elementwise, 6.0 * inputs);
  b_.mem("router_input_fp32_cast", MemKernel::Elementwise, 6.0 * inputs);
  b_.wgrad("router_wgrad", s_.hidden, s_.experts, s_.moe_tokens, sim::DType::TF32, sim::GradAccum::None);
  const std::uint32_t cast = b_.mem("router_wgrad_bf16_cast", MemKernel::Elementwise, 6.0 * weight);
  if (sink != nullptr) sink->gradient_ready(ParamGroup::Router, layer, cast);
}

}  // namespace clustersim::workloads
