// A step of many microbatches from two short ones: the steady-state window of the pipeline
// schedule (docs/engine.md, "Steady-state window").
#pragma once

#include <cstdint>
#include <optional>

#include "sim/engine.hpp"
#include "workloads/job_spec.hpp"
#include "workloads/schedule.hpp"

namespace clustersim::tools {

/// A step is played as windows only from this many times the longer window's microbatches on.
inline constexpr int kWindowsPerStep = 4;

/// The two microbatch counts to play for `spec` in place of its own
/// (workloads::steady_state_window of its schedule), or nullopt when the step has fewer than
/// kWindowsPerStep x window.second microbatches per pipeline, where playing it whole costs
/// about as much. @throws std::invalid_argument for an unregistered schedule.
std::optional<workloads::SteadyWindow> window_for(const workloads::WorkloadSpec& spec);

/// `spec` with `microbatches` per pipeline: its global batch set to microbatches x dp x
/// micro_batch_size, everything else unchanged.
/// @throws std::invalid_argument if microbatches < 1.
workloads::WorkloadSpec with_microbatches(const workloads::WorkloadSpec& spec, int microbatches);

/// The step of `microbatches` per pipeline from the steps of `window.first` (`a`) and
/// `window.second` (`b`) microbatches: the step time and every part of the breakdown are
/// a + (microbatches - first) / (second - first) x (b - a), exact where each further
/// microbatch adds the same steady-state period; events and wall time are the two runs' sums;
/// the TP flags and algorithm fallbacks are `b`'s; no timeline.
/// @throws std::invalid_argument if window.second <= window.first.
sim::StepResult extend_window(const sim::StepResult& a, const sim::StepResult& b,
                              const workloads::SteadyWindow& window, std::int64_t microbatches);

}  // namespace clustersim::tools
