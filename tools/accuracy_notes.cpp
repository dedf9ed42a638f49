#include "tools/accuracy_notes.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

namespace clustersim::tools {
namespace {
constexpr const char* kWhere = " (docs/validation.md, \"MoE steps beside the reference set\")";
constexpr const char* kBlackwellWhere = " (docs/validation.md, \"Dense steps on Blackwell GPUs\")";
}  // namespace

// The comparisons behind the MoE lines are docs/validation.md, "MoE steps beside the reference
// set": Megatron-MoE-ModelZoo's and Megatron-Bridge's Qwen3-235B steps on 256 H100
// (tests/validation/megatron_moe_modelzoo.yaml, megatron_bridge_moe.yaml). The lines carry no
// figures, so that they stay true when the model or the files change; the docs hold the figures.
// The derived-GPU line rests on docs/validation.md, "Dense steps on Blackwell GPUs":
// Megatron-Bridge's Llama FP8 steps on B200, GB200 and GB300 (tests/validation/
// megatron_bridge_dense.yaml), those on B200 and GB200 beyond the slow end of the rule's
// stated uncertainty.
std::vector<std::string> accuracy_notes(const workloads::WorkloadSpec& spec, const std::string& derived_gpu) {
  std::vector<std::string> notes;
  if (!derived_gpu.empty()) {
    notes.emplace_back(
        "derived GPU (" + derived_gpu +
        "): compute-bound kernel times scaled from the H200's tables by MAMF ratios, memory-bound "
        "ones by the HBM ratio; held out, every Megatron-Bridge FP8 Llama step on B200 and GB200 "
        "ran slower than simulated, beyond the slow end of --uncertainty (the one GB300 step close "
        "to simulated); this step time may be optimistic by more than --uncertainty says" +
        std::string(kBlackwellWhere));
  }
  if (spec.model.experts == 0) return notes;
  notes.emplace_back(
      "MoE: every held-out Megatron MoE step (Qwen3-235B on 256 H100, DeepEP and all-to-all "
      "dispatchers, balanced and unstated routing) ran slower than simulated; read this step "
      "time as optimistic" +
      std::string(kWhere));
  if (spec.parallel.overlap_moe_expert_parallel_comm) {
    notes.emplace_back(
        "combined 1F1B (overlap_moe_expert_parallel_comm): the simulated gain over the same job "
        "without it exceeds the gain of the held-out measured before/after pair; read it as an "
        "upper bound" +
        std::string(kWhere));
  }
  return notes;
}

std::string mfu_note(const workloads::WorkloadSpec& spec) {
  const double factor = spec.training.moe_capacity_factor;
  if (spec.model.experts == 0 || !(factor > 0.0 && factor < 1.0)) return "";
  std::ostringstream s;
  s << "moe_capacity_factor " << factor << " < 1 drops routed tokens: MFU counts every token's "
    << "top_k experts (Megatron's count) and overstates the work done; executed TFLOP/s counts "
       "what ran";
  return s.str();
}

std::string accuracy_summary(const std::vector<std::vector<std::string>>& runs) {
  std::vector<std::pair<std::string, std::size_t>> seen;  // note, runs carrying it
  for (const auto& notes : runs) {
    for (const auto& note : notes) {
      const auto at = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == note; });
      if (at == seen.end()) {
        seen.emplace_back(note, 1);
      } else {
        ++at->second;
      }
    }
  }
  std::string out;
  for (const auto& [note, count] : seen) {
    const std::string share = count == runs.size() ? std::string()
                                                    : "(" + std::to_string(count) + " of " +
                                                          std::to_string(runs.size()) + " runs) ";
    out += "accuracy      " + share + note + "\n";
  }
  return out;
}

}  // namespace clustersim::tools
