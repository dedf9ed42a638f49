// Default inputs of the energy, cost and reliability models, each with its source. Jobs
// override them (`energy:`, `economics:`, `reliability:`; docs/energy.md). Platform figures
// (GPU power, server power, capital cost, rental price) live in platforms/catalog/*.yaml.
#pragma once

namespace clustersim::energy {

/// Facility power / IT power. Uptime Institute Global Data Center Survey 2023: industry
/// average PUE 1.58, flat since 2020 (large hyperscale sites report about 1.1; override
/// `energy: {pue: ...}` for a known facility).
inline constexpr double kDefaultPue = 1.58;

/// Tokens a training run trains (reporting convention for "energy/cost to train N tokens",
/// not a hardware figure): 10^12.
inline constexpr double kDefaultTrainTokens = 1e12;

/// Straight-line depreciation period of servers, years. Amazon, Q4 2024 results / 2024 Form
/// 10-K: useful life of a subset of servers and networking equipment shortened from 6 to 5
/// years from 2025, citing the pace of AI/ML technology.
inline constexpr double kDefaultDepreciationYears = 5.0;

/// Electricity price, USD/kWh. US EIA, Electric Power Monthly, Table 5.3: 2023 average retail
/// price to the industrial sector, 8.04 cents/kWh.
inline constexpr double kDefaultUsdPerKwh = 0.0804;

/// From a failure to the job noticing it, s. PyTorch ProcessGroupNCCL's default collective
/// timeout (kProcessGroupNCCLDefaultTimeout, 10 min): the bound for a hang; a crash is
/// noticed sooner, so this is conservative.
inline constexpr double kDefaultDetectionS = 600.0;

/// Relaunch after a failure (rescheduling, process start, communicator setup), s. ASSUMPTION:
/// no public measurement was found; docs/energy.md shows the goodput's sensitivity to it.
inline constexpr double kDefaultRestartS = 600.0;

/// Aggregate checkpoint storage bandwidth, bytes/s. Llama 3 paper (arXiv 2407.21783, Sec.
/// 3.3.1): Tectonic serves 2 TB/s sustained (7 TB/s peak) to the 16K-GPU cluster.
inline constexpr double kDefaultStorageBandwidth = 2e12;

/// Checkpoint bytes per parameter: BF16 weights (2) + FP32 main weights (4) + Adam first and
/// second moments (4 + 4), as Megatron's distributed optimizer saves them (mixed precision
/// training, Micikevicius et al. 2018; Adam, Kingma and Ba 2015).
inline constexpr double kCheckpointBytesPerParam = 14.0;

/// Monte-Carlo runs and seed.
inline constexpr int kDefaultTrials = 1000;
inline constexpr unsigned long long kDefaultSeed = 1;

}  // namespace clustersim::energy
