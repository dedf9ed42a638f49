// Charts of one reference case's points after a validation run (`clustersim validate --plot`):
// the case's metric against the dimension its points vary in, simulated beside measured, per
// platform; the ratio between two platforms; peak memory where the source gives it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/svg_plot.hpp"
#include "tools/validation/validate_run.hpp"

namespace clustersim::tools::validation {

/// The charts of case `id`, each with a file-name suffix: "" (the metric: simulated lines,
/// measured hollow markers, one colour per platform, against the sequence length when the
/// points vary in it, else against GPUs, log2 axis), "_ratio" (with two platforms: second over
/// first, simulated and measured) and "_memory" (measured vs estimated peak GiB, where the
/// source gives memory). Empty when the case has fewer than two points.
std::vector<std::pair<std::string, PlotSpec>> case_plots(const ValidationSummary& summary,
                                                         const std::string& id);

}  // namespace clustersim::tools::validation
