#include "tools/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace clustersim::tools {
namespace {

constexpr double kWidth = 820.0;
constexpr double kHeight = 440.0;
constexpr double kLeft = 70.0;
constexpr double kRight = 260.0;  // room for the legend
constexpr double kTop = 40.0;
constexpr double kBottom = 55.0;

std::string num(double v) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << v;
  return s.str();
}

// Text for an SVG element or attribute: the markup characters escaped, and the control
// characters XML 1.0 does not allow (all below 0x20 but tab, line feed and carriage return)
// shown as '?', so that any title gives a well-formed file.
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"') {
      out += "&quot;";
    } else if (byte < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      out += '?';
    } else {
      out += c;
    }
  }
  return out;
}

// A step of 1, 2 or 5 times a power of ten giving about `target` intervals over `span`.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double f : {1.0, 2.0, 5.0, 10.0}) {
    if (f * magnitude >= raw) return f * magnitude;
  }
  return 10.0 * magnitude;
}

struct Frame {
  double x_lo, x_hi, y_lo, y_hi;
  bool log2_x;
  double y_step = 1.0;  // grid step of the y axis
  double px(double x) const {
    const double v = log2_x ? std::log2(x) : x;
    const double span = x_hi > x_lo ? x_hi - x_lo : 1.0;
    return kLeft + (v - x_lo) / span * (kWidth - kLeft - kRight);
  }
  double py(double y) const {
    const double span = y_hi > y_lo ? y_hi - y_lo : 1.0;
    return kHeight - kBottom - (y - y_lo) / span * (kHeight - kTop - kBottom);
  }
};

