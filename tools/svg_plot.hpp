// A small, dependency-free SVG line/scatter chart (scale plots, seed studies in docs/). The
// output is deterministic text that any browser opens.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace clustersim::tools {

/// One data series.
struct PlotSeries {
  std::string name;                               ///< legend text
  std::vector<std::pair<double, double>> points;  ///< (x, y), drawn in x order
  std::string color = "#1f77b4";                  ///< any SVG color
  bool lines = true;                              ///< connect the points
  bool markers = true;                            ///< draw a marker at each point
  bool hollow = false;                            ///< markers as open squares (measured data)
};

/// A chart: axes, labels, series.
struct PlotSpec {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log2_x = false;       ///< x axis in powers of two (GPU counts)
  bool y_percent = false;    ///< y values are fractions, labelled in %
  double y_min = 0.0;        ///< y range; y_max <= y_min: fitted to the data
  double y_max = 0.0;
  std::vector<PlotSeries> series;
};

/// Renders the chart as a standalone SVG document. @throws std::invalid_argument when there is
/// no point, or a log2 axis gets x <= 0.
std::string render_svg(const PlotSpec& spec);

/// Writes `svg` to `path`. @throws std::runtime_error when the file cannot be written.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace clustersim::tools
