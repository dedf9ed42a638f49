#include "workloads/tp_overlap.hpp"

#include <algorithm>
#include <vector>

#include "sim/yaml_spec.hpp"

namespace clustersim::workloads {
namespace {

using M = TpOverlapMethod;
using R = TpOverlapRole;

struct RoleInfo {
  const char* name;
  R role;
  M default_method;        ///< TE's default (initialize_ub's `methods`)
  std::vector<M> allowed;  ///< methods TE can run for the role
};

// TE (pytorch/module/base.py initialize_ub): the all-gather overlaps (qkv_fprop, fc1_fprop,
// proj_dgrad, fc2_dgrad) run only as ring exchange (CommOverlapBase has no split all-gather),
// the reduce-scatter overlaps (proj_fprop, fc2_fprop) as ring exchange or pipeline, and the
// dgrad/wgrad overlaps of qkv and fc1 are bulk.
const std::vector<RoleInfo>& roles() {
  static const std::vector<RoleInfo> kRoles = {
      {"qkv_fprop", R::QkvFprop, M::RingExchange, {M::RingExchange}},
      {"proj_fprop", R::ProjFprop, M::Pipeline, {M::RingExchange, M::Pipeline}},
      {"fc1_fprop", R::Fc1Fprop, M::RingExchange, {M::RingExchange}},
      {"fc2_fprop", R::Fc2Fprop, M::Pipeline, {M::RingExchange, M::Pipeline}},
      {"qkv_dgrad", R::QkvDgrad, M::Bulk, {M::Bulk}},
      {"qkv_wgrad", R::QkvWgrad, M::Bulk, {M::Bulk}},
      {"proj_dgrad", R::ProjDgrad, M::RingExchange, {M::RingExchange}},
      {"fc1_dgrad", R::Fc1Dgrad, M::Bulk, {M::Bulk}},
      {"fc1_wgrad", R::Fc1Wgrad, M::Bulk, {M::Bulk}},
      {"fc2_dgrad", R::Fc2Dgrad, M::RingExchange, {M::RingExchange}},
  };
  return kRoles;
}

struct MethodName {
  const char* name;
  M method;
};
constexpr MethodName kMethods[] = {
    {"ring_exchange", M::RingExchange}, {"pipeline", M::Pipeline}, {"bulk", M::Bulk}};

const char* method_name(M m) {
  for (const auto& e : kMethods) {
    if (e.method == m) return e.name;
  }
  return "?";
}

// TE's get_default_config for a method (TE >= 2.0): ring exchange num_sm 1 without margin,
// tp splits; pipeline and bulk num_sm 16 with margin, pipeline 4 splits.
TpOverlapLayerCfg method_defaults(M m) {
  TpOverlapLayerCfg c;
  c.method = m;
  c.num_sm = m == M::RingExchange ? 1 : 16;
  c.set_sm_margin = m != M::RingExchange;
  c.num_splits = m == M::Pipeline ? 4 : 0;
  return c;
}

TpOverlapLayerCfg read_layer(YamlMap& l, const RoleInfo& info) {
  for (const char* key : {"method", "num_sm", "num_splits", "set_sm_margin", "aggregate",
                          "cga_size", "fp8_buf", "atomic_gemm"}) {
    l.has(key);
  }
  l.finish();
  std::vector<std::string> allowed;
  for (M m : info.allowed) allowed.emplace_back(method_name(m));
  const M method = [&] {
    if (!l.has("method")) return info.default_method;
    const std::string text = l.get_enum("method", allowed);
    for (const auto& e : kMethods) {
      if (text == e.name) return e.method;
    }
    throw l.error("method", "unexpected value '" + text + "'");
  }();
  TpOverlapLayerCfg c = method_defaults(method);
  c.num_sm = static_cast<int>(l.get_int_or("num_sm", c.num_sm, 1, 131));
  c.set_sm_margin = l.get_bool_or("set_sm_margin", c.set_sm_margin);
  c.aggregate = l.get_bool_or("aggregate", false);
  if (l.has("num_splits")) {
    if (method != M::Pipeline) {
      throw l.error("num_splits", "only the pipeline method takes num_splits (ring exchange "
                                  "splits by tp)");
    }
    c.num_splits = static_cast<int>(l.get_int("num_splits", 1, 64));
  }
  if (c.aggregate && method != M::RingExchange) {
    throw l.error("aggregate", "only the ring_exchange method aggregates chunks");
  }
  if (l.has("cga_size")) l.get_int("cga_size", 1, 16);  // no effect on the model
  if (l.has("fp8_buf")) l.get_bool("fp8_buf");           // no effect on the model
  if (l.get_bool_or("atomic_gemm", false)) {
    throw l.error("atomic_gemm", "atomic-GEMM overlap (a cuBLAS beta API) is not modelled");
  }
  return c;
}

}  // namespace

const char* to_string(TpOverlapRole role) {
  for (const auto& info : roles()) {
    if (info.role == role) return info.name;
  }
  return "?";
}

TpOverlapConfig TpOverlapConfig::te_defaults() {
  TpOverlapConfig c;
  for (const auto& info : roles()) {
    c.layers[static_cast<int>(info.role)] = method_defaults(info.default_method);
  }
  return c;
}

TpOverlapConfig read_tp_overlap_cfg(YamlMap& m) {
  for (const auto& info : roles()) m.has(info.name);
  m.finish();
  TpOverlapConfig c = TpOverlapConfig::te_defaults();
  for (const auto& info : roles()) {
    if (!m.has(info.name)) continue;
    YamlMap l = m.get_map(info.name);
    c.layers[static_cast<int>(info.role)] = read_layer(l, info);
  }
  return c;
}

GemmExecution gemm_execution(const TpOverlapConfig& cfg, TpOverlapRole role, int tp) {
  const TpOverlapLayerCfg& c = cfg.at(role);
  GemmExecution e;
  switch (c.method) {
    case M::RingExchange:
      e.splits = c.aggregate ? std::max(1, tp / 2) : tp;
      e.sm_margin = c.set_sm_margin ? c.num_sm : 0;
      break;
    case M::Pipeline:
      e.splits = c.num_splits;
      e.sm_margin = c.set_sm_margin ? c.num_sm : 0;
      e.busy_sms = c.num_sm;
      break;
    case M::Bulk:
      e.sm_margin = c.set_sm_margin ? c.num_sm : 0;
      e.busy_sms = c.num_sm;
      break;
  }
  return e;
}

}  // namespace clustersim::workloads
