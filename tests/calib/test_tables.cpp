// Tests of the probe-table reader (calib/tables) and the log-log grid (calib/log_grid).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "calib/copy_delay.hpp"
#include "calib/log_grid.hpp"
#include "calib/measured_tables.hpp"
#include "calib/power_boost.hpp"
#include "calib/tables.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib {
namespace {

namespace fs = std::filesystem;

// Writes `text` to a fresh file in the temporary directory and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "clustersim_test_calib";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

const char* kGemmHeader = "dtype,layout,m,n,k,time_s,max_rel_err\n";

// Expects a SpecError whose message names the file, the line and the field.
template <typename Fn>
void expect_spec_error(Fn fn, const std::string& file, int line, const std::string& field) {
  try {
    fn();
    FAIL() << "no SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), file);
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST(CsvTable, ReadsProvenanceColumnsAndRows) {
  const std::string p = write_temp("ok.csv",
                                   "# probe: gemm\n# date_utc: 2026-11-29T20:00:00Z\n" +
                                       std::string(kGemmHeader) +
                                       "bf16,fwd,1024,512,512,1e-05,0.001\n# gpu0_after: x\n");
  const CsvTable t = read_csv(p);
  EXPECT_EQ(t.provenance_value("probe"), "gemm");
  EXPECT_EQ(t.provenance_value("gpu0_after"), "x");
  EXPECT_EQ(t.header_line, 3);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.lines[0], 4);
  EXPECT_DOUBLE_EQ(t.number(0, t.column("time_s")), 1e-5);
}

TEST(CsvTable, RowOfWrongWidthNamesTheLine) {
  const std::string p = write_temp("width.csv", std::string(kGemmHeader) +
                                                    "bf16,fwd,1024,512,512,1e-05,0.001\n"
                                                    "bf16,fwd,2048,512,512,1e-05\n");
  expect_spec_error([&] { read_csv(p); }, p, 3, "");
}

TEST(CsvTable, NonNumericCellNamesLineAndColumn) {
  const std::string p = write_temp("nan.csv", std::string(kGemmHeader) +
                                                  "bf16,fwd,1024,512,512,1e-05,0.001\n"
                                                  "bf16,fwd,2048,fast,512,1e-05,0.001\n");
  expect_spec_error([&] { load_gemm_series(p); }, p, 3, "n");
}

TEST(CsvTable, MissingColumnNamesTheHeaderLine) {
  const std::string p = write_temp("nocol.csv", "# x: y\ndtype,layout,m,n,time_s,max_rel_err\n"
                                                "bf16,fwd,1024,512,1e-05,0.001\n");
  expect_spec_error([&] { load_gemm_series(p); }, p, 2, "k");
}

TEST(CsvTable, UnknownGemmLayoutOrDtypeNamesTheRow) {
  const std::string layout = write_temp("layout.csv", std::string(kGemmHeader) +
                                                          "bf16,fwd,1024,512,512,1e-05,0.001\n"
                                                          "bf16,xyz,1024,512,512,1e-05,0.001\n");
  expect_spec_error([&] { load_gemm_series(layout); }, layout, 3, "layout");
  const std::string dtype = write_temp("dtype.csv", std::string(kGemmHeader) +
                                                        "fp16,fwd,1024,512,512,1e-05,0.001\n");
  expect_spec_error([&] { load_gemm_series(dtype); }, dtype, 2, "dtype");
}

TEST(CsvTable, FailedSpotCheckIsAnError) {
  const std::string p = write_temp("spot.csv", std::string(kGemmHeader) +
                                                   "bf16,fwd,1024,512,512,1e-05,0.5\n");
  expect_spec_error([&] { load_gemm_series(p); }, p, 2, "max_rel_err");
}

TEST(CsvTable, ContextParallelTableHoldsOnlyUnmaskedBlocks) {
  const std::string head = "backend,set,direction,batch,heads,seq_q,seq_kv,causal,time_s,max_rel_err\n";
  const std::string ok = write_temp("cp_ok.csv", head + "cudnn,gqa,fwd,1,8,4096,2048,0,5e-05,0.002\n");
  const auto series = load_attention_cp_series(ok);
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].key, "attention_cp/cudnn/gqa/fwd");
  EXPECT_EQ(series[0].points[0].coords, (std::vector<double>{4096, 0.5, 8}));
  const std::string bad = write_temp("cp_causal.csv", head + "cudnn,gqa,fwd,1,8,4096,2048,1,5e-05,0.002\n");
  expect_spec_error([&] { load_attention_cp_series(bad); }, bad, 2, "causal");
}

