// A progress bar on stderr for long commands (validate, scale, sweep). On a terminal it redraws
// one line; otherwise it prints a line at every tenth of the work, so logs stay short.
#pragma once

#include <cstddef>
#include <string>

namespace clustersim::tools {

/// Progress of `total` units of work, shown on stderr.
class ProgressBar {
 public:
  /// @param label what is being done ("simulating"); @param total units (0 shows nothing).
  ProgressBar(std::string label, std::size_t total);
  /// Shows `done` of the total units as finished.
  void update(std::size_t done);
  /// Changes the total (when the amount of work is known only once it starts).
  void set_total(std::size_t total) { total_ = total; }
  /// Ends the line (on a terminal).
  void finish();

 private:
  std::string label_;
  std::size_t total_;
  bool tty_;
  std::size_t last_decile_ = 0;
  bool finished_ = false;
};

}  // namespace clustersim::tools