Frame make_frame(const PlotSpec& spec) {
  double xmin = std::numeric_limits<double>::infinity();
  double xmax = -xmin;
  double ymin = xmin;
  double ymax = -xmin;
  for (const auto& s : spec.series) {
    for (const auto& [x, y] : s.points) {
      if (spec.log2_x && !(x > 0.0)) throw std::invalid_argument("log2 x axis needs x > 0");
      const double v = spec.log2_x ? std::log2(x) : x;
      xmin = std::min(xmin, v);
      xmax = std::max(xmax, v);
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
  }
  if (!std::isfinite(xmin)) throw std::invalid_argument("plot has no points");
  Frame f{xmin, xmax, spec.y_min, spec.y_max, spec.log2_x, 1.0};
  if (spec.log2_x) {
    f.x_lo = std::floor(xmin);
    f.x_hi = std::max(std::ceil(xmax), f.x_lo + 1.0);
  } else if (xmax <= xmin) {
    f.x_hi = xmin + 1.0;
  }
  if (spec.y_max <= spec.y_min) {
    const double lo = std::min(0.0, ymin);
    const double hi = ymax > lo ? ymax : lo + 1.0;
    f.y_step = nice_step(hi - lo, 5);
    f.y_lo = std::floor(lo / f.y_step) * f.y_step;
    f.y_hi = std::ceil(hi * 1.05 / f.y_step) * f.y_step;
  } else {
    f.y_step = nice_step(spec.y_max - spec.y_min, 5);
  }
  return f;
}

std::string x_tick_label(double v, bool log2_x) {
  std::ostringstream s;
  s << std::setprecision(10) << (log2_x ? std::exp2(v) : v);
  return s.str();
}

void draw_axes(const PlotSpec& spec, const Frame& f, std::ostringstream& out) {
  const double x0 = kLeft;
  const double x1 = kWidth - kRight;
  const double y0 = kHeight - kBottom;
  const double y1 = kTop;
  const double ystep = f.y_step;
  for (double y = f.y_lo; y <= f.y_hi + 1e-9 * ystep; y += ystep) {
    const double p = f.py(y);
    out << "<line x1=\"" << num(x0) << "\" y1=\"" << num(p) << "\" x2=\"" << num(x1) << "\" y2=\""
        << num(p) << "\" stroke=\"#e0e0e0\"/>\n";
    std::ostringstream label;
    if (spec.y_percent) {
      label << std::fixed << std::setprecision(ystep * 100 >= 1 ? 0 : 1) << y * 100 << "%";
    } else {
      label << std::setprecision(6) << y;
    }
    out << "<text x=\"" << num(x0 - 6) << "\" y=\"" << num(p + 4)
        << "\" text-anchor=\"end\" font-size=\"12\">" << label.str() << "</text>\n";
  }
  const double xstep = spec.log2_x ? 1.0 : nice_step(f.x_hi - f.x_lo, 6);
  const double xfirst = spec.log2_x ? f.x_lo : std::ceil(f.x_lo / xstep) * xstep;
  for (double v = xfirst; v <= f.x_hi + 1e-9; v += xstep) {
    const double p = kLeft + (v - f.x_lo) / (f.x_hi - f.x_lo) * (x1 - x0);
    out << "<line x1=\"" << num(p) << "\" y1=\"" << num(y0) << "\" x2=\"" << num(p) << "\" y2=\""
        << num(y1) << "\" stroke=\"#f0f0f0\"/>\n";
    out << "<text x=\"" << num(p) << "\" y=\"" << num(y0 + 18)
        << "\" text-anchor=\"middle\" font-size=\"12\">" << x_tick_label(v, spec.log2_x)
        << "</text>\n";
  }
  out << "<rect x=\"" << num(x0) << "\" y=\"" << num(y1) << "\" width=\"" << num(x1 - x0)
      << "\" height=\"" << num(y0 - y1) << "\" fill=\"none\" stroke=\"#333\"/>\n";
  out << "<text x=\"" << num((x0 + x1) / 2) << "\" y=\"" << num(kHeight - 14)
      << "\" text-anchor=\"middle\" font-size=\"13\">" << escape(spec.x_label) << "</text>\n";
  out << "<text transform=\"translate(18," << num((y0 + y1) / 2)
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">" << escape(spec.y_label)
      << "</text>\n";
}

void draw_marker(const PlotSeries& s, double x, double y, std::ostringstream& out) {
  if (s.hollow) {
    out << "<rect x=\"" << num(x - 4.5) << "\" y=\"" << num(y - 4.5)
        << "\" width=\"9\" height=\"9\" fill=\"white\" stroke=\"" << s.color
        << "\" stroke-width=\"2\"/>\n";
  } else {
    out << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"3.5\" fill=\"" << s.color
        << "\"/>\n";
  }
}

void draw_series(const PlotSpec& spec, const Frame& f, std::ostringstream& out) {
  double legend_y = kTop + 10;
  for (const auto& s : spec.series) {
    auto pts = s.points;
    std::stable_sort(pts.begin(), pts.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    if (s.lines && pts.size() > 1) {
      out << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\" points=\"";
      for (std::size_t i = 0; i < pts.size(); ++i) {
        out << (i ? " " : "") << num(f.px(pts[i].first)) << "," << num(f.py(pts[i].second));
      }
      out << "\"/>\n";
    }
    if (s.markers) {
      for (const auto& [x, y] : pts) draw_marker(s, f.px(x), f.py(y), out);
    }
    const double lx = kWidth - kRight + 16;
    if (s.lines) {
      out << "<line x1=\"" << num(lx) << "\" y1=\"" << num(legend_y) << "\" x2=\"" << num(lx + 22)
          << "\" y2=\"" << num(legend_y) << "\" stroke=\"" << s.color << "\" stroke-width=\"2\"/>\n";
    }
    if (s.markers) draw_marker(s, lx + 11, legend_y, out);
    out << "<text x=\"" << num(lx + 30) << "\" y=\"" << num(legend_y + 4) << "\" font-size=\"11\">"
        << escape(s.name) << "</text>\n";
    legend_y += 20;
  }
}

}  // namespace

std::string render_svg(const PlotSpec& spec) {
  const Frame f = make_frame(spec);
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(kWidth) << "\" height=\""
      << num(kHeight) << "\" viewBox=\"0 0 " << num(kWidth) << " " << num(kHeight)
      << "\" font-family=\"sans-serif\">\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out << "<text x=\"" << num(kWidth / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
      << escape(spec.title) << "</text>\n";
  draw_axes(spec, f, out);
  draw_series(spec, f, out);
  out << "</svg>\n";
  return out.str();
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

}  // namespace clustersim::tools
