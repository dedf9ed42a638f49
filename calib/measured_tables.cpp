#include "calib/measured_tables.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "sim/spec_error.hpp"

#ifndef CLUSTERSIM_CALIB_DIR
#error "CLUSTERSIM_CALIB_DIR must name the calib/data directory (set by calib/CMakeLists.txt)"
#endif

namespace clustersim::calib {
namespace {

// What a table file is for: interpolation grids the model reads, or series kept only to check
// the model against (shapes between grid nodes, or beyond the grids).
enum class Use { Grid, Catalog, Beyond };

// The table files of a measured GPU directory and how to read each (a registry, not a chain
// of ifs on file names).
struct TableFile {
  const char* name;
  std::vector<MeasuredSeries> (*load)(const std::string&);
  Use use;
  bool optional = false;  ///< a directory without the file is still complete
};

const std::vector<TableFile>& table_files() {
  static const std::vector<TableFile> kFiles = {
      {"gemm_bf16.csv", load_gemm_series, Use::Grid},
      {"gemm_fp8.csv", load_gemm_series, Use::Grid},
      // FP8 with fast accumulation (Transformer Engine's forward GEMMs); older data lack it.
      {"gemm_fp8_fastacc.csv", load_gemm_series, Use::Grid, true},
      // GEMMs as Transformer Engine's TP overlap runs them (split into chunks, planned for
      // fewer SMs; run 12, calib/probes/gemm_tp_overlap.cu); older data lack them.
      {"gemm_tp_overlap_fwd_wgrad.csv", load_tp_overlap_series, Use::Grid, true},
      {"gemm_tp_overlap_dgrad_fp8.csv", load_tp_overlap_series, Use::Grid, true},
      // GEMMs beside SMs held by another kernel, as TE's userbuffers communication kernels
      // hold them (run 18, calib/probes/gemm_tp_overlap.cu busy variants); older data lack it.
      {"gemm_busy_sms.csv", load_busy_sms_series, Use::Grid, true},
      // Weight gradients accumulated into main_grad (run 48, calib/probes/gemm.cu --accumulate);
      // older data lack it.
      {"gemm_wgrad_accum.csv", load_wgrad_accum_series, Use::Grid, true},
      // Block-scaled FP8 GEMMs beside per-tensor ones (run 78, calib/probes/gemm.cu
      // --block-scaling); older data lack them.
      {"gemm_fp8_block.csv", load_fp8_block_series, Use::Grid, true},
      {"attention.csv", load_attention_series, Use::Grid},
      // Unmasked context-parallel attention blocks (run 16, calib/probes/attention_cp.py).
      {"attention_cp.csv", load_attention_cp_series, Use::Grid, true},
      // The same blocks with FlashAttention-2 (run 52); older data lack them.
      {"attention_cp_flash.csv", load_attention_cp_series, Use::Grid, true},
      {"membound.csv", load_membound_series, Use::Grid},
      // Hugging Face's eager element-wise modules (run 19, calib/probes/eager_ops.py).
      {"membound_eager.csv", load_membound_series, Use::Grid, true},
      {"nccl_default.csv", load_nccl_series, Use::Grid},
      {"nccl_ring_ll.csv", load_nccl_series, Use::Grid},
      {"nccl_ring_ll128.csv", load_nccl_series, Use::Grid},
      {"nccl_ring_simple.csv", load_nccl_series, Use::Grid},
      {"nccl_tree_ll.csv", load_nccl_series, Use::Grid},
      {"nccl_tree_ll128.csv", load_nccl_series, Use::Grid},
      {"nccl_tree_simple.csv", load_nccl_series, Use::Grid},
      {"gemm_catalog_bf16.csv", load_gemm_series, Use::Catalog},
      {"gemm_catalog_fp8.csv", load_gemm_series, Use::Catalog},
      // Beyond the grids' edges, at long-context shapes (run 64): checks of the fallbacks.
      {"gemm_long_tokens.csv", load_gemm_series, Use::Beyond, true},
      {"attention_long.csv", load_attention_series, Use::Beyond, true},
  };
  return kFiles;
}

// NCCL reports its version as an integer (22803 = 2.28.3).
std::string nccl_version(const std::string& code) {
  try {
    const int v = std::stoi(code);
    return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
           std::to_string(v % 100);
  } catch (const std::exception&) {
    return code;
  }
}

std::string describe_provenance(const std::string& dir) {
  const CsvTable gemm = read_csv(dir + "/gemm_bf16.csv");
  const CsvTable att = read_csv(dir + "/attention.csv");
  const CsvTable nccl = read_csv(dir + "/nccl_default.csv");
  std::string gpu = gemm.provenance_value("gpu0");
  gpu = gpu.substr(0, gpu.find(" pci="));
  return gpu + ", " + gemm.provenance_value("date_utc").substr(0, 10) + ", driver " +
         gemm.provenance_value("driver") + ", cuBLASLt " + gemm.provenance_value("cublasLt") +
         ", cuDNN " + att.provenance_value("cudnn") + " via PyTorch " +
         att.provenance_value("torch") + ", NCCL " + nccl_version(nccl.provenance_value("nccl"));
}

int read_nccl_ranks(const std::string& path) {
  const CsvTable t = read_csv(path);
  const double n = t.number(0, t.column("nranks"));
  if (n < 2) throw SpecError(path, t.lines[0], "nranks", "needs at least 2 ranks");
  return static_cast<int>(n);
}

// Derivation rules. Sources: ../shared/reference/measured.yaml (hardware:), which cites the
// datasheets and the MAMF (maximum achievable matmul FLOPS) measurements of Stas Bekman's
// ml-engineering book (mamf-finder). The H200 BF16 MAMF is unpublished; the rule uses the
// H100 figure 794.5 (same GH100 die and clocks), and FP8 uses the H200's 1453.4 TFLOP/s.
// MAMF (TFLOP/s): H100 BF16 (taken for the H200), H200 FP8, B200 and GB200 BF16 / FP8.
constexpr double kMamfHopperBf16 = 794.5, kMamfHopperFp8 = 1453.4;
constexpr double kMamfB200Bf16 = 1745.0, kMamfB200Fp8 = 3432.5;
constexpr double kMamfGb200Bf16 = 1822.0, kMamfGb200Fp8 = 3615.6;
constexpr double kB200Bf16 = kMamfB200Bf16 / kMamfHopperBf16, kB200Fp8 = kMamfB200Fp8 / kMamfHopperFp8;
constexpr double kGb200Bf16 = kMamfGb200Bf16 / kMamfHopperBf16,
                 kGb200Fp8 = kMamfGb200Fp8 / kMamfHopperFp8;
// The H100 over the H200 tables, measured by the same probes and procedures (calibration runs 85
// and 87, 2026-12-05, two H100 SXM leases; calib/data/h100/h100_vs_h200.csv): the mean of the two
// runs' medians of GEMMs back to back for 5 s at six shapes (the sustained state a training
// step's GEMMs run in, runs 49/51's shapes): BF16 0.9840 / 0.9807, FP8 0.9763 / 0.9805; copies of
// 256 MiB-4 GiB (the HBM-bound regime, launch floor negligible): 1.3979 / 1.3969.
constexpr double kH100GemmBf16Time = (0.9840 + 0.9807) / 2, kH100GemmFp8Time = (0.9763 + 0.9805) / 2;
constexpr double kH100CopyTime = (1.3979 + 1.3969) / 2;

// Stated uncertainty (sim::CostUncertainty). Network transfers, every GPU: the roofline's
// InfiniBand NDR bus bandwidth, 47 GB/s per NIC read off the 46-48 GB/s of NVIDIA nccl-tests issues
// #290 and #267 (calib/roofline_cost_model.cpp), so a transfer's time lies within 47/48 - 1 and
// 47/46 - 1 of the modelled one.
constexpr sim::RelativeBounds kNetworkBounds{47.0 / 48.0 - 1.0, 47.0 / 46.0 - 1.0};
constexpr double kMiB = 1024.0 * 1024.0;

sim::RelativeBounds pm(double x) { return {-x, x}; }

// Bounds for GEMMs, attention, memory-bound kernels (those below `small_bytes`: `mem_small`).
sim::CostUncertainty bounds(sim::RelativeBounds gemm, sim::RelativeBounds attention,
                            sim::RelativeBounds mem, sim::RelativeBounds mem_small,
                            double small_bytes, std::string sources) {
  sim::CostUncertainty u;
  u.stated = true;
  u.compute = {gemm, attention, mem};
  u.memory_bound_small = mem_small;
  u.small_bytes = small_bytes;
  u.network = kNetworkBounds;
  u.basis = std::move(sources);
  return u;
}

const std::map<std::string, DerivationRule>& rules() {
  static const std::map<std::string, DerivationRule> kRules = {
      {"H200-SXM",
       {"H200-SXM", true, 1.0, 1.0, 1.0, 1.0, "measured on 2x H200 SXM (calib/data/h200)",
        bounds(pm(0.022), pm(0.031), pm(0.01), pm(0.07), 8 * kMiB,
               "GEMM: the spread between H200 machines, 0.6-2.2% (runs 61, 63); attention: a "
               "point on another H200 within 1.6-3.1% at the median (run 47); memory-bound: the "
               "probe's spread over four passes on H100s (runs 85, 87, 92), not repeated on an "
               "H200; network: the cited 46-48 GB/s per NIC"),
        true,
        989.0, 1979.0, 4.8, 700.0, true, true, {}}},
      {"H100-SXM",
       {"H100-SXM", false, 1.0 / kH100GemmBf16Time, 1.0 / kH100GemmFp8Time, 1.0, 1.0 / kH100CopyTime,
        "H200 times x an H100's measured ratios (calibration runs 85 and 87, calib/data/h100: "
        "GEMMs back to back in their sustained state x0.982 BF16, x0.978 FP8; attention x1, "
        "measured 0.97-1.04 with no consistent sign); memory-bound kernels measured on H100s "
        "(calib/data/h100/membound.csv, the geometric mean of runs 85, 87 and run 92's two "
        "passes; Hugging Face's eager modules membound_eager.csv, run 94); main_grad "
        "accumulation's extra time, checked there (run 93), x1.397 (copies of >= 256 MiB, "
        "2.86 of HBM3's 3.35 TB/s against the H200's 4.0 of 4.8); the same GH100 tensor cores, "
        "clocks and 700 W limit (datasheets)",
        bounds(pm(0.025), pm(0.05), pm(0.01), pm(0.07), 8 * kMiB,
               "GEMM: the model against four H100s at the catalog's 77 shapes, medians "
               "-2.1..+0.9% (runs 85, 87 and runs 98, 100, which set nothing); attention: "
               "measured 0.96-1.04 of the H200 at the median; memory-bound: the passes' spread "
               "(runs 85, 87, 92; runs 98 and 100 within -0.5..+0.2% from 8 MiB and +3.0..+3.6% "
               "below at the median); network: the cited 46-48 GB/s per NIC"),
        true, 989.0, 1979.0, 3.35, 700.0, true, true,
        {"h100/membound.csv", "h100/membound_eager.csv"}}},
      // B200 HBM: the HGX B200 datasheet's 62 TB/s per 8 GPUs, 7.7 TB/s each (as hgx_b200.yaml).
      {"B200",
       {"B200", false, kB200Bf16, kB200Fp8, kB200Bf16, 7.7 / 4.8,
        "H200 times / MAMF ratio (B200 BF16 1745 vs 794.5, FP8 3432.5 vs 1453.4 TFLOP/s); "
        "attention / the BF16 ratio (assumed); memory-bound above their floor / HBM ratio 7.7/4.8 TB/s",
        bounds(pm(0.10), pm(0.20), pm(0.10), pm(0.10), 0.0,
               "GEMM: MAMF is a burst figure, sustained power behaviour assumed alike; "
               "attention: kernel maturity differs; memory-bound: HBM ratio, not measured; "
               "network: the cited 46-48 GB/s per NIC"),
        false,
        2250.0, 4500.0, 7.7, 1000.0, false, false, {}, true}},
      {"GB200",
       {"GB200", false, kGb200Bf16, kGb200Fp8, kGb200Bf16, 8.0 / 4.8,
        "H200 times / MAMF ratio (GB200 BF16 1822 vs 794.5, FP8 3615.6 vs 1453.4 TFLOP/s); "
        "attention / the BF16 ratio (assumed); memory-bound above their floor / HBM ratio 8.0/4.8 TB/s",
        bounds(pm(0.10), pm(0.20), pm(0.10), pm(0.10), 0.0,
               "as B200's rule: MAMF ratios, attention and HBM assumed; network: the cited "
               "46-48 GB/s per NIC"),
        false, 2500.0, 5000.0, 8.0, 1200.0,
        false, false, {}, true}},
      // Blackwell Ultra (platforms/catalog/hgx_b300.yaml, gb300_nvl72.yaml): the same dense BF16
      // and FP8 datasheet peaks as B200 / GB200 and no published MAMF, so their GEMM ratios.
      // NVIDIA doubles the SFU's exponential rate over Blackwell ("Making Softmax More Efficient
      // with NVIDIA Blackwell Ultra", NVIDIA technical blog; ~35% more FP8 attention-forward
      // throughput by a summary of it, aissential.tech), which softmax-bound attention gains
      // from: not credited (not measured), so attention may be slow here.
      {"B300",
       {"B300", false, kB200Bf16, kB200Fp8, kB200Bf16, 7.7 / 4.8,
        "B200's rule: H200 times / B200 MAMF ratio (BF16 1745 vs 794.5, FP8 3432.5 vs 1453.4 "
        "TFLOP/s; B300's dense BF16/FP8 peaks are B200's, no B300 MAMF published); attention / "
        "the BF16 ratio (assumed; Blackwell Ultra's doubled SFU exponential rate not credited); "
        "memory-bound above their floor / HBM ratio 7.7/4.8 TB/s",
        bounds(pm(0.10), {-0.30, 0.20}, pm(0.10), pm(0.10), 0.0,
               "as B200's rule; attention down to -30%: NVIDIA reports ~35% more "
               "attention-forward throughput from the SFU change, not measured; network: the "
               "cited 46-48 GB/s per NIC"),
        false, 2250.0, 4500.0, 7.7, 1100.0,
        false, false, {}, true}},
      {"GB300",
       {"GB300", false, kGb200Bf16, kGb200Fp8, kGb200Bf16, 8.0 / 4.8,
        "GB200's rule: H200 times / GB200 MAMF ratio (BF16 1822 vs 794.5, FP8 3615.6 vs 1453.4 "
        "TFLOP/s; GB300's dense BF16/FP8 peaks are GB200's, no GB300 MAMF published); attention / "
        "the BF16 ratio (assumed; Blackwell Ultra's doubled SFU exponential rate not credited); "
        "memory-bound above their floor / HBM ratio 8.0/4.8 TB/s",
        bounds(pm(0.10), {-0.30, 0.20}, pm(0.10), pm(0.10), 0.0,
               "as B300's rule (the SFU change, not measured); network: the cited 46-48 GB/s "
               "per NIC"),
        false, 2500.0, 5000.0, 8.0,
        1400.0, false, false, {}, true}},
  };
  return kRules;
}

// The series NCCL itself would run: at each size, the time of the algorithm/protocol that NCCL
// chose in the default run, taken from the run that forced that choice. The default run's own
// times carry NCCL's per-call debug logging (NCCL_DEBUG_SUBSYS=TUNING), which added ~8 us to
// small messages (1 KiB all_reduce: 21.7 us logged, 13.2 us with Ring/LL forced).
MeasuredSeries nccl_choice_series(const std::map<std::string, LogGrid>& grids,
                                  const std::vector<NcclChoice>& choices,
                                  const std::string& collective, const std::string& file) {
  const LogGrid& def = grids.at("nccl/default/default/" + collective);
  MeasuredSeries s;
  s.key = "nccl/nccl_choice/" + collective;
  s.file = file;
  s.axes = {"bytes"};
  for (std::size_t i = 0; i < def.size(); ++i) {
    const double b = def.node_coords(i)[0];
    const LogGrid* src = &def;
    for (const auto& c : choices) {
      if (c.collective != collective || c.bytes != b) continue;
      const auto it = grids.find("nccl/" + c.algo + "/" + c.proto + "/" + collective);
      if (it != grids.end() && it->second.contains({b})) src = &it->second;
    }
    s.points.push_back({{b}, src->time_at({b}), def.node_line(i)});
  }
  return s;
}

}  // namespace

std::shared_ptr<const MeasuredTables> MeasuredTables::load(const std::string& dir) {
  auto t = std::make_shared<MeasuredTables>();
  t->dir_ = dir;
  for (const TableFile& f : table_files()) {
    const std::string path = dir + "/" + f.name;
    if (f.optional && !std::ifstream(path).good()) continue;
    for (auto& series : f.load(path)) {
      if (f.use != Use::Grid) {
        (f.use == Use::Catalog ? t->catalog_ : t->beyond_).push_back(std::move(series));
        continue;
      }
      const std::string key = series.key;
      if (t->grids_.count(key) != 0) {
        throw SpecError(path, 0, key, "table defined twice (also in " + t->grids_.at(key).file() + ")");
      }
      t->grids_.emplace(key, LogGrid(series));
    }
  }
  t->interference_ = load_interference(dir + "/interference.csv");
  if (std::ifstream(dir + "/interference_membound.csv").good()) {  // run 28
    for (auto& p : load_interference(dir + "/interference_membound.csv")) t->interference_.push_back(p);
  }
  t->host_offload_ = load_host_offload(dir + "/host_offload.csv");
  if (std::ifstream(dir + "/copy_interference.csv").good()) {  // runs 80-81
    t->copy_delay_ = CopyDelayTable::load(dir + "/copy_interference.csv");
    if (std::ifstream(dir + "/copy_pace_share.csv").good()) {  // runs 84, 88, 89, 91, 97
      t->copy_delay_.load_paced(dir + "/copy_pace_share.csv");
    }
  }
  if (std::ifstream(dir + "/power_boost.csv").good()) {
    t->power_boost_ = PowerBoostTable::load(dir + "/power_boost.csv");
    if (std::ifstream(dir + "/table_state.csv").good()) {  // runs 49-51
      t->power_boost_.load_state(dir + "/table_state.csv");
    }
  }
  if (std::ifstream(dir + "/gemm_tf32.csv").good()) {  // run 102
    t->tf32_ratio_ = Tf32Ratio::load(dir + "/gemm_tf32.csv");
  }
  t->nccl_ranks_ = read_nccl_ranks(dir + "/nccl_default.csv");
  const std::string choice_file = dir + "/nccl_default_algo_choice.csv";
  t->nccl_choices_ = load_nccl_choices(choice_file, t->nccl_ranks_);
  for (const char* c : {"all_reduce", "all_gather", "reduce_scatter"}) {
    const MeasuredSeries s = nccl_choice_series(t->grids_, t->nccl_choices_, c, choice_file);
    t->grids_.emplace(s.key, LogGrid(s));
  }
  t->provenance_ = describe_provenance(dir);
  return t;
}

const LogGrid& MeasuredTables::grid(const std::string& key) const {
  const auto it = grids_.find(key);
  if (it == grids_.end()) throw std::out_of_range("no measured table '" + key + "' in " + dir_);
  return it->second;
}

const NcclChoice* MeasuredTables::nccl_choice(const std::string& collective, double bytes) const {
  const NcclChoice* best = nullptr;
  for (const auto& c : nccl_choices_) {
    if (c.collective != collective) continue;
    const bool below = c.bytes <= bytes;
    if (best == nullptr || (below && (best->bytes > bytes || c.bytes > best->bytes)) ||
        (!below && best->bytes > bytes && c.bytes < best->bytes)) {
      best = &c;
    }
  }
  return best;
}

std::string MeasuredTables::nccl_choice_protocol(const std::string& collective, double bytes) const {
  const NcclChoice* c = nccl_choice(collective, bytes);
  return c != nullptr ? c->proto : "";
}

std::string MeasuredTables::nccl_chosen_table(const std::string& collective, double bytes) const {
  const NcclChoice* c = nccl_choice(collective, bytes);
  if (c == nullptr) return "";
  const std::string key = "nccl/" + c->algo + "/" + c->proto + "/" + collective;
  return has(key) ? key : "";
}

std::vector<std::string> MeasuredTables::keys() const {
  std::vector<std::string> k;
  for (const auto& [key, g] : grids_) k.push_back(key);
  return k;
}

std::string calib_data_dir() { return CLUSTERSIM_CALIB_DIR; }

std::string default_measured_dir() { return calib_data_dir() + "/h200"; }

std::map<std::string, LogGrid> load_membound_grids(const std::string& path) {
  std::map<std::string, LogGrid> grids;
  for (auto& series : load_membound_series(path)) {
    const std::string key = series.key;
    grids.emplace(key, LogGrid(series));
  }
  return grids;
}

namespace {

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * x);
  return buf;
}

