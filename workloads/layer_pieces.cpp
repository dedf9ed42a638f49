// A transformer layer split at its expert exchanges, as Megatron-core's combined 1F1B schedule
// runs it (megatron/core/models/gpt/fine_grained_callables.py, build_schedule_plan; documented
// in docs/user-guide/features/moe_a2a_overlap.md, "Fine-grained execution"): the `attn` node
// (attention, the MLP's norm, the router and the dispatch's preprocessing), `moe_dispatch`
// (the dispatch exchange on the communication stream), `mlp` (the routed experts, and the
// shared experts when they are not overlapped), `moe_combine` (the combine exchange), then the
// combine's postprocessing (unpermutation, the shared experts' sum, the residual), which runs
// before the next layer's `attn` work. The backward runs the same nodes in reverse. A dense
// layer has no-op exchanges, so it is one piece here. With --delay-wgrad-compute Transformer
// Engine's grouped linears defer their weight gradients (backward_dw), which the schedule runs
// after launching the dispatch's backward exchange: the exchange waits for the data gradients
// only, and the weight gradients run beside it.
#include <stdexcept>
#include <string>
#include <utility>

#include "workloads/transformer_ops.hpp"

namespace clustersim::workloads {

int TransformerOps::layer_pieces(int layer) const {
  return spec_.model.is_moe_layer(layer) && (s_.ep_comm || s_.etp_comm) ? 3 : 1;
}

void TransformerOps::layer_forward_piece(int layer, int piece, std::vector<std::uint32_t> param_deps) {
  if (piece < 0 || piece >= layer_pieces(layer)) {
    throw std::logic_error("layer " + std::to_string(layer) + " has no forward piece " + std::to_string(piece));
  }
  if (layer_pieces(layer) == 1) {
    layer_forward(layer, std::move(param_deps));
    return;
  }
  b_.set_layer(layer);
  if (piece == 0) {
    layer_attention_forward(layer, std::move(param_deps));
    moe_route_forward();
  } else if (piece == 1) {
    moe_experts_forward();
    if (s_.shared_ffn > 0) mlp_forward("shared_", s_.shared_fc1_out, s_.shared_ffn);
  } else {
    moe_output_forward(false);
    b_.mem("residual", sim::MemKernel::Elementwise, 3.0 * act_bytes(s_.sp_tokens, s_.hidden));
  }
}

std::vector<std::uint32_t> TransformerOps::layer_backward_piece(int layer, int piece, GradSink* sink,
                                                                std::vector<std::uint32_t> deps,
                                                                bool recompute) {
  if (piece < 0 || piece >= layer_pieces(layer)) {
    throw std::logic_error("layer " + std::to_string(layer) + " has no backward piece " + std::to_string(piece));
  }
  if (layer_pieces(layer) == 1) {
    layer_backward(layer, sink, std::move(deps), recompute);
    return {};
  }
  if (piece == 0) {
    begin_layer_backward(layer, std::move(deps), recompute);  // the replay's exchanges in line
    moe_recompute();  // layernorm's pre-MLP norm (moe is refused with this schedule)
    moe_output_backward({});
    return {};
  }
  b_.set_layer(layer);
  if (piece == 1) {
    moe_experts_backward(layer, sink, s_.delay_wgrad ? ExpertGrads::Data : ExpertGrads::All);
    if (s_.shared_ffn > 0) return shared_experts_backward(layer, sink);
    return {};
  }
  moe_route_backward(layer, sink);
  layer_attention_backward(layer, sink, std::move(deps));
  return {};
}

void TransformerOps::layer_backward_tail(int layer, int piece, GradSink* sink) {
  if (layer_pieces(layer) != 3 || piece != 1 || !s_.delay_wgrad) return;
  b_.set_layer(layer);
  moe_experts_backward(layer, sink, ExpertGrads::Weight);
}

std::vector<std::uint32_t> TransformerOps::layer_exchange(int layer, bool backward, int after_piece,
                                                          const std::vector<std::uint32_t>& after) {
  if (layer_pieces(layer) != 3 || after_piece < 0 || after_piece > 1) {
    throw std::logic_error("layer " + std::to_string(layer) + " has no exchange after piece " +
                           std::to_string(after_piece));
  }
  b_.set_layer(layer);
  // Forward: dispatch, then combine; backward: the combine's backward (a dispatch), then the
  // dispatch's (a combine).
  static const char* kLabels[2][2] = {{"ep_dispatch", "ep_combine"}, {"ep_combine_bwd", "ep_dispatch_bwd"}};
  const bool dispatch = after_piece == 0;
  return expert_exchange(kLabels[backward ? 1 : 0][after_piece], dispatch, sim::Stream::EpComm, &after);
}

}  // namespace clustersim::workloads
