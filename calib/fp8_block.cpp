#include "calib/fp8_block.hpp"

#include <vector>

namespace clustersim::calib {

Fp8BlockFactor::Fp8BlockFactor(const MeasuredTables& tables) {
  const std::string base = "gemm_block/fp8/tn";
  if (!tables.has(base) || !tables.has(base + "_block2d1d") || !tables.has(base + "_block1d1d")) return;
  tensor_ = &tables.grid(base);
  block2d1d_ = &tables.grid(base + "_block2d1d");
  block1d1d_ = &tables.grid(base + "_block1d1d");
}

std::string Fp8BlockFactor::file() const { return loaded() ? tensor_->file() : ""; }

double Fp8BlockFactor::ratio(const sim::GemmShape& g, const OutOfGridNote& note) const {
  if (g.fp8_scaling == sim::Fp8Scaling::Tensor) return 1.0;
  const char* what = sim::to_string(g.fp8_scaling);
  if (!loaded()) {
    note(std::string("GEMM fp8 ") + what + ": no gemm_fp8_block table, at the per-tensor time");
    return 1.0;
  }
  const LogGrid& block = g.fp8_scaling == sim::Fp8Scaling::Block2D1D ? *block2d1d_ : *block1d1d_;
  const std::vector<double> x{static_cast<double>(g.m), static_cast<double>(g.n),
                              static_cast<double>(g.k)};
  const std::vector<double> c = block.clamp(x);
  if (c != x) {
    note(std::string("GEMM fp8 ") + what + " outside " + range_text(block) +
         ": the block/per-tensor ratio of the nearest measured shape");
  }
  return block.time_at(c) / tensor_->time_at(tensor_->clamp(x));
}

}  // namespace clustersim::calib