TEST(CsvTable, NonPositiveTimeIsAnError) {
  const std::string p = write_temp("time.csv", std::string(kGemmHeader) +
                                                   "bf16,fwd,1024,512,512,0,0.001\n");
  expect_spec_error([&] { load_gemm_series(p); }, p, 2, "time_s");
}

// A 1e308 s time printed 80-digit errors, a negative or 1e23 coordinate made a series no lookup
// reads: errors at their row.
TEST(CsvTable, AbsurdTimesAndCoordinatesAreErrors) {
  const std::string slow = write_temp("slow.csv", std::string(kGemmHeader) + "bf16,fwd,1024,512,512,1e308,0.001\n");
  expect_spec_error([&] { load_gemm_series(slow); }, slow, 2, "time_s");
  const std::string big = write_temp("big.csv", std::string(kGemmHeader) + "bf16,fwd,1e23,512,512,1e-05,0.001\n");
  expect_spec_error([&] { load_gemm_series(big); }, big, 2, "m");
  const std::string mem = write_temp("mem.csv", "kernel,bytes,time_s,max_rel_err\ncopy,-8192,1e-06,0.001\n");
  expect_spec_error([&] { load_membound_series(mem); }, mem, 2, "bytes");
  // Every table's numbers: 0 or a magnitude in [1e-30, 1e18] (the factor tables too).
  const std::string head = "compute,channels,bytes,compute_slowdown,comm_slowdown,check_err\n";
  const std::string huge = write_temp("interf_huge.csv", head + "gemm,default,1e308,1.1,1.2,0\n");
  expect_spec_error([&] { load_interference(huge); }, huge, 2, "bytes");
  const std::string tiny = write_temp("interf_tiny.csv", head + "gemm,default,16777216,1e-308,1.2,0\n");
  expect_spec_error([&] { load_interference(tiny); }, tiny, 2, "compute_slowdown");
}

// Names no probe writes (a collective, algorithm, protocol or kernel) are errors at their row.
TEST(CsvTable, UnknownNcclOrKernelNamesAreErrors) {
  const std::string head = "collective,algo,proto,nranks,bytes,time_s,max_rel_err\n";
  const std::string ok = "all_reduce,Ring,Simple,2,1024,2e-05,0\n";
  for (const auto& [row, field] : {std::pair<std::string, std::string>{"bogus,Ring,Simple,2,1024,2e-05,0\n", "collective"},
                                   {"all_reduce,Bogus,Simple,2,1024,2e-05,0\n", "algo"},
                                   {"all_reduce,Ring,Fast,2,1024,2e-05,0\n", "proto"}}) {
    const std::string p = write_temp("nccl_" + field + ".csv", head + ok + row);
    expect_spec_error([&] { load_nccl_series(p); }, p, 3, field);
  }
  const std::string ranks = write_temp("nccl_ranks.csv", head + "all_reduce,Ring,Simple,0,1024,2e-05,0\n");
  expect_spec_error([&] { load_nccl_series(ranks); }, ranks, 2, "nranks");
  const std::string kernel = write_temp("kernel.csv", "kernel,bytes,time_s,max_rel_err\nbogus,8192,1e-06,0.001\n");
  expect_spec_error([&] { load_membound_series(kernel); }, kernel, 2, "kernel");
}

TEST(CsvTable, EmptyOrMissingTablesAreErrors) {
  const std::string p = write_temp("empty.csv", "# only provenance\n" + std::string(kGemmHeader));
  expect_spec_error([&] { read_csv(p); }, p, 2, "");
  EXPECT_THROW(read_csv(p + ".absent"), SpecError);
}

// A table t = c * m * n * k on a 3 x 2 x 2 grid, optionally leaving out or doubling a point.
MeasuredSeries power_law(bool drop_one, bool duplicate_one) {
  MeasuredSeries s;
  s.key = "gemm/bf16/fwd";
  s.file = "synthetic.csv";
  s.axes = {"m", "n", "k"};
  int line = 1;
  for (double m : {1024.0, 2048.0, 8192.0})
    for (double n : {512.0, 4096.0})
      for (double k : {512.0, 1024.0}) {
        if (drop_one && m == 2048.0 && n == 4096.0 && k == 512.0) continue;
        s.points.push_back({{m, n, k}, 1e-15 * m * n * k, ++line});
      }
  if (duplicate_one) s.points.push_back(s.points.front());
  return s;
}

