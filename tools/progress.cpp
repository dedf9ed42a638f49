#include "tools/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>

namespace clustersim::tools {

namespace {
constexpr std::size_t kBarWidth = 30;
}  // namespace

ProgressBar::ProgressBar(std::string label, std::size_t total)
    : label_(std::move(label)), total_(total), tty_(::isatty(STDERR_FILENO) != 0) {}

void ProgressBar::update(std::size_t done) {
  if (total_ == 0) return;
  if (done > total_) done = total_;
  if (tty_) {
    const std::size_t filled = kBarWidth * done / total_;
    const std::string bar = std::string(filled, '#') + std::string(kBarWidth - filled, '.');
    std::fprintf(stderr, "\r%s [%s] %zu/%zu", label_.c_str(), bar.c_str(), done, total_);
    std::fflush(stderr);
    return;
  }
  const std::size_t decile = 10 * done / total_;
  if (decile > last_decile_ || done == total_) {
    last_decile_ = decile;
    std::fprintf(stderr, "%s: %zu/%zu\n", label_.c_str(), done, total_);
  }
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  if (tty_ && total_ > 0) std::fprintf(stderr, "\n");
}

}  // namespace clustersim::tools