std::string bounds_text(const sim::RelativeBounds& b) {
  if (b.lo == -b.hi) return "+-" + percent(b.hi).substr(1);
  return percent(b.lo) + ".." + percent(b.hi);
}

}  // namespace

std::string uncertainty_text(const sim::CostUncertainty& u) {
  if (!u.stated) return "none stated";
  std::string out = "GEMM " + bounds_text(u.compute[0]) + ", attention " +
                    bounds_text(u.compute[1]) + ", memory-bound " + bounds_text(u.compute[2]);
  if (u.small_bytes > 0.0) {
    out += " (" + bounds_text(u.memory_bound_small) + " below " +
           std::to_string(static_cast<long long>(u.small_bytes / kMiB)) + " MiB)";
  }
  out += ", network transfers " + bounds_text(u.network);
  if (!u.basis.empty()) out += " (" + u.basis + ")";
  return out;
}

const DerivationRule& derivation_rule(const std::string& gpu_name) {
  const auto& r = rules();
  const auto it = r.find(gpu_name);
  if (it == r.end()) {
    std::string known;
    for (const auto& [name, rule] : r) known += (known.empty() ? "" : ", ") + name;
    throw std::invalid_argument("no measured tables or derivation rule for GPU '" + gpu_name +
                                "' (known: " + known + ")");
  }
  return it->second;
}

