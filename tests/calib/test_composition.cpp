// The cost model against a measured layer: calib/data/h200/composition.csv holds, for four
// model shards, the time of a transformer layer's GEMMs and attention played back to back in
// training order on one H200 (calib/probes/composition.py). The simulator costs that layer as
// the sum of the ops' table times; the two must agree. Nothing is fitted to this file.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "calib/measured_cost_model.hpp"
#include "calib/tables.hpp"
#include "calib_test_util.hpp"

namespace clustersim::calib {
namespace {

// One shard as composition.py's SHARDS: tokens, hidden, heads, kv heads, head dim, ffn, gated
// MLP, tensor-parallel size.
struct Shard {
  const char* name;
  std::int64_t t, h, heads, kv, d, ffn;
  bool gated;
  std::int64_t tp;
};
constexpr Shard kShards[] = {
    {"llama3_70b_tp4_s8k", 8192, 8192, 64, 8, 128, 28672, true, 4},
    {"llama3_8b_tp1_s8k", 8192, 4096, 32, 8, 128, 14336, true, 1},
    {"gpt3_175b_tp4_s2k", 2048, 12288, 96, 96, 128, 49152, false, 4},
    {"llama3_405b_tp8_s8k", 8192, 16384, 128, 8, 128, 53248, true, 8},
};

sim::Op gemm(std::int64_t m, std::int64_t n, std::int64_t k, sim::Phase phase) {
  sim::Op op;
  op.shape = sim::GemmShape{m, n, k, sim::DType::BF16};
  op.phase = phase;
  return op;
}

sim::Op attention(const Shard& s, bool backward) {
  sim::Op op;
  sim::AttentionShape a;
  a.batch = 1;
  a.heads = s.heads / s.tp;
  a.kv_heads = std::max<std::int64_t>(1, s.kv / s.tp);
  a.seq_q = a.seq_kv = s.t;
  a.head_dim = a.head_dim_v = s.d;
  a.backward = backward;
  op.shape = a;
  op.phase = backward ? sim::Phase::Backward : sim::Phase::Forward;
  return op;
}

// The layer's ops as the workload generator writes them: forward (tokens, out, in); backward
// dgrad (tokens, in, out) and wgrad (in, out, tokens).
double table_layer_time(const MeasuredCostModel& model, const Shard& s) {
  const std::int64_t heads = s.heads / s.tp, kv = std::max<std::int64_t>(1, s.kv / s.tp);
  const std::int64_t ffn = s.ffn / s.tp;
  const std::vector<std::pair<std::int64_t, std::int64_t>> linears = {
      {(heads + 2 * kv) * s.d, s.h}, {s.h, heads * s.d}, {ffn * (s.gated ? 2 : 1), s.h}, {s.h, ffn}};
  double total = model.compute_time(attention(s, false)) + model.compute_time(attention(s, true));
  for (const auto& [out, in] : linears) {
    total += model.compute_time(gemm(s.t, out, in, sim::Phase::Forward));
    total += model.compute_time(gemm(s.t, in, out, sim::Phase::Backward));
    total += model.compute_time(gemm(in, out, s.t, sim::Phase::Backward));
  }
  return total;
}

double measured(const CsvTable& t, const std::string& shard, const std::string& op) {
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    if (t.text(r, t.column("shard")) == shard && t.text(r, t.column("op")) == op) {
      return t.number(r, t.column("time_s"));
    }
  }
  ADD_FAILURE() << "no row " << shard << "/" << op << " in " << t.path;
  return 0.0;
}

// Measured agreement (runs 9-10, all at the sustained power state of back-to-back GEMMs):
// -2.0% to -0.3% (docs/calibration.md). Stated tolerance 3%: a cost model that dropped the
// attention (-11% on the 70B shard) misses it; so would a GEMM grid queued behind a one-SM spin,
// under which the GPU clocked up (calls >= 1 ms 6% faster, median; discarded in run 9).
TEST(Composition, LayerFromTheTablesMatchesTheMeasuredBackToBackLayerWithinThreePercent) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const MeasuredCostModel model(testing::gpu("H200-SXM", 4.8), tables);
  const CsvTable csv = read_csv(default_measured_dir() + "/composition.csv");
  for (const Shard& s : kShards) {
    const double composed = measured(csv, s.name, "composed_layer");
    const double predicted = table_layer_time(model, s);
    EXPECT_NEAR(predicted / composed, 1.0, 0.03) << s.name << ": tables " << predicted * 1e3
                                                 << " ms, measured " << composed * 1e3 << " ms";
  }
}

}  // namespace
}  // namespace clustersim::calib
