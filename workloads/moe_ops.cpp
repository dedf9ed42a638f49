// MoE blocks of TransformerOps, as Megatron-core's MoELayer with the all-to-all token
// dispatcher runs them (megatron/core/transformer/moe/token_dispatcher.py
// MoEAlltoAllTokenDispatcher): router and top-k, permutation of the token copies, all-to-all
// over the expert-parallel group, all-gather over the expert-tensor-parallel group, the grouped
// expert GEMMs of the rank's local experts (one op per linear, grouped: a GEMM per expert, TE's
// GroupedLinear), then the reverse
// path (reduce-scatter over ETP, all-to-all over EP, unpermute and weighted sum), plus the
// shared experts as a TP-sharded MLP. The all-to-alls run on the compute stream (blocking), as
// in Megatron without moe_shared_expert_overlap.
//
// Load: with balanced routing every rank receives moe_tokens * top_k token copies; the busiest
// rank receives moe_imbalance times that, capped by moe_capacity_factor (dropped tokens). All
// ranks of a stage share one program, so the program is the busiest rank's: the all-to-alls
// make every rank wait for it.
#include <algorithm>
#include <utility>

#include "workloads/transformer_constants.hpp"
#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

using sim::CollectiveKind;
using sim::MemKernel;

// Dispatch direction: all-to-all over EP, then all-gather over ETP; combine direction:
// reduce-scatter over ETP, then all-to-all over EP. The backward of the combine is a dispatch
// and the other way round.
void TransformerOps::expert_exchange(const std::string& label, bool dispatch) {
  const double routed = act_bytes(s_.moe_tokens * spec_.model.top_k, s_.hidden) * s_.expert_load;
  const double gathered = act_bytes(s_.expert_rows, s_.hidden);
  auto a2a = [&] {
    if (s_.ep_comm) {
      b_.collective(label + "_a2a", CollectiveKind::AllToAll, sim::GroupKind::EP,
                    sim::Stream::Compute, routed);
    }
  };
  auto etp = [&](CollectiveKind kind, const char* suffix) {
    if (s_.etp_comm) {
      b_.collective(label + suffix, kind, sim::GroupKind::ETP, sim::Stream::Compute, gathered);
    }
  };
  if (dispatch) {
    a2a();
    etp(CollectiveKind::AllGather, "_etp_ag");
  } else {
    etp(CollectiveKind::ReduceScatter, "_etp_rs");
    a2a();
  }
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
  const std::int64_t copies = s_.moe_tokens * spec_.model.top_k;
  const double logits = static_cast<double>(s_.moe_tokens) * static_cast<double>(s_.experts);
  // Megatron's router GEMM runs in the model dtype (BF16), outside the FP8 autocast.
  b_.gemm("router", s_.moe_tokens, s_.experts, s_.hidden, sim::DType::BF16, kOutBytes);
  b_.mem("router_topk", MemKernel::Elementwise, kRouterBytesPerLogit * logits);
  b_.mem("permute", MemKernel::Copy, 2.0 * act_bytes(copies, s_.hidden));
  expert_exchange("ep_dispatch", true);
  // With fp8 TE's grouped linears cast-transpose their BF16 inputs (transformer_constants.hpp).
  fp8_quantize("expert_fc1_fp8_cast", s_.expert_rows, s_.hidden, kFp8CastTransposeBytes, s_.linear_dtype);
  grouped(b_.gemm("expert_fc1", s_.expert_rows, s_.expert_fc1_out, s_.hidden, s_.linear_dtype,
                  kOutBytes), sim::GroupAxis::M);
  const double act_passes = spec_.model.activation == Activation::Swiglu ? 3.0 : 2.0;
  b_.mem("expert_act", MemKernel::Activation, act_passes * act_bytes(s_.expert_rows, s_.expert_ffn));
  fp8_quantize("expert_fc2_fp8_cast", s_.expert_rows, s_.expert_ffn, kFp8CastTransposeBytes, s_.linear_dtype);
  grouped(b_.gemm("expert_fc2", s_.expert_rows, s_.hidden, s_.expert_ffn, s_.linear_dtype, kOutBytes),
          sim::GroupAxis::M);
  expert_exchange("ep_combine", false);
  // Read the token copies and their routing probabilities, write the weighted sum.
  b_.mem("unpermute", MemKernel::Copy, 3.0 * act_bytes(copies, s_.hidden));
  if (s_.shared_ffn > 0) {
    mlp_forward("shared_", s_.shared_fc1_out, s_.shared_ffn);
    b_.mem("shared_add", MemKernel::Elementwise, 3.0 * act_bytes(s_.sp_tokens, s_.hidden));
  }
}

