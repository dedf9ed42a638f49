#include "calib/wgrad_accum.hpp"

#include <algorithm>

namespace clustersim::calib {
namespace {

const LogGrid* find(const MeasuredTables& t, const std::string& key) {
  return t.has(key) ? &t.grid(key) : nullptr;
}

}  // namespace

WgradAccumCost::WgradAccumCost(const MeasuredTables& tables) {
  for (auto [grids, layout] : {std::pair{&bf16_, "bf16/wgrad"}, std::pair{&fp8_, "fp8/tn"}}) {
    const std::string base = std::string("gemm_accum/") + layout + "/";
    *grids = {find(tables, base + "plain"), find(tables, base + "f32"), find(tables, base + "bf16")};
    if (grids->f32 == nullptr || grids->bf16 == nullptr) grids->plain = nullptr;
  }
}

std::string WgradAccumCost::file() const { return loaded() ? bf16_.plain->file() : ""; }

double WgradAccumCost::extra_time(const sim::GemmShape& g, const OutOfGridNote& note) const {
  if (g.grad_accum == sim::GradAccum::None) return 0.0;
  const bool fp8 = g.dtype == sim::DType::FP8;
  const Grids& grids = fp8 ? fp8_ : bf16_;
  const char* target = g.grad_accum == sim::GradAccum::F32 ? "f32" : "bf16";
  if (grids.plain == nullptr) {
    note(std::string("GEMM wgrad accumulated into ") + target +
         " main_grad: no gemm_accum table, accumulation not charged");
    return 0.0;
  }
  const LogGrid& acc = g.grad_accum == sim::GradAccum::F32 ? *grids.f32 : *grids.bf16;
  const std::vector<double> x{static_cast<double>(g.n), static_cast<double>(g.m),
                              static_cast<double>(g.k)};
  const std::vector<double> c = acc.clamp(x);
  double extra = std::max(0.0, acc.time_at(c) - grids.plain->time_at(c));
  if (c != x) {
    note(std::string("GEMM wgrad accumulated into ") + target + " main_grad (" +
         (fp8 ? "fp8" : "bf16") + ") outside " + range_text(acc) +
         ": extra time per output element of the nearest measured shape");
    extra *= (x[0] * x[1]) / (c[0] * c[1]);
  }
  return extra;
}

}  // namespace clustersim::calib
