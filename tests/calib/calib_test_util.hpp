// Helpers shared by the calib tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "calib/measured_tables.hpp"
#include "calib/tables.hpp"
#include "sim/cost_model.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::calib::testing {

/// A GPU as the catalogs describe it: datasheet peaks (NVIDIA H200 / H100 SXM / B200 datasheets,
/// as in ../shared/reference/measured.yaml hardware:) and a DGX H100/H200 host
/// (platforms/catalog/hgx_h200.yaml: PCIe Gen5 x16, 112 cores and 614.4 GB/s DRAM for 8 GPUs).
/// Only the name selects the cost model's derivation rule; the peaks feed the roofline the
/// model keeps for the network and the FP32 ratio.
inline sim::GpuSpec gpu(const std::string& name, double hbm_tbps) {
  sim::GpuSpec g;
  g.name = name;
  g.peak_bf16 = {name == "B200" ? 2250e12 : 989e12};
  g.peak_fp8 = {name == "B200" ? 4500e12 : 1979e12};
  g.peak_fp32 = {67e12};
  g.hbm_capacity = {141e9};
  g.hbm_bandwidth = {hbm_tbps * 1e12};
  g.tdp = {name == "B200" ? 1000.0 : name == "GB200" ? 1200.0 : 700.0};
  g.host_link_bandwidth = {64e9};
  g.host_cores_per_gpu = 14.0;
  g.host_memory_bandwidth_per_gpu = {614.4e9 / 8};
  g.gpus_per_host = 8;
  return g;
}

/// A cuDNN attention op of batch 1, head_dim 128 and kv_heads = heads / 8 (the table's gqa set),
/// `seq` tokens of queries and keys.
inline sim::Op attention_op(std::int64_t heads, std::int64_t seq, bool backward, bool causal = true) {
  sim::Op op;
  sim::AttentionShape a;
  a.batch = 1;
  a.heads = heads;
  a.kv_heads = heads / 8;
  a.seq_q = a.seq_kv = seq;
  a.head_dim = a.head_dim_v = 128;
  a.causal = causal;
  a.backward = backward;
  op.shape = a;
  return op;
}

/// A GEMM op as TE's TP overlap runs it: `splits` chunk GEMMs, `margin` SMs left to the
/// communication kernel, `busy` SMs held by it (sim::GemmShape).
inline sim::Op gemm_op(std::int64_t m, std::int64_t n, std::int64_t k, sim::DType dt, int splits,
                       int margin, int busy, sim::Phase phase = sim::Phase::Forward) {
  sim::GemmShape g{m, n, k, dt};
  g.splits = splits;
  g.sm_margin = margin;
  g.busy_sms = busy;
  sim::Op op;
  op.shape = g;
  op.phase = phase;
  return op;
}

/// A memory-bound op of `bytes` moved by kernel family `k`.
inline sim::Op mem_op(sim::MemKernel k, double bytes) {
  sim::Op op;
  op.shape = sim::MemBoundShape{k};
  op.bytes = bytes;
  return op;
}

/// The time_s of the first row of `file` (in the measured H200 directory) whose listed columns
/// have the listed values; a test failure and 0 when no row matches.
inline double measured_time(const std::string& file,
                            const std::vector<std::pair<std::string, std::string>>& match) {
  const CsvTable t = read_csv(default_measured_dir() + "/" + file);
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    bool ok = true;
    for (const auto& [col, val] : match) ok = ok && t.text(r, t.column(col)) == val;
    if (ok) return t.number(r, t.column("time_s"));
  }
  ADD_FAILURE() << "no such row in " << file;
  return 0.0;
}

/// The measured H200 tables loaded from a copy of their directory without `file` (as data
/// measured before that table existed); the copy is removed again.
inline std::shared_ptr<const MeasuredTables> tables_without(const std::string& file) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("clustersim_without_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(default_measured_dir())) {
    if (e.is_regular_file() && e.path().filename() != file) fs::copy_file(e.path(), dir / e.path().filename());
  }
  auto tables = MeasuredTables::load(dir.string());
  fs::remove_all(dir);
  return tables;
}

/// Writes `csv` to a scratch file, expects `load` to reject it with a SpecError at `line`
/// naming `field`, and removes the file.
template <typename Loader>
void expect_rejected_table(Loader load, const std::string& csv, int line, const std::string& field) {
  namespace fs = std::filesystem;
  const fs::path file = fs::temp_directory_path() / ("clustersim_bad_" + std::to_string(::getpid()) + ".csv");
  std::ofstream(file) << csv;
  try {
    load(file.string());
    ADD_FAILURE() << "accepted " << csv;
  } catch (const SpecError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
  }
  fs::remove(file);
}

}  // namespace clustersim::calib::testing
