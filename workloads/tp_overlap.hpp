// How Transformer Engine's userbuffers TP communication overlap runs a layer's ten
// tensor-parallel GEMMs (Megatron-LM --tp-comm-overlap, --tp-comm-overlap-cfg; NeMo's
// TransformerLayerTPOverlapCfg): per GEMM a method (ring exchange, pipeline, bulk) and its SM and
// split settings. The defaults are TE's (transformer_engine/pytorch/module/base.py,
// initialize_ub, get_default_config, TE >= 2.0). Documented in docs/job-spec.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace clustersim {
class YamlMap;
}

namespace clustersim::workloads {

/// TE's userbuffers overlap methods (CommOverlapP2PBase ring exchange, CommOverlapBase pipeline
/// and bulk; transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp).
enum class TpOverlapMethod : std::uint8_t { RingExchange, Pipeline, Bulk };

/// The ten GEMMs of a transformer layer that TE overlaps, in TE's names.
enum class TpOverlapRole : std::uint8_t {
  QkvFprop, ProjFprop, Fc1Fprop, Fc2Fprop,
  QkvDgrad, QkvWgrad, ProjDgrad, Fc1Dgrad, Fc1Wgrad, Fc2Dgrad
};
inline constexpr int kTpOverlapRoles = 10;

/// TE's name of a role ("qkv_fprop", ...).
const char* to_string(TpOverlapRole role);

/// The settings of one role (TE's ub_cfgs entry). Fields without a model effect (cga_size,
/// fp8_buf) are accepted by the reader and not kept.
struct TpOverlapLayerCfg {
  TpOverlapMethod method = TpOverlapMethod::RingExchange;
  int num_sm = 1;              ///< SMs of the communication kernel
  int num_splits = 0;          ///< pipeline chunks; 0: tp (ring exchange)
  bool set_sm_margin = false;  ///< GEMM planned for (SMs - num_sm)
  bool aggregate = false;      ///< ring exchange in 2-chunk steps (tp/2 GEMMs)
};

/// The ten roles' settings.
struct TpOverlapConfig {
  std::array<TpOverlapLayerCfg, kTpOverlapRoles> layers;
  /// TE's defaults: ring exchange (num_sm 1, no margin, tp splits) for qkv_fprop, fc1_fprop,
  /// proj_dgrad, fc2_dgrad; pipeline (num_sm 16, margin, 4 splits) for proj_fprop, fc2_fprop;
  /// bulk (num_sm 16, margin) for qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad.
  static TpOverlapConfig te_defaults();
  const TpOverlapLayerCfg& at(TpOverlapRole r) const { return layers[static_cast<int>(r)]; }
};

/// Reads `parallelism.tp_comm_overlap_cfg`: a mapping from role names to mappings of method
/// (ring_exchange, pipeline, bulk), num_sm, num_splits, set_sm_margin, aggregate, cga_size,
/// fp8_buf; roles left out keep TE's default, fields left out take TE's default for the method.
/// @throws SpecError for an unknown role or field, a method the role cannot use (all-gather
/// roles only ring_exchange; proj_fprop/fc2_fprop ring_exchange or pipeline; the dgrad/wgrad
/// roles of qkv and fc1 only bulk), num_sm outside [1, 131], num_splits outside [1, 64], or
/// atomic_gemm: true (not modelled).
TpOverlapConfig read_tp_overlap_cfg(YamlMap& m);

/// How a GEMM runs under one role's settings (sim::GemmShape::splits, sm_margin, busy_sms).
struct GemmExecution {
  int splits = 1;
  int sm_margin = 0;
  int busy_sms = 0;
};

/// Ring exchange: tp chunk GEMMs (tp/2 with aggregate), margin num_sm with set_sm_margin, no SM
/// held (TE's point-to-point exchanges use copy engines, CommOverlapP2PBase with use_ce);
/// pipeline: num_splits chunks, margin as ring exchange, num_sm SMs held by its reduce-scatter
/// kernels (userbuffers reducescatter2_userbuff_* launch on comm->sms blocks); bulk: one GEMM,
/// margin num_sm with set_sm_margin, num_sm SMs held by the all-gather or reduce-scatter kernel
/// (allgather2/reducescatter2_userbuff_inplace, comm->sms blocks) while it runs.
GemmExecution gemm_execution(const TpOverlapConfig& cfg, TpOverlapRole role, int tp);

}  // namespace clustersim::workloads
