// What MeasuredCostModel tells users about its sources: one line per op class naming the table,
// whether its numbers are measured or derived, and the model's one-line description.
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "calib/measured_cost_model.hpp"

namespace clustersim::calib {

namespace {

// Said of a GPU whose rule names its own memory-bound tables when the model did not read them.
constexpr const char* kOwnTablesNotRead =
    "its own memory-bound tables not read (these are not the repository's tables, beside which "
    "they were measured): every memory-bound kernel by the rule's ratio above its floor";
std::string fmt_cores(double cores) {
  std::ostringstream s;
  s << cores;
  return s.str();
}

// "x0.934": a power-state ratio at three decimals.
std::string ratio_text(double r) {
  std::ostringstream s;
  s << "x" << std::fixed << std::setprecision(3) << r;
  return s.str();
}
// The source line of the delays of kernels beside host copies (CopyDelayTable).
std::string copy_delay_source(const CopyDelayTable& t, const DerivationRule& rule) {
  const std::string what =
      t.has_paced() ? t.paced_file() +
                          " (the share of a kernel's time per class inside steps with copies issued "
                          "in pace, runs 84, 88-91 and 97; " +
                          t.file() + "'s call-by-call lines not charged)"
                    : t.file() +
                          " (the share of a kernel's time per class and copy directions; its fixed "
                          "time per call not charged)";
  const std::string where =
      rule.host_copy_delay
          ? std::string(t.has_paced() ? "measured on H200 and H100" : "measured on H200") +
                (rule.measured ? "" : ", applied unchanged")
          : std::string("not applied on this GPU (not measured)");
  return "kernels beside host copies (activation offloading): " + what + "; " + where;
}

}  // namespace

void MeasuredCostModel::add_overlap_sources(std::vector<std::string>& out) const {
  if (tp_overlap_.loaded()) {
    std::string files;
    for (const auto& f : tp_overlap_.files()) files += (files.empty() ? "" : ", ") + f;
    out.push_back("GEMM under TP overlap (splits, sm_margin): " + files + " (ratio to the plain "
                  "GEMM, chunk GEMMs on up to 3 streams, cuBLASLt planned for 132 - S SMs) x "
                  "the plain GEMM time; measured on H200" +
                  (rule_.measured ? "" : ", ratios applied unchanged"));
  }
  if (wgrad_accum_.loaded()) {
    out.push_back("weight-gradient GEMM added into main_grad (grad_accum f32/bf16): " +
                  wgrad_accum_.file() + " (time accumulating - time writing BF16, same run, "
                  "BF16 wgrad and FP8 TN layouts) + the GEMM's time; measured on H200" +
                  (rule_.measured ? "" : ", the extra time scaled by HBM bandwidth"));
  }
  if (fp8_block_.loaded()) {
    out.push_back("block-scaled FP8 GEMM (fp8_scaling block2d1d/block1d1d): " + fp8_block_.file() +
                  " (time with 128x128 weight / 1x128 activation blocks, or 1x128 both, over the "
                  "per-tensor time of the same run) x the per-tensor split-accumulation GEMM; "
                  "measured on H200" + (rule_.measured ? "" : ", ratios applied unchanged"));
  }
  if (const Tf32Ratio& tf32 = tables_->tf32_ratio(); tf32.loaded()) {
    char medians[96];
    std::snprintf(medians, sizeof medians, "%.3f forward, %.3f data gradient, %.3f weight gradient",
                  tf32.layout_median("fwd"), tf32.layout_median("dgrad"), tf32.layout_median("wgrad"));
    out.push_back("TF32 GEMM (dtype tf32): " + tf32.file() + " (TF32 time over the BF16 time of the "
                  "same shape, same process; median per layout: " + medians + ", backward GEMMs "
                  "their geometric mean) x the BF16 GEMM; measured on H100 (the H200's SMs), "
                  "ratios applied unchanged");
  }
  if (held_sms_.loaded()) {
    std::string files;
    for (const auto& f : held_sms_.files()) files += (files.empty() ? "" : ", ") + f;
    out.push_back("GEMM beside SMs held by TE's communication kernels (busy_sms): " + files +
                  " (time with S SMs held by a spinning kernel / time with the same hand-over and "
                  "none held), applied while the TP communication is in flight; measured on H200" +
                  (rule_.measured ? "" : ", ratios applied unchanged"));
  }
}

std::string MeasuredCostModel::power_state_source() const {
  const PowerBoostTable& boost = tables_->power_boost();
  if (boost.empty()) {
    return "power state: no power_boost.csv in " + tables_->dir() +
           ": GEMMs and attention at their tables' speed";
  }
  const std::string applied =
      !rule_.power_boost ? "not applied to " + gpu_.name + " (not measured)"
      : rule_.measured   ? std::string("measured on H200")
                         : std::string("H200 curves, same die and power limit");
  const std::string state =
      boost.state_file().empty()
          ? std::string(", no table_state.csv (tables taken as the kinds' sustained state)")
          : " x " + boost.state_file() + " (each kind's own sustained state over its table, "
            "runs 49-51: FP8 GEMMs " + ratio_text(boost.state("gemm_fp8_fastacc")) + " fwd / " +
            ratio_text(boost.state("gemm_fp8")) + " bwd, BF16 " + ratio_text(boost.state("gemm_bf16")) +
            ", attention at 8k " + ratio_text(boost.state("attention_fwd", 8192)) + " / " +
            ratio_text(boost.state("attention_bwd", 8192)) + ", by sequence length; " +
            "FlashAttention-2 runs 52-53: at 8k " + ratio_text(boost.state("attention_flash2_fwd", 8192)) +
            " / " + ratio_text(boost.state("attention_flash2_bwd", 8192)) + ")";
  return "power state: " + boost.file() + " (GEMM BF16/FP8 and attention clock boost by the "
         "rank's compute-bound share, runs 24-25)" + state + "; " + applied;
}

std::string MeasuredCostModel::membound_source(const std::string& key, const std::string& file,
                                               const std::string& how) const {
  const auto own = own_membound_.find(key);
  if (own == own_membound_.end()) {
    return file + "; " + how + (rule_.own_membound.empty() ? "" : std::string("; ") + kOwnTablesNotRead);
  }
  return own->second.file() + ", measured on " + gpu_.name;
}

std::vector<std::string> MeasuredCostModel::table_sources() const {
  const std::string how = rule_.measured ? "measured" : "derived from H200 (" + rule_.basis + ")";
  const std::string dir = tables_->dir();
  std::vector<std::string> out = {
      "GEMM BF16: " + dir + "/gemm_bf16.csv, fwd table for forward GEMMs, geometric mean of "
          "dgrad and wgrad tables for backward; " + how,
      "GEMM FP8: " + dir + "/gemm_fp8.csv (TN, per-tensor scales); " + how,
  };
  add_overlap_sources(out);
  const std::vector<std::string> rest = {
      "attention: " + dir + "/attention.csv, cuDNN SDPA (gqa, mha, mla sets)" +
          (rule_.flash2 && tables_->has("attention/flash/gqa/fwd")
               ? "; FlashAttention-2 (attention_backend: flash2; gqa, mha sets to 128k, its "
                 "context-parallel blocks " + dir + "/attention_cp_flash.csv)"
               : std::string()) +
          "; " + how,
      "memory-bound: " + membound_source("membound/copy", dir + "/membound.csv", how) +
          " (Elementwise/Copy: copy, Norm: rmsnorm+layernorm, Activation: swiglu+gelu, Rope, "
          "CrossEntropy, Optimizer: adamw)" +
          (tables_->has("membound/rmsnorm_eager_fwd")
               ? "; eager Hugging Face modules (rmsnorm_eager, rope_eager, swiglu_eager, forward "
                 "and backward): " +
                     membound_source("membound/rmsnorm_eager_fwd", dir + "/membound_eager.csv", how)
               : std::string()),
      "collectives over NVLink: " + dir + "/nccl_*.csv (2 GPUs; at each size the algorithm and "
          "protocol NCCL chose, nccl_default_algo_choice.csv; all_to_all: nccl_default.csv), "
          "0.6/1.9/3.4 us per ring step for LL/LL128/Simple (NCCL 2.28 tuning table); measured on H200",
      "point-to-point over NVLink: " + dir + "/nccl_default.csv (send); measured on H200",
      "optimizer offload: " + dir + "/host_offload.csv, " + dir + "/offload_step.csv (host "
          "link at the measured pinned-copy efficiency, pageable copies at the measured staging "
          "rate; host AdamW, gradient clip and FP32->BF16 cast at the measured rates for " +
          fmt_cores(gpu_.host_cores_per_gpu) + " threads, " + tables_->host_offload().cpu +
          ", capped at the GPU's share of the host DRAM peak, times the measured share all-cores "
          "ranks keep when " + std::to_string(gpu_.gpus_per_host) + " share the host); CPU of "
          "the measuring host, not the platform's",
      "collectives and p2p over the network: roofline figures (" + roofline_.describe() + ")",
      "compute/communication interference: " + dir + "/interference.csv (all_reduce at NCCL's "
          "default channels vs BF16 GEMM and cuDNN attention)" +
          (overlap_points_[2].empty() ? std::string("; memory-bound ops take the GEMM row")
                                      : "; " + dir + "/interference_membound.csv (vs element-wise adds)") +
          "; measured on H200" +
          (rule_.measured ? "" : ", ratios applied unchanged"),
  };
  out.insert(out.end(), rest.begin(), rest.end());
  if (!tables_->copy_delay().empty()) out.push_back(copy_delay_source(tables_->copy_delay(), rule_));
  out.push_back(power_state_source());
  if (!scale_.note.empty()) {
    out.push_back("platform GPU figures (" + gpu_.name + "): " + scale_.note +
                  " (times ~ 1 / peak for GEMM and attention, ~ 1 / bandwidth for memory-bound "
                  "kernels; NVLink and network from the platform's links as always)");
  }
  return out;
}

std::string MeasuredCostModel::describe() const {
  std::ostringstream s;
  if (rule_.measured) {
    s << "measured tables (" << tables_->provenance() << "; " << tables_->dir() << ")";
  } else {
    s << "derived for " << gpu_.name << " from measured H200 tables (" << tables_->provenance()
      << "): " << rule_.basis << "; uncertainty " << uncertainty_text(rule_.uncertainty);
    if (!rule_.own_membound.empty() && own_membound_.empty()) s << "; " << kOwnTablesNotRead;
  }
  if (!scale_.note.empty()) s << "; platform GPU figures: " << scale_.note;
  return s.str();
}

sim::CostUncertainty MeasuredCostModel::uncertainty() const { return rule_.uncertainty; }

}  // namespace clustersim::calib
