// Name tables of the workload enums (internal to workloads/): one place maps YAML/trace
// strings to enum values, used by the spec readers and by to_string().
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sim/yaml_spec.hpp"
#include "workloads/job_spec.hpp"

namespace clustersim::workloads {

/// A string <-> enum pair.
template <typename E>
struct Named {
  const char* name;
  E value;
};

inline constexpr Named<Activation> kActivationNames[] = {{"gelu", Activation::Gelu},
                                                         {"swiglu", Activation::Swiglu},
                                                         {"squared_relu", Activation::SquaredRelu}};
inline constexpr Named<AttentionKind> kAttentionNames[] = {{"gqa", AttentionKind::Gqa},
                                                           {"mla", AttentionKind::Mla}};
inline constexpr Named<Recompute> kRecomputeNames[] = {{"none", Recompute::None},
                                                       {"selective", Recompute::Selective},
                                                       {"full", Recompute::Full}};
inline constexpr Named<Fp8Recipe> kFp8RecipeNames[] = {{"delayed", Fp8Recipe::Delayed},
                                                       {"blockwise", Fp8Recipe::Blockwise},
                                                       {"tensorwise", Fp8Recipe::Tensorwise}};
inline constexpr Named<OffloadModule> kOffloadModuleNames[] = {
    {"qkv_linear", OffloadModule::QkvLinear}, {"core_attn", OffloadModule::CoreAttn},
    {"attn_proj", OffloadModule::AttnProj},   {"mlp_norm", OffloadModule::MlpNorm},
    {"expert_fc1", OffloadModule::ExpertFc1}, {"moe_act", OffloadModule::MoeAct}};
inline constexpr Named<RecomputeModule> kRecomputeModuleNames[] = {
    {"core_attn", RecomputeModule::CoreAttn},   {"moe_act", RecomputeModule::MoeAct},
    {"layernorm", RecomputeModule::Layernorm},  {"mla_up_proj", RecomputeModule::MlaUpProj},
    {"mlp", RecomputeModule::Mlp},              {"moe", RecomputeModule::Moe},
    {"shared_experts", RecomputeModule::SharedExperts}};
inline constexpr Named<RecomputeMethod> kRecomputeMethodNames[] = {
    {"uniform", RecomputeMethod::Uniform}, {"block", RecomputeMethod::Block}};
inline constexpr Named<CrossEntropy> kCrossEntropyNames[] = {{"unfused", CrossEntropy::Unfused},
                                                             {"fused", CrossEntropy::Fused},
                                                             {"chunked", CrossEntropy::Chunked},
                                                             {"eager", CrossEntropy::Eager}};
inline constexpr Named<Elementwise> kElementwiseNames[] = {{"fused", Elementwise::Fused},
                                                            {"eager", Elementwise::Eager}};
inline constexpr Named<OptimizerOffload> kOffloadNames[] = {{"none", OptimizerOffload::None},
                                                            {"cpu", OptimizerOffload::Cpu}};
inline constexpr Named<ZeroImpl> kZeroImplNames[] = {{"deepspeed", ZeroImpl::DeepSpeed},
                                                    {"fsdp2", ZeroImpl::Fsdp2}};
inline constexpr Named<sim::HostThreads> kHostThreadsNames[] = {
    {"all_cores", sim::HostThreads::AllCores}, {"per_rank", sim::HostThreads::PerRank}};
inline constexpr Named<CpCommType> kCpCommNames[] = {{"p2p", CpCommType::P2p},
                                                     {"all_gather", CpCommType::AllGather},
                                                     {"a2a", CpCommType::A2a}};
inline constexpr Named<MoeDispatcher> kMoeDispatcherNames[] = {{"alltoall", MoeDispatcher::AllToAll},
                                                             {"deepep", MoeDispatcher::DeepEp}};
inline constexpr Named<TpBackwardComm> kTpBackwardCommNames[] = {
    {"overlapped", TpBackwardComm::Overlapped}, {"blocking", TpBackwardComm::Blocking}};
inline constexpr Named<NormKind> kNormNames[] = {{"layernorm", NormKind::LayerNorm},
                                                 {"rmsnorm", NormKind::RmsNorm}};
inline constexpr Named<PositionKind> kPositionNames[] = {{"learned", PositionKind::Learned},
                                                         {"rope", PositionKind::Rope}};
inline constexpr Named<sim::AttentionKernel> kAttentionBackendNames[] = {
    {"cudnn", sim::AttentionKernel::Cudnn}, {"flash2", sim::AttentionKernel::Flash2}};
inline constexpr Named<Precision> kPrecisionNames[] = {{"bf16", Precision::BF16},
                                                       {"fp8", Precision::FP8}};

/// Name of `value` in `table` ("?" if absent).
template <typename E, std::size_t N>
const char* name_of(E value, const Named<E> (&table)[N]) {
  for (const auto& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

/// Reads map[key] as one of the table's names. @throws SpecError listing the allowed names.
template <typename E, std::size_t N>
E read_enum(YamlMap& map, const std::string& key, const Named<E> (&table)[N]) {
  std::vector<std::string> names;
  for (const auto& entry : table) names.emplace_back(entry.name);
  const std::string text = map.get_enum(key, names);
  for (const auto& entry : table) {
    if (text == entry.name) return entry.value;
  }
  throw map.error(key, "unexpected value '" + text + "'");
}

}  // namespace clustersim::workloads
