#include "sim/trace.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace clustersim::sim {

std::uint16_t Program::label_id(const std::string& name) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == name) return static_cast<std::uint16_t>(i);
  }
  if (labels.size() >= 0xFFFF) throw std::length_error("too many op labels in one program");
  labels.push_back(name);
  return static_cast<std::uint16_t>(labels.size() - 1);
}

const char* to_string(DType v) {
  switch (v) {
    case DType::BF16: return "bf16";
    case DType::FP8: return "fp8";
    case DType::FP32: return "fp32";
    case DType::TF32: return "tf32";
  }
  return "?";
}

const char* to_string(Stream v) {
  switch (v) {
    case Stream::Compute: return "compute";
    case Stream::TpComm: return "tp_comm";
    case Stream::PpComm: return "pp_comm";
    case Stream::DpComm: return "dp_comm";
    case Stream::CpComm: return "cp_comm";
    case Stream::AmaxComm: return "amax_comm";
    case Stream::EpComm: return "ep_comm";
    case Stream::D2H: return "d2h";
    case Stream::H2D: return "h2d";
  }
  return "?";
}

const char* to_string(Phase v) {
  switch (v) {
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Optimizer: return "optimizer";
  }
  return "?";
}

const char* to_string(GroupKind v) {
  switch (v) {
    case GroupKind::TP: return "tp";
    case GroupKind::CP: return "cp";
    case GroupKind::DP: return "dp";
    case GroupKind::PP: return "pp";
    case GroupKind::EP: return "ep";
    case GroupKind::ETP: return "etp";
    case GroupKind::EDP: return "edp";
    case GroupKind::DPCP: return "dp_cp";
    case GroupKind::EMB: return "emb";
    case GroupKind::AMAX: return "amax";
  }
  return "?";
}

const char* to_string(CollectiveKind v) {
  switch (v) {
    case CollectiveKind::AllReduce: return "all_reduce";
    case CollectiveKind::AllGather: return "all_gather";
    case CollectiveKind::ReduceScatter: return "reduce_scatter";
    case CollectiveKind::AllToAll: return "all_to_all";
    case CollectiveKind::TokenExchange: return "token_exchange";
    case CollectiveKind::RingShift: return "ring_shift";
  }
  return "?";
}

const char* to_string(Peer v) {
  switch (v) {
    case Peer::None: return "none";
    case Peer::PrevStage: return "prev_stage";
    case Peer::NextStage: return "next_stage";
  }
  return "?";
}

const char* to_string(MemKernel v) {
  switch (v) {
    case MemKernel::Elementwise: return "elementwise";
    case MemKernel::Norm: return "norm";
    case MemKernel::Activation: return "activation";
    case MemKernel::Rope: return "rope";
    case MemKernel::CrossEntropy: return "cross_entropy";
    case MemKernel::Optimizer: return "optimizer";
    case MemKernel::Copy: return "copy";
    case MemKernel::HostCopy: return "host_copy";
    case MemKernel::HostOptimizer: return "host_optimizer";
    case MemKernel::HostElementwise: return "host_elementwise";
    case MemKernel::HostCast: return "host_cast";
    case MemKernel::HostCopyPageable: return "host_copy_pageable";
    case MemKernel::RmsNormEager: return "rmsnorm_eager";
    case MemKernel::RopeEager: return "rope_eager";
    case MemKernel::SwigluEager: return "swiglu_eager";
  }
  return "?";
}

const char* to_string(HostThreads v) {
  switch (v) {
    case HostThreads::PerRank: return "per_rank";
    case HostThreads::AllCores: return "all_cores";
  }
  return "?";
}

const char* to_string(GradAccum v) {
  switch (v) {
    case GradAccum::None: return "none";
    case GradAccum::F32: return "f32";
    case GradAccum::BF16: return "bf16";
  }
  return "?";
}

const char* to_string(Fp8Scaling v) {
  switch (v) {
    case Fp8Scaling::Tensor: return "tensor";
    case Fp8Scaling::Block2D1D: return "block2d1d";
    case Fp8Scaling::Block1D1D: return "block1d1d";
  }
  return "?";
}

const char* to_string(GroupAxis v) {
  switch (v) {
    case GroupAxis::M: return "m";
    case GroupAxis::K: return "k";
  }
  return "?";
}

GemmShape one_group(const GemmShape& g) {
  if (g.groups < 1) throw std::invalid_argument("GEMM with groups < 1");
  GemmShape one = g;
  one.groups = 1;
  if (g.groups == 1) return one;
  std::int64_t& dim = g.group_axis == GroupAxis::M ? one.m : one.k;
  dim = std::max<std::int64_t>(1, std::llround(static_cast<double>(dim) / g.groups));
  return one;
}

const char* to_string(AttentionKernel v) {
  switch (v) {
    case AttentionKernel::Cudnn: return "cudnn";
    case AttentionKernel::Flash2: return "flash2";
  }
  return "?";
}

bool is_host_kernel(MemKernel v) {
  return v == MemKernel::HostCopy || v == MemKernel::HostOptimizer || v == MemKernel::HostElementwise ||
         v == MemKernel::HostCast || v == MemKernel::HostCopyPageable;
}

double dtype_bytes(DType v) {
  switch (v) {
    case DType::BF16: return 2.0;
    case DType::FP8: return 1.0;
    case DType::FP32: return 4.0;
    case DType::TF32: return 4.0;
  }
  return 0.0;
}

}  // namespace clustersim::sim