TEST(LogGrid, IncompleteGridNamesTheMissingPoint) {
  try {
    LogGrid g(power_law(true, false));
    FAIL() << "no SpecError";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("m=2048 n=4096 k=512"), std::string::npos) << e.what();
  }
}

TEST(LogGrid, DuplicatePointIsAnError) {
  EXPECT_THROW(LogGrid g(power_law(false, true)), SpecError);
}

TEST(LogGrid, PowerLawIsExactBetweenAndAtNodes) {
  const LogGrid g(power_law(false, false));
  for (std::size_t i = 0; i < g.size(); ++i) {
    const auto x = g.node_coords(i);
    EXPECT_NEAR(g.time_at(x) / (1e-15 * x[0] * x[1] * x[2]), 1.0, 1e-12);
  }
  // Off-grid: log-log multilinear interpolation is exact for a product of powers.
  EXPECT_NEAR(g.time_at({3000.0, 1500.0, 700.0}) / (1e-15 * 3000.0 * 1500.0 * 700.0), 1.0, 1e-12);
  EXPECT_TRUE(g.contains({3000.0, 1500.0, 700.0}));
  EXPECT_FALSE(g.contains({3000.0, 1500.0, 2048.0}));
  // Outside: clamped to the edge, not extrapolated.
  EXPECT_NEAR(g.time_at({3000.0, 1500.0, 4096.0}), g.time_at({3000.0, 1500.0, 1024.0}), 1e-18);
  EXPECT_THROW(g.time_at({3000.0, 1500.0}), std::invalid_argument);
  EXPECT_THROW(g.time_at({3000.0, -1.0, 1.0}), std::invalid_argument);
}

TEST(LogGrid, LeaveOneOutOfAPowerLawIsExact) {
  const LooStats s = leave_one_out(LogGrid(power_law(false, false)));
  EXPECT_EQ(s.points, 12u);
  EXPECT_LT(s.max, 1e-12);
}

TEST(LogGrid, LeaveOneOutSeesABump) {
  MeasuredSeries s;
  s.key = "membound/copy";
  s.axes = {"bytes"};
  for (int i = 0; i < 7; ++i) {
    const double b = 1024.0 * std::pow(2.0, i);
    s.points.push_back({{b}, (i == 3 ? 1.5 : 1.0) * b * 1e-12, i + 2});
  }
  const LooStats st = leave_one_out(LogGrid(s));
  EXPECT_NEAR(st.max, 1.0 / 3.0, 1e-9);  // predicted 1.0 for a measured 1.5
  EXPECT_EQ(st.worst, "bytes=8192");
  EXPECT_EQ(st.over_10pct, 3u);  // the bump and its two neighbours (sqrt(1.5) - 1 = 22%)
  EXPECT_EQ(leave_one_out(LogGrid(s), 1.0).points, 0u);  // nothing that slow
}

TEST(LogGrid, MeasuredTablesAreReproducedAtEveryNode) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  for (const auto& key : tables->keys()) {
    const LogGrid& g = tables->grid(key);
    for (std::size_t i = 0; i < g.size(); ++i) {
      ASSERT_NEAR(g.time_at(g.node_coords(i)) / g.node_time(i), 1.0, 1e-12) << key;
    }
  }
}

