// A whole training step ready to play: programs, which rank runs which, the rank layout, and
// the accounting figures the report needs. Produced by workloads/, costed by a CostModel,
// played by the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/rank_layout.hpp"
#include "sim/trace.hpp"

namespace clustersim::sim {

/// FLOP and token accounting of one training step (whole job, all ranks).
struct StepAccounting {
  double tokens = 0.0;               ///< tokens trained per step (global batch x sequence length)
  double model_flops = 0.0;          ///< model FLOPs per step under `mfu_convention`
  std::string mfu_convention;        ///< "megatron" or "causal" (docs/architecture, notes)
  double hardware_flops = 0.0;       ///< FLOPs executed, recompute included (for HFU)
  double peak_flops_per_gpu = 0.0;   ///< dense peak of the precision used, FLOP/s
};

/// A generated (or loaded) training step.
struct Workload {
  RankLayout layout{1, 1, 1, 1};
  std::vector<Program> programs;
  std::vector<std::uint32_t> program_of_rank;  ///< index into programs, one per rank
  StepAccounting accounting;
  std::string description;                     ///< one line, e.g. "gpt3_175b tp4 pp8 dp4 ..."

  const Program& program(int rank) const { return programs[program_of_rank[rank]]; }
};

}  // namespace clustersim::sim