std::vector<std::uint32_t> TransformerOps::moe_backward(int layer, GradSink* sink) {
  const std::int64_t copies = s_.moe_tokens * spec_.model.top_k;
  const double logits = static_cast<double>(s_.moe_tokens) * static_cast<double>(s_.experts);
  std::vector<std::uint32_t> comm;
  if (s_.shared_ffn > 0) {
    comm = mlp_backward("shared_", s_.shared_fc1_out, s_.shared_ffn, ParamGroup::SharedFc1,
                        ParamGroup::SharedFc2, layer, sink);
  }
  b_.mem("unpermute_bwd", MemKernel::Copy, 3.0 * act_bytes(copies, s_.hidden), std::move(comm));
  expert_exchange("ep_combine_bwd", true);
  fp8_quantize("expert_fc2_fp8_grad_cast", s_.expert_rows, s_.hidden, kFp8CastTransposeBytes,
               s_.linear_dtype);
  grouped(b_.gemm("expert_fc2_dgrad", s_.expert_rows, s_.expert_ffn, s_.hidden, s_.linear_dtype,
                  kOutBytes), sim::GroupAxis::M);
  // Transformer Engine's GroupedLinear fuses the accumulation as its Linear does.
  std::uint32_t wgrad = grouped(b_.wgrad("expert_fc2_wgrad", s_.expert_ffn, s_.hidden,
                                         s_.expert_rows, s_.linear_dtype, s_.wgrad_accum),
                                sim::GroupAxis::K);
  if (sink != nullptr) sink->gradient_ready(ParamGroup::ExpertFc2, layer, wgrad);
  const double act_passes = spec_.model.activation == Activation::Swiglu ? 5.0 : 3.0;
  b_.mem("expert_act_bwd", MemKernel::Activation,
         act_passes * act_bytes(s_.expert_rows, s_.expert_ffn));
  fp8_quantize("expert_fc1_fp8_grad_cast", s_.expert_rows, s_.expert_fc1_out, kFp8CastTransposeBytes,
               s_.linear_dtype);
  grouped(b_.gemm("expert_fc1_dgrad", s_.expert_rows, s_.hidden, s_.expert_fc1_out,
                  s_.linear_dtype, kOutBytes), sim::GroupAxis::M);
  wgrad = grouped(b_.wgrad("expert_fc1_wgrad", s_.hidden, s_.expert_fc1_out, s_.expert_rows,
                           s_.linear_dtype, s_.wgrad_accum), sim::GroupAxis::K);
  if (sink != nullptr) sink->gradient_ready(ParamGroup::ExpertFc1, layer, wgrad);
  expert_exchange("ep_dispatch_bwd", false);
  b_.mem("permute_bwd", MemKernel::Copy, 2.0 * act_bytes(copies, s_.hidden));
  b_.mem("router_bwd", MemKernel::Elementwise, kRouterBytesPerLogit * logits);
  b_.gemm("router_dgrad", s_.moe_tokens, s_.hidden, s_.experts, sim::DType::BF16, kOutBytes);
  // The router's weight is a plain parameter (torch linear): its gradient is a new tensor.
  wgrad = b_.wgrad("router_wgrad", s_.hidden, s_.experts, s_.moe_tokens, sim::DType::BF16,
                   sim::GradAccum::None);
  if (sink != nullptr) sink->gradient_ready(ParamGroup::Router, layer, wgrad);
  return {};
}

}  // namespace clustersim::workloads