TEST(MeasuredTables, LoadsEveryTableOfTheH200Directory) {
  const auto t = MeasuredTables::load(default_measured_dir());
  for (const char* key : {"gemm/bf16/fwd", "gemm/bf16/dgrad", "gemm/bf16/wgrad", "gemm/fp8/tn",
                          "attention/cudnn/gqa/fwd", "attention/cudnn/mla/bwd",
                          "attention/flash/gqa/fwd", "membound/copy", "membound/adamw",
                          "nccl/default/default/all_reduce", "nccl/default/default/send",
                          "nccl/ring/ll128/all_gather", "nccl/tree/simple/all_reduce",
                          "nccl/nccl_choice/all_reduce", "nccl/nccl_choice/reduce_scatter",
                          "attention_cp/cudnn/gqa/fwd", "attention_cp/cudnn/gqa/bwd"}) {
    EXPECT_TRUE(t->has(key)) << key;
  }
  // m 2x steps, 256 and 512 since runs 73-74; n, k with 1.5x points, n to 64k (run 44), k from
  // 256 since run 77
  EXPECT_EQ(t->grid("gemm/bf16/fwd").size(), 9u * 15u * 14u);
  EXPECT_EQ(t->grid("gemm/bf16/fwd").axis(0).front(), 256.0);
  EXPECT_EQ(t->grid("gemm/bf16/wgrad").axis(2).front(), 256.0);
  EXPECT_EQ(t->grid("gemm/fp8/tn_fastacc").size(), 9u * 15u * 14u);
  // seq_q, kv_ratio, heads on run 59's 1.5x steps (5 x 3 x 5 before it)
  EXPECT_EQ(t->grid("attention_cp/cudnn/gqa/bwd").size(), 9u * 3u * 9u);
  EXPECT_EQ(t->grid("attention_cp/flash/gqa/fwd").size(), 9u * 3u * 9u);
  // FP8 split accumulation: k to 256k since run 68 (49k, 64k, 128k, 256k planes), n to 128k
  // since run 70 (96k, 128k planes), m from 256 since runs 73-74, k from 256 since run 77
  EXPECT_EQ(t->grid("gemm/fp8/tn").size(), 9u * (15u + 2u) * (13u + 5u));
  // MHA: seq 1k-32k x heads 6-128 on run 58's 1.5x steps (5 x 4 before it); cuDNN to 128k
  // since run 69 (48k, 64k, 96k, 128k), FlashAttention-2 since run 72
  EXPECT_EQ(t->grid("attention/cudnn/mha/fwd").size(), (11u + 4u) * 10u);
  // MLA (cuDNN only): seq 512-32k, and 48k-128k since run 69, x heads 16-128
  EXPECT_EQ(t->grid("attention/cudnn/mla/bwd").size(), (13u + 4u) * 4u);
  EXPECT_EQ(t->grid("attention/flash/mha/bwd").size(), (11u + 4u) * 10u);
  // FlashAttention-2's gqa set: seq 512-32k, and 48k-128k since run 72, x heads 4-128
  EXPECT_EQ(t->grid("attention/flash/gqa/fwd").size(), (13u + 4u) * 6u);
  EXPECT_EQ(t->nccl_ranks(), 2);
  EXPECT_EQ(t->catalog().size(), 2u);
  EXPECT_NE(t->provenance().find("NVIDIA H200"), std::string::npos) << t->provenance();
  EXPECT_THROW(t->grid("gemm/fp4/tn"), std::out_of_range);
  EXPECT_THROW(MeasuredTables::load(default_measured_dir() + "/absent"), SpecError);
}

TEST(MeasuredTables, NcclChoiceProtocolIsThatOfTheLargestLoggedSizeAtOrBelow) {
  const auto t = MeasuredTables::load(default_measured_dir());
  // nccl_default_algo_choice.csv: Ring/LL up to 1.5 MiB, Ring/Simple from 2 MiB (all_reduce);
  // all_gather sizes are logged per rank and compared at nranks x the logged size.
  EXPECT_EQ(t->nccl_choice_protocol("all_reduce", 1024.0), "ll");
  EXPECT_EQ(t->nccl_choice_protocol("all_reduce", 1572864.0), "ll");
  EXPECT_EQ(t->nccl_choice_protocol("all_reduce", 2097152.0), "simple");
  EXPECT_EQ(t->nccl_choice_protocol("all_reduce", 3.0e6), "simple");     // between logged sizes
  EXPECT_EQ(t->nccl_choice_protocol("all_reduce", 16.0), "ll");          // below the smallest
  EXPECT_EQ(t->nccl_choice_protocol("all_reduce", 1.0e12), "simple");    // above the largest
  EXPECT_EQ(t->nccl_choice_protocol("all_gather", 1024.0), "ll");
  EXPECT_EQ(t->nccl_choice_protocol("all_to_all", 1024.0), "");          // never logged
}

