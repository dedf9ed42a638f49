// The cost models by name (`simulation.cost_model`, `--cost`): which GPUs each can cost, how
// to build one for a GPU, and one at an end of its stated uncertainty (docs/cost-model.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "platforms/platform_spec.hpp"
#include "sim/cost_corner.hpp"
#include "sim/cost_model.hpp"

namespace clustersim::tools {

/// The cost models' names (`simulation.cost_model`, `--cost`), the default first.
std::vector<std::string> cost_model_names();

/// Whether the cost model named `name` holds FlashAttention-2's kernels (`attention_backend:
/// flash2`): the measured model does; the roofline holds FlashAttention-3's published rates only.
/// @throws std::invalid_argument for another model name.
bool costs_flash2(const std::string& name);

/// The names of NCCL protocols a job may force (`simulation.nccl_proto`, `--nccl-proto`): LL,
/// LL128 and Simple as NCCL_PROTO forces them, auto for the fastest measured at each size.
const std::vector<std::string>& nccl_protocol_names();

/// The protocol named `name`; the empty name is NCCL's own choice (sim::NcclProtocol::Default).
/// @throws std::invalid_argument for another name.
sim::NcclProtocol nccl_protocol(const std::string& name);

/// Whether the cost model named `name` costs the GPU named `gpu` from another architecture's
/// measurements (the measured model on a Blackwell GPU: calib::DerivationRule::
/// cross_architecture); false for a GPU the model does not know.
/// @throws std::invalid_argument for another model name.
bool derives_across_architectures(const std::string& name, const std::string& gpu);

/// The cost model named `name` ("measured" or "roofline") for `gpu`.
/// @throws std::invalid_argument for another name or a GPU the model cannot cost.
std::unique_ptr<sim::CostModel> make_cost_model(const std::string& name, const sim::GpuSpec& gpu);

/// The same for a platform's GPU, first checking that the model knows the GPU by its name; with
/// `corner`, that model at that end of its stated uncertainty (sim::CornerCostModel).
/// @throws SpecError at the platform's (or the job's override's) `name` when the model does not
/// know the GPU, listing the names it knows; std::invalid_argument for another model name, or
/// for a corner of a model that states no uncertainty (the roofline).
std::unique_ptr<sim::CostModel> make_cost_model(const std::string& name,
                                                const platforms::PlatformSpec& platform,
                                                std::optional<sim::CostCorner> corner = std::nullopt);

}  // namespace clustersim::tools