namespace {
// A platform figure over the rule's; figures parsed from text ("3.35TB/s") may differ from the
// rule's in the last bit, so equal within 1e-9 counts as the same figure (catalog platforms keep
// the rule exactly). @throws std::invalid_argument if the platform figure is not positive.
double ratio_of(double platform, double rule, const char* figure) {
  if (!(platform > 0.0)) {
    throw std::invalid_argument(std::string("platform_scale: ") + figure + " must be positive");
  }
  const double r = platform / rule;
  return std::fabs(r - 1.0) < 1e-9 ? 1.0 : r;
}

// Appends "figure X unit vs the rule's Y: consequence" to the note when the ratio is not 1.
void note_figure(std::string& note, double ratio, const char* figure, double platform,
                 const char* unit, double rule, const std::string& consequence) {
  if (ratio == 1.0) return;
  char clause[240];
  std::snprintf(clause, sizeof clause, "%s%s %g %s vs the rule's %g: %s", note.empty() ? "" : "; ",
                figure, platform, unit, rule, consequence.c_str());
  note += clause;
}

std::string times(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "x%.4g", ratio);
  return text;
}
}  // namespace

PlatformScale platform_scale(const DerivationRule& rule, double peak_bf16_tflops,
                             double peak_fp8_tflops, double hbm_tbps, double tdp_w) {
  PlatformScale s;
  const double bf16 = ratio_of(peak_bf16_tflops, rule.peak_bf16_tflops, "peak_bf16");
  const double fp8 = ratio_of(peak_fp8_tflops, rule.peak_fp8_tflops, "peak_fp8");
  const double hbm = ratio_of(hbm_tbps, rule.hbm_tbps, "hbm_bandwidth");
  const double tdp = ratio_of(tdp_w, rule.tdp_w, "tdp");
  note_figure(s.note, bf16, "peak_bf16", peak_bf16_tflops, "TFLOP/s", rule.peak_bf16_tflops,
              "GEMM BF16 and attention " + times(bf16));
  note_figure(s.note, fp8, "peak_fp8", peak_fp8_tflops, "TFLOP/s", rule.peak_fp8_tflops,
              "GEMM FP8 " + times(fp8));
  note_figure(s.note, hbm, "hbm_bandwidth", hbm_tbps, "TB/s", rule.hbm_tbps,
              "memory-bound " + times(hbm));
  note_figure(s.note, tdp, "tdp", tdp_w, "W", rule.tdp_w,
              "kernel times not scaled (nothing was measured under another power limit)");
  s.gemm_bf16 = rule.gemm_bf16 * bf16;
  s.attention = rule.attention * bf16;
  s.gemm_fp8 = rule.gemm_fp8 * fp8;
  s.memory = rule.memory * hbm;
  return s;
}

std::vector<std::string> measured_model_gpus() {
  std::vector<std::string> out;
  for (const auto& entry : rules()) out.push_back(entry.first);
  return out;
}

}  // namespace clustersim::calib