// The power-state boost (power_boost.csv): linear in the compute-bound share between measured
// shares, the lowest share's boost below it, 1 at share 1; malformed curves are errors.
TEST(PowerBoostTable, InterpolatesBetweenMeasuredSharesAndRejectsBadCurves) {
  const std::string ok = write_temp("boost.csv",
                                    "kind,share,boost\ngemm_bf16,0.2,1.2\ngemm_bf16,0.6,1.1\n"
                                    "gemm_bf16,1.0,1.0\n");
  const PowerBoostTable t = PowerBoostTable::load(ok);
  EXPECT_DOUBLE_EQ(t.boost("gemm_bf16", 0.05), 1.2);
  EXPECT_DOUBLE_EQ(t.boost("gemm_bf16", 0.4), 1.15);
  EXPECT_DOUBLE_EQ(t.boost("gemm_bf16", 0.8), 1.05);
  EXPECT_DOUBLE_EQ(t.boost("gemm_bf16", 1.0), 1.0);
  EXPECT_DOUBLE_EQ(t.boost("attention", 0.4), 1.0);  // not in the table
  const std::string below = write_temp("boost_below.csv", "kind,share,boost\na,0.5,0.9\na,1,1\n");
  expect_spec_error([&] { PowerBoostTable::load(below); }, below, 2, "boost");
  const std::string order = write_temp("boost_order.csv", "kind,share,boost\na,0.5,1.1\na,0.4,1.2\n");
  expect_spec_error([&] { PowerBoostTable::load(order); }, order, 3, "share");
  const std::string open_end = write_temp("boost_end.csv", "kind,share,boost\na,0.5,1.1\n");
  expect_spec_error([&] { PowerBoostTable::load(open_end); }, open_end, 0, "share");
}

// interference.csv: a row of a class no lookup reads, or with a slowdown or size that is not
// positive, is an error at its line and column (they were dropped, or clamped to 1, silently).
TEST(InterferenceTable, RejectsUnknownClassesAndNonPositiveFigures) {
  const std::string head =
      "rank,compute,channels,bytes,compute_alone_s,compute_with_comm_s,compute_slowdown,comm_alone_s,"
      "comm_with_compute_s,comm_slowdown,comm_algbw_alone_GBps,check_err\n";
  const std::string row = "0,gemm,default,16777216,0.0016,0.00176,1.074,8.4e-05,0.000217,2.588,200,0\n";
  EXPECT_EQ(load_interference(write_temp("interf_ok.csv", head + row)).size(), 1u);
  const std::string toaster = write_temp("interf_kind.csv", head + row + "0,toaster" + row.substr(6));
  expect_spec_error([&] { load_interference(toaster); }, toaster, 3, "compute");
  const std::string slow = write_temp("interf_slow.csv", head + "0,gemm,default,16777216,0.0016,0.00176,-1,8.4e-05,0.000217,2.588,200,0\n");
  expect_spec_error([&] { load_interference(slow); }, slow, 2, "compute_slowdown");
}

// Kernels beside host copies (copy_interference.csv): a line of extra time over the kernel's
// time per class and copy directions, both parts >= 0; bad rows are errors at their line.
TEST(CopyDelayTable, FitsALinePerClassAndDirectionAndRejectsBadRows) {
  const std::string head = "kernel,background,seconds_alone,seconds_beside,covered,check\n";
  const std::string ok = write_temp(
      "copy_delay.csv", head + "gemm_a,d2h,0.001,0.00102,1,1\ngemm_b,d2h,0.0002,0.00022,1,1\n"
                               "copy_a,both,0.0001,0.000112,1,1\ncopy_b,both,0.001,0.00103,1,1\n");
  const CopyDelayTable t = CopyDelayTable::load(ok);
  // GEMMs: 20 us whatever their time; copies: 10 us + 2%.
  EXPECT_NEAR(t.delay(sim::ComputeClass::Gemm, CopyDelayTable::kDeviceToHost).fixed_s, 20e-6, 1e-12);
  EXPECT_NEAR(t.delay(sim::ComputeClass::Gemm, CopyDelayTable::kDeviceToHost).share, 0.0, 1e-9);
  const sim::CopyDelay both = t.delay(sim::ComputeClass::MemoryBound, 3);
  EXPECT_NEAR(both.fixed_s, 10e-6, 1e-12);
  EXPECT_NEAR(both.share, 0.02, 1e-9);
  EXPECT_TRUE(t.delay(sim::ComputeClass::Attention, 3).none());  // not measured
  EXPECT_TRUE(t.delay(sim::ComputeClass::Gemm, 0).none());
  const std::string failed = write_temp("copy_delay_check.csv", head + "gemm_a,d2h,0.001,0.002,1,0\n");
  expect_spec_error([&] { CopyDelayTable::load(failed); }, failed, 2, "check");
  const std::string uncovered = write_temp("copy_delay_cov.csv", head + "gemm_a,d2h,0.001,0.002,0,1\n");
  expect_spec_error([&] { CopyDelayTable::load(uncovered); }, uncovered, 2, "covered");
  const std::string kind = write_temp("copy_delay_kind.csv", head + "conv_a,d2h,0.001,0.002,1,1\n");
  expect_spec_error([&] { CopyDelayTable::load(kind); }, kind, 2, "kernel");
}

