// Parallelism sweeps (`clustersim sweep`): the space of configurations given on the command
// line (tp=1,2,4,8 pp=... mbs=... zero=... recompute=...), its enumeration in a fixed order,
// sharding for job arrays, pruning, ranking and the CSV that `sweep merge` combines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/csv.hpp"
#include "tools/job_variants.hpp"

namespace clustersim::tools {

/// A dimension a sweep can vary: its command-line name and the job key it sets.
struct SweepDimension {
  std::string name;                  ///< "tp", "mbs", "recompute", ...
  std::string section;               ///< job section: "parallelism" or "training"
  std::string key;                   ///< job key, e.g. "micro_batch_size"
  std::vector<std::string> allowed;  ///< allowed values for enumerations; empty: integers >= 0
  /// Values are sets: `none`, or members of `allowed` joined by '+' ("core_attn+attn_proj"),
  /// written to the job as a YAML list.
  bool set_valued = false;
  /// For set values: whether `none` (the empty list) is a value.
  bool none_allowed = true;
  /// Job keys ("section.key") removed before the sweep sets any value, so that a setting the
  /// job tied to its own value does not carry over: vp clears the schedule it implies (a swept
  /// schedule is set after), zero the FSDP and distributed-optimizer flags, platform the job's
  /// overrides of its own platform's figures.
  std::vector<std::string> clears = {};
};

/// The registry of sweepable dimensions (tp, pp, vp, schedule, cp, ep, mbs, zero, recompute,
/// platform, ...; docs/scaling-and-sweeps.md lists them all).
const std::vector<SweepDimension>& sweep_dimensions();

/// One dimension of a space with the values to try, in the order given.
struct SweepAxis {
  SweepDimension dim;
  std::vector<std::string> values;
};

/// The most configurations one sweep's space may hold: each is enumerated and checked against the
/// memory model (about a millisecond each), and the ranked CSV holds a row per configuration.
inline constexpr std::size_t kMaxSweepConfigs = 1000000;

/// Parses `--space` tokens "name=v1,v2,..." (each dimension at most once).
/// @throws std::invalid_argument naming the token and the reason, or when the space holds more
/// than kMaxSweepConfigs configurations.
std::vector<SweepAxis> parse_space(const std::vector<std::string>& tokens);

/// Number of configurations of the space (product of the value counts).
std::size_t space_size(const std::vector<SweepAxis>& axes);

/// The values of configuration `id` (0-based; the last axis varies fastest), one per axis.
std::vector<std::string> config_values(const std::vector<SweepAxis>& axes, std::size_t id);

/// A count as the sweep's CSV and options write it: plain decimal digits, no sign or leading
/// zero, under 10 digits. @throws std::invalid_argument starting with `what`.
std::size_t parse_count(const std::string& text, const std::string& what);

/// Shard K of N (1-based K), for Slurm job arrays or GNU parallel.
struct Shard {
  std::size_t index = 1;
  std::size_t count = 1;
};

/// Parses "K/N" with 1 <= K <= N. @throws std::invalid_argument.
Shard parse_shard(const std::string& text);

/// The configuration ids of a shard: those with id % N == K - 1 (round robin, so that
/// neighbouring, similarly expensive configurations spread over shards). Shards of one space
/// are disjoint and together cover it.
std::vector<std::size_t> shard_ids(std::size_t size, const Shard& shard);

/// The job keys configuration `values` replaces: the cluster's GPU count, each axis' key, the
/// global batch of the base job (kept constant); dp is removed (derived), and so are keys the
/// swept ones would contradict (schedule when vp is swept; fsdp and distributed_optimizer when
/// zero is; gradient_accumulation_steps).
std::vector<Override> sweep_overrides(const std::vector<SweepAxis>& axes,
                                      const std::vector<std::string>& values, std::int64_t gpus,
                                      std::int64_t global_batch);

/// The CSV header of a sweep over `axes`: rank, config, the axis names, dp, status,
/// tokens_per_s_per_gpu, mfu, step_time_s, compute_s, exposed_comm_s, bubble_s,
/// peak_memory_gib, memory_headroom_gib, replicas, reason, sweep, space.
std::vector<std::string> sweep_header(const std::vector<SweepAxis>& axes);

/// What identifies one sweep, for `sweep merge`: 16 hex digits of a 64-bit FNV-1a hash of the
/// job file's text, the GPU count, the space (axis names and values in the order given), the
/// replicas option and a nonzero `--memory-margin` (a fraction of HBM). Every row of a sweep and
/// of each of its shards carries it.
std::string sweep_fingerprint(const std::string& job_text, std::int64_t gpus,
                              const std::vector<SweepAxis>& axes, const std::string& replicas,
                              double memory_margin = 0.0);

/// Statuses of sweep rows, in ranking order after the simulated ones.
inline constexpr const char* kSweepOk = "ok";
inline constexpr const char* kSweepOutOfMemory = "pruned_memory";
inline constexpr const char* kSweepInvalid = "pruned_invalid";
inline constexpr const char* kSweepFailed = "failed";

/// Sorts rows: "ok" by tokens/s/GPU, highest first (ties by config id), then failed, memory-
/// and validity-pruned rows by config id; rewrites the rank column (1.. for ok rows, empty
/// otherwise). @throws std::invalid_argument when the table lacks a sweep column.
void rank_sweep_table(CsvTable& table);

/// Combines shard outputs (tools/sweep_merge.cpp): identical headers, one sweep fingerprint and
/// space size in every row, each config id exactly once over the shards (0 .. space-1, so a
/// missing shard is found), sweep statuses and valid figures, and swept values that follow the
/// config ids (each axis' distinct values, in equal numbers, their product the space, and one
/// value per position of an id on each axis).
/// @throws SpecError naming the file and line of a row that breaks one of these, the file whose
/// header differs, or listing the configurations no shard holds.
CsvTable merge_sweep_tables(const std::vector<std::pair<std::string, CsvTable>>& shards);

/// The first `n` ranked rows as a text table (rank, the axes, dp, tokens/s/GPU, MFU, memory
/// headroom).
std::string top_table(const CsvTable& table, std::size_t n);

}  // namespace clustersim::tools
