// Scaling studies (`clustersim scale`): one job at several GPU counts with tp, pp and cp kept
// and the data-parallel size growing. Weak scaling keeps the batch of each data-parallel replica
// (the global batch grows with dp); strong scaling keeps the global batch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/csv.hpp"
#include "tools/job_variants.hpp"
#include "tools/step_figures.hpp"
#include "tools/svg_plot.hpp"

namespace clustersim::tools {

/// Weak or strong scaling.
enum class ScaleMode : std::uint8_t { Weak, Strong };

/// Parses "weak" / "strong". @throws std::invalid_argument otherwise.
ScaleMode parse_scale_mode(const std::string& text);
/// "weak" / "strong".
const char* to_string(ScaleMode mode);

/// The layout and batch at one GPU count.
struct ScalePoint {
  std::int64_t gpus = 0;
  std::int64_t dp = 0;             ///< gpus / (tp * cp * pp); 0 when not a multiple of it
  std::int64_t global_batch = 0;   ///< sequences per step; 0 when dp is
  std::string invalid;             ///< why this count cannot run the job (empty: it can)
};

/// The batch rule. weak: global batch = base global batch / base dp * dp (micro batches per
/// replica kept); strong: the base global batch, which must divide by dp * micro batch.
/// GPU counts not divisible by tp*cp*pp give a point with `invalid` set.
ScalePoint scale_point(const Job& base, std::int64_t gpus, ScaleMode mode);

/// The job keys a point replaces: cluster.gpus, parallelism.dp, training.global_batch_size
/// (and removes training.gradient_accumulation_steps, which the explicit batch replaces).
std::vector<Override> scale_overrides(const ScalePoint& point);

/// One row of a scaling study.
struct ScaleRow {
  ScalePoint point;
  std::optional<StepFigures> figures;  ///< empty when not simulated
  std::optional<MemoryFit> memory;     ///< empty when the memory model rejects the spec
  double efficiency = 0.0;             ///< tokens/s/GPU relative to the first simulated row
  std::string status = "ok";           ///< ok | invalid | failed
  std::string reason;
};

/// Fills ScaleRow::efficiency: tokens/s/GPU over that of the smallest simulated GPU count
/// (weak and strong alike: with the global batch fixed it equals T0*N0 / (T*N)).
void compute_efficiency(std::vector<ScaleRow>& rows);

/// The row scaling efficiency is relative to: the smallest simulated GPU count (nullptr when
/// none was simulated).
const ScaleRow* efficiency_base(const std::vector<ScaleRow>& rows);

/// The CSV: gpus, dp, global_batch_size, step_time_s, mfu, tflops_per_gpu,
/// tokens_per_s_per_gpu, scaling_efficiency, compute_s, exposed_comm_s, bubble_s,
/// peak_memory_gib, replicas, status, reason. A field with no value is empty: the figures of a
/// row not simulated, dp and global_batch_size of a GPU count not a multiple of tp*cp*pp.
CsvTable scale_csv(const std::vector<ScaleRow>& rows);

/// The rows of a CSV written by scale_csv (for re-plotting without simulating again).
/// @throws SpecError(origin, ...) when a column is missing or a number is malformed.
std::vector<ScaleRow> scale_rows_from_csv(const CsvTable& table, const std::string& origin);

/// A measured MFU point to draw beside the simulated curve.
struct MeasuredMfu {
  std::int64_t gpus = 0;
  double mfu = 0.0;
};

/// The chart: simulated MFU and scaling efficiency against GPUs (log2 axis), plus measured MFU
/// points when given. @throws std::invalid_argument when no row was simulated.
PlotSpec scale_plot(const std::vector<ScaleRow>& rows, ScaleMode mode, const std::string& title,
                    const std::vector<MeasuredMfu>& measured, const std::string& measured_label);

}  // namespace clustersim::tools