// The shares inside paced steps (copy_pace_share.csv): per class the mean of its points, at least
// 0; a class without points keeps none; an unknown class is an error at its line.
TEST(CopyDelayTable, PacedSharesAreEachClassMeanFlooredAtZero) {
  const std::string head = "run,class,slowdown\n";
  const std::string ok = write_temp("copy_pace_share.csv",
                                    head + "r1,gemm,0.01\nr2,gemm,0.03\nr1,other,-0.02\nr2,other,0.01\n");
  CopyDelayTable t;
  EXPECT_FALSE(t.has_paced());
  t.load_paced(ok);
  EXPECT_TRUE(t.has_paced());
  EXPECT_EQ(t.paced_file(), ok);
  EXPECT_NEAR(t.paced_share(sim::ComputeClass::Gemm), 0.02, 1e-12);
  EXPECT_EQ(t.paced_share(sim::ComputeClass::MemoryBound), 0.0);  // mean -0.005
  EXPECT_EQ(t.paced_share(sim::ComputeClass::Attention), 0.0);    // no points
  const std::string bad = write_temp("copy_pace_share_bad.csv", head + "r1,gemm,0.01\nr1,conv,0.02\n");
  expect_spec_error([&] { CopyDelayTable().load_paced(bad); }, bad, 3, "class");
  const std::string nan = write_temp("copy_pace_share_nan.csv", head + "r1,gemm,x\n");
  expect_spec_error([&] { CopyDelayTable().load_paced(nan); }, nan, 2, "slowdown");
}

// The committed table (runs 80-81, two passes each): GEMMs take a roughly fixed 20-35 us longer
// per call beside either direction, device copies a few us and 1-2.5%, attention ~12-14%.
TEST(CopyDelayTable, CommittedH200TableMatchesRuns80And81) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const CopyDelayTable& t = tables->copy_delay();
  ASSERT_FALSE(t.empty());
  for (int dirs = 1; dirs <= 3; ++dirs) {
    const sim::CopyDelay g = t.delay(sim::ComputeClass::Gemm, dirs);
    EXPECT_GT(g.fixed_s, 15e-6) << dirs;
    EXPECT_LT(g.fixed_s, 40e-6) << dirs;
    EXPECT_LT(g.share, 0.01) << dirs;
    const sim::CopyDelay m = t.delay(sim::ComputeClass::MemoryBound, dirs);
    EXPECT_GT(m.share, 0.005) << dirs;
    EXPECT_LT(m.share, 0.03) << dirs;
    EXPECT_LT(m.fixed_s, 8e-6) << dirs;
    EXPECT_GT(t.delay(sim::ComputeClass::Attention, dirs).share, 0.08) << dirs;
  }
}

// The committed table (runs 24-25): every kind gains at a low compute-bound share and is
// within 2% of its tables at 90%; BF16 GEMMs at half the time gain 10-13% (run 24).
TEST(PowerBoostTable, CommittedH200CurvesMatchRuns24And25) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const PowerBoostTable& t = tables->power_boost();
  ASSERT_FALSE(t.empty());
  EXPECT_NEAR(t.boost("gemm_bf16", 0.53), 1.118, 0.01);
  for (const char* kind : {"gemm_bf16", "gemm_fp8", "attention"}) {
    EXPECT_GT(t.boost(kind, 0.2), 1.10) << kind;
    EXPECT_LT(t.boost(kind, 0.9), 1.02) << kind;
    EXPECT_DOUBLE_EQ(t.boost(kind, 1.0), 1.0) << kind;
  }
}

// table_state.csv (runs 49-51): one ratio for every GEMM shape, attention by sequence length
// (linear in log(seq) between rows, the end rows' ratio outside them); a kind it lacks, or no
// file at all, keeps the tables' speed; malformed rows are rejected at their line and column.
TEST(PowerBoostTable, StateRatiosByKindAndSequenceLength) {
  PowerBoostTable t = PowerBoostTable::load(write_temp("state_boost.csv", "kind,share,boost\na,1,1\n"));
  EXPECT_DOUBLE_EQ(t.state("gemm_fp8"), 1.0);
  const std::string head = "kind,seq,ratio,min,max,shapes\n";
  t.load_state(write_temp("state.csv", head + "gemm_fp8,0,0.9,0.85,0.95,x\n"
                                              "attention_fwd,2048,1.1,1.0,1.2,x\n"
                                              "attention_fwd,8192,0.9,0.9,0.9,x\n"));
  EXPECT_DOUBLE_EQ(t.state("gemm_fp8", 123456.0), 0.9);
  EXPECT_DOUBLE_EQ(t.state("attention_fwd", 1024.0), 1.1);
  EXPECT_NEAR(t.state("attention_fwd", 4096.0), 1.0, 1e-12);  // halfway in log(seq)
  EXPECT_DOUBLE_EQ(t.state("attention_fwd", 65536.0), 0.9);
  EXPECT_DOUBLE_EQ(t.state("attention_bwd", 4096.0), 1.0);
  const std::string low = write_temp("state_low.csv", head + "a,0,0.4,0.3,0.5,x\n");
  expect_spec_error([&] { t.load_state(low); }, low, 2, "ratio");
  const std::string spread = write_temp("state_spread.csv", head + "a,0,0.9,0.95,1.0,x\n");
  expect_spec_error([&] { t.load_state(spread); }, spread, 2, "ratio");
  const std::string order = write_temp("state_order.csv", head + "a,4096,0.9,0.9,0.9,x\n"
                                                                 "a,2048,0.9,0.9,0.9,x\n");
  expect_spec_error([&] { t.load_state(order); }, order, 3, "seq");
  const std::string mixed = write_temp("state_mixed.csv", head + "a,4096,0.9,0.9,0.9,x\n"
                                                                 "a,0,0.9,0.9,0.9,x\n");
  expect_spec_error([&] { t.load_state(mixed); }, mixed, 3, "seq");
}

// The committed ratios (runs 49-51, one H200): FP8 GEMMs sustain 1.30-1.33 GHz on their own
// against the 1.44 GHz the BF16 heater holds while the tables are measured, so they run 5-9%
// slower than their tables; BF16 GEMMs within 2%; attention 8-10% slower at 8k, within 2% in
// the backward at long sequences, and faster than its table at 2k, where alone it is not
// power-limited (1.90-1.98 GHz).
TEST(PowerBoostTable, CommittedStateRatiosMatchRuns49And50) {
  const auto tables = MeasuredTables::load(default_measured_dir());
  const PowerBoostTable& t = tables->power_boost();
  ASSERT_FALSE(t.state_file().empty());
  EXPECT_GT(t.state("gemm_fp8"), 0.90);
  EXPECT_LT(t.state("gemm_fp8"), 0.95);
  EXPECT_LT(t.state("gemm_fp8_fastacc"), 0.96);
  EXPECT_NEAR(t.state("gemm_bf16"), 1.0, 0.02);
  EXPECT_LT(t.state("attention_fwd", 8192.0), 0.93);
  EXPECT_NEAR(t.state("attention_bwd", 65536.0), 1.0, 0.02);
  EXPECT_GT(t.state("attention_fwd", 2048.0), 1.0);
  // FlashAttention-2 (runs 52-53): below the power limit alone at 2k (1.98 GHz), about at its
  // table's rate from 16k.
  EXPECT_GT(t.state("attention_flash2_fwd", 2048.0), 1.1);
  EXPECT_NEAR(t.state("attention_flash2_fwd", 16384.0), 1.0, 0.03);
  EXPECT_NEAR(t.state("attention_flash2_bwd", 32768.0), 1.0, 0.03);
}

}  // namespace
}  // namespace clustersim::calib
