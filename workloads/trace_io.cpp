#include "workloads/trace_io.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <fstream>
#include <istream>
#include <limits>
#include <ostream>
#include <set>
#include <stdexcept>
#include <utility>

#include "sim/routing.hpp"
#include "workloads/json_fields.hpp"
#include "sim/spec_error.hpp"

namespace clustersim::workloads {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kFormatName = "clustersim-trace";
constexpr std::array kDTypes{sim::DType::BF16, sim::DType::FP8, sim::DType::FP32, sim::DType::TF32};
constexpr std::array kGradAccums{sim::GradAccum::F32, sim::GradAccum::BF16};
constexpr std::array kGroupAxes{sim::GroupAxis::M, sim::GroupAxis::K};
constexpr std::array kFp8Scalings{sim::Fp8Scaling::Tensor, sim::Fp8Scaling::Block2D1D,
                                  sim::Fp8Scaling::Block1D1D};
constexpr std::array kAttentionKernels{sim::AttentionKernel::Cudnn, sim::AttentionKernel::Flash2};
constexpr std::array kStreams{sim::Stream::Compute, sim::Stream::TpComm, sim::Stream::PpComm,
                              sim::Stream::DpComm, sim::Stream::CpComm, sim::Stream::AmaxComm,
                              sim::Stream::EpComm, sim::Stream::D2H, sim::Stream::H2D};
constexpr std::array kPhases{sim::Phase::Forward, sim::Phase::Backward, sim::Phase::Optimizer};
// Every group kind (op lines); the first four plus EP are the layout's dimensions.
constexpr std::array kGroups{sim::GroupKind::TP,  sim::GroupKind::CP,  sim::GroupKind::DP,
                             sim::GroupKind::PP,  sim::GroupKind::EP,  sim::GroupKind::ETP,
                             sim::GroupKind::EDP, sim::GroupKind::DPCP, sim::GroupKind::EMB,
                             sim::GroupKind::AMAX};
// Group kinds whose coordinates a header of version 1, 2-3 and 4 carries.
constexpr std::size_t kCoordKindsV1 = 4, kCoordKindsV3 = 9;
constexpr std::array kLayoutSizes{sim::GroupKind::TP, sim::GroupKind::CP, sim::GroupKind::DP,
                                  sim::GroupKind::PP, sim::GroupKind::EP, sim::GroupKind::ETP};
constexpr std::array kOrderDims{sim::GroupKind::TP, sim::GroupKind::CP, sim::GroupKind::EP,
                                sim::GroupKind::DP, sim::GroupKind::PP};
constexpr std::array kCollectives{sim::CollectiveKind::AllReduce, sim::CollectiveKind::AllGather,
                                  sim::CollectiveKind::ReduceScatter, sim::CollectiveKind::AllToAll,
                                  sim::CollectiveKind::TokenExchange, sim::CollectiveKind::RingShift};
constexpr std::array kPeers{sim::Peer::None, sim::Peer::PrevStage, sim::Peer::NextStage};
constexpr std::array kMemKernels{sim::MemKernel::Elementwise, sim::MemKernel::Norm,
                                 sim::MemKernel::Activation, sim::MemKernel::Rope,
                                 sim::MemKernel::CrossEntropy, sim::MemKernel::Optimizer,
                                 sim::MemKernel::Copy, sim::MemKernel::HostCopy,
                                 sim::MemKernel::HostOptimizer, sim::MemKernel::RmsNormEager,
                                 sim::MemKernel::RopeEager, sim::MemKernel::SwigluEager,
                                 sim::MemKernel::HostElementwise, sim::MemKernel::HostCast,
                                 sim::MemKernel::HostCopyPageable};
constexpr std::array kHostThreads{sim::HostThreads::PerRank, sim::HostThreads::AllCores};
// Op kinds, in OpShape's alternative order.
constexpr std::array<const char*, 5> kKinds{"gemm", "attention", "mem", "collective", "p2p"};

// ----- writing -----

struct ShapeWriter {
  OrderedJson& j;
  void operator()(const sim::GemmShape& g) const {
    j["m"] = g.m;
    j["n"] = g.n;
    j["k"] = g.k;
    j["dtype"] = sim::to_string(g.dtype);
    if (g.splits != 1) j["splits"] = g.splits;
    if (g.sm_margin != 0) j["sm_margin"] = g.sm_margin;
    if (g.busy_sms != 0) j["busy_sms"] = g.busy_sms;
    if (g.grad_accum != sim::GradAccum::None) j["grad_accum"] = sim::to_string(g.grad_accum);
    if (g.groups != 1) {
      j["groups"] = g.groups;
      j["group_axis"] = sim::to_string(g.group_axis);
    }
    if (g.fp8_scaling != sim::Fp8Scaling::Tensor) j["fp8_scaling"] = sim::to_string(g.fp8_scaling);
  }
  void operator()(const sim::AttentionShape& a) const {
    j["batch"] = a.batch;
    j["heads"] = a.heads;
    j["kv_heads"] = a.kv_heads;
    j["seq_q"] = a.seq_q;
    j["seq_kv"] = a.seq_kv;
    j["head_dim"] = a.head_dim;
    j["head_dim_v"] = a.head_dim_v;
    j["causal"] = a.causal;
    j["backward"] = a.backward;
    j["dtype"] = sim::to_string(a.dtype);
    if (a.kernel != sim::AttentionKernel::Cudnn) j["kernel"] = sim::to_string(a.kernel);
  }
  void operator()(const sim::MemBoundShape& m) const {
    j["kernel"] = sim::to_string(m.kernel);
    if (m.host_threads != sim::HostThreads::PerRank) j["host_threads"] = sim::to_string(m.host_threads);
  }
  void operator()(const sim::CollectiveSpec& c) const {
    j["collective"] = sim::to_string(c.kind);
    j["group"] = sim::to_string(c.group);
    if (c.kind == sim::CollectiveKind::TokenExchange) {
      j["experts"] = c.routing.experts;
      j["top_k"] = c.routing.top_k;
      if (c.routing.groups > 0) {
        j["router_groups"] = c.routing.groups;
        j["router_group_topk"] = c.routing.group_topk;
      }
    }
  }
  void operator()(const sim::P2PSpec& p) const {
    j["send_to"] = sim::to_string(p.send_to);
    j["recv_from"] = sim::to_string(p.recv_from);
  }
};

OrderedJson op_line(const sim::Program& program, std::size_t index) {
  const sim::Op& op = program.ops[index];
  OrderedJson j;
  j["op"] = index;
  j["kind"] = kKinds[op.shape.index()];
  j["label"] = program.labels.at(op.label);
  j["stream"] = sim::to_string(op.stream);
  j["phase"] = sim::to_string(op.phase);
  j["layer"] = op.layer;
  j["microbatch"] = op.microbatch;
  j["recompute"] = op.recompute;
  j["flops"] = op.flops;
  j["bytes"] = op.bytes;
  j["deps"] = op.deps;
  std::visit(ShapeWriter{j}, op.shape);
  if (op.duration_s >= 0.0) j["duration_s"] = op.duration_s;
  return j;
}

OrderedJson header_line(const sim::Workload& workload, int rank) {
  const sim::RankLayout& layout = workload.layout;
  OrderedJson j;
  j["format"] = kFormatName;
  j["version"] = kTraceFormatVersion;
  j["rank"] = rank;
  j["program"] = workload.program_of_rank.at(static_cast<std::size_t>(rank));
  j["description"] = workload.description;
  OrderedJson sizes;
  OrderedJson coords;
  for (sim::GroupKind kind : kLayoutSizes) sizes[sim::to_string(kind)] = layout.size(kind);
  for (sim::GroupKind kind : kGroups) coords[sim::to_string(kind)] = layout.coord(rank, kind);
  OrderedJson order = OrderedJson::array();
  for (sim::GroupKind kind : layout.full_order()) order.push_back(sim::to_string(kind));
  sizes["order"] = order;
  j["layout"] = sizes;
  j["coords"] = coords;
  j["labels"] = workload.program(rank).labels;
  j["ops"] = workload.program(rank).ops.size();
  return j;
}

// ----- reading -----


constexpr std::int64_t kMaxInt32 = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

// Version 2: sizes tp, cp, dp, pp, ep, etp and a five-dimension order; version 1: tp, cp, dp,
// pp and a four-dimension order.
sim::RankLayout read_layout(JsonFields& header, const Json& j, const std::string& origin, int line,
                            int version) {
  JsonFields f(j, origin, line, "layout");
  const std::size_t dims = version == 1 ? 4 : 6;
  std::array<int, 6> sizes{1, 1, 1, 1, 1, 1};
  for (std::size_t i = 0; i < dims; ++i) {
    sizes[i] = static_cast<int>(f.get_int(sim::to_string(kLayoutSizes[i]), 1, kMaxInt32));
  }
  const std::size_t order_size = version == 1 ? 4 : 5;
  const Json& order_json = f.get("order");
  if (!order_json.is_array() || order_json.size() != order_size) {
    throw f.error("order", "expected a list of the " + std::to_string(order_size) + " dimensions");
  }
  std::vector<sim::GroupKind> order;
  for (std::size_t i = 0; i < order_size; ++i) {
    if (!order_json[i].is_string()) throw f.error("order", "expected dimension names");
    order.push_back(f.parse_enum("order", order_json[i].get<std::string>(), kOrderDims));
  }
  f.finish();
  try {
    if (version == 1) {
      return sim::RankLayout(sizes[0], sizes[1], sizes[2], sizes[3],
                             {order[0], order[1], order[2], order[3]});
    }
    return sim::RankLayout(sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5],
                           {order[0], order[1], order[2], order[3], order[4]});
  } catch (const std::invalid_argument& e) {
    throw header.error("layout", e.what());
  }
}

std::vector<std::string> read_labels(JsonFields& header) {
  const Json& labels = header.get("labels");
  if (!labels.is_array()) throw header.error("labels", "expected a list of strings");
  std::vector<std::string> out;
  for (const auto& label : labels) {
    if (!label.is_string()) throw header.error("labels", "expected a list of strings");
    out.push_back(label.get<std::string>());
  }
  return out;
}

// Parses the header; returns the op count it announces.
std::size_t read_header(const Json& j, const std::string& origin, int line, RankTrace& trace) {
  JsonFields h(j, origin, line, "");
  if (h.get_string("format") != kFormatName) {
    throw h.error("format", std::string("expected '") + kFormatName + "'");
  }
  const auto version = static_cast<int>(h.get_int("version", 0, kMaxInt32));
  if (version < 1 || version > kTraceFormatVersion) {
    throw h.error("version", "unsupported version (this reader reads 1 to " +
                                 std::to_string(kTraceFormatVersion) + ")");
  }
  trace.layout = read_layout(h, h.get("layout"), origin, line, version);
  trace.rank = static_cast<int>(h.get_int("rank", 0, trace.layout.world() - 1));
  trace.program_index = static_cast<int>(h.get_int("program", 0, kMaxInt32));
  trace.description = h.get_string("description");
  JsonFields coords(h.get("coords"), origin, line, "coords");
  const std::size_t coord_kinds =
      version == 1 ? kCoordKindsV1 : version <= 3 ? kCoordKindsV3 : kGroups.size();
  for (std::size_t i = 0; i < coord_kinds; ++i) {
    const sim::GroupKind kind = kGroups[i];
    if (coords.get_int(sim::to_string(kind), 0, kMaxInt32) != trace.layout.coord(trace.rank, kind)) {
      throw coords.error(sim::to_string(kind), "does not match the rank's coordinate in the layout");
    }
  }
  coords.finish();
  trace.program.labels = read_labels(h);
  const auto count = static_cast<std::size_t>(h.get_int("ops", 0, kMaxDim));
  h.finish();
  return count;
}

// Version 11: token exchanges carry their routing (experts, top_k, optional router groups).
sim::CollectiveSpec read_collective(JsonFields& f) {
  sim::CollectiveSpec c{f.get_enum("collective", kCollectives), f.get_enum("group", kGroups), {}};
  if (c.kind != sim::CollectiveKind::TokenExchange) return c;
  c.routing.experts = static_cast<std::int32_t>(f.get_int("experts", 1, kMaxInt32));
  c.routing.top_k = static_cast<std::int32_t>(f.get_int("top_k", 1, c.routing.experts));
  if (f.has("router_groups") || f.has("router_group_topk")) {
    c.routing.groups = static_cast<std::int32_t>(f.get_int("router_groups", 1, c.routing.experts));
    c.routing.group_topk = static_cast<std::int32_t>(f.get_int("router_group_topk", 1, c.routing.groups));
  }
  try {
    sim::check_routing(c.routing, 1);
  } catch (const std::invalid_argument& e) {
    throw f.error(c.routing.groups > 0 ? "router_groups" : "top_k", e.what());
  }
  return c;
}

sim::OpShape read_gemm(JsonFields& f) {
  sim::GemmShape g{f.get_int("m", 1, kMaxDim), f.get_int("n", 1, kMaxDim),
                   f.get_int("k", 1, kMaxDim), f.get_enum("dtype", kDTypes)};
  // Version 3: how TE's TP overlap runs the GEMM (optional; a plain GEMM without them).
  if (f.has("splits")) g.splits = static_cast<std::int32_t>(f.get_int("splits", 1, g.m));
  if (f.has("sm_margin")) g.sm_margin = static_cast<std::int32_t>(f.get_int("sm_margin", 0, 1024));
  // Version 5: SMs held by the overlapping communication kernel (optional; none without it).
  if (f.has("busy_sms")) g.busy_sms = static_cast<std::int32_t>(f.get_int("busy_sms", 0, 1024));
  // Version 7: a weight gradient accumulated into main_grad (optional; written otherwise).
  if (f.has("grad_accum")) g.grad_accum = f.get_enum("grad_accum", kGradAccums);
  // Version 9: grouped expert GEMMs (optional, both or neither; one GEMM without them).
  if (f.has("groups") || f.has("group_axis")) {
    g.group_axis = f.get_enum("group_axis", kGroupAxes);
    const std::int64_t split = g.group_axis == sim::GroupAxis::K ? g.k : g.m;
    g.groups = static_cast<std::int32_t>(f.get_int("groups", 1, split));
  }
  // Version 12: block-scaled FP8 operands (optional; per-tensor scales without it).
  if (f.has("fp8_scaling")) {
    g.fp8_scaling = f.get_enum("fp8_scaling", kFp8Scalings);
    if (g.fp8_scaling != sim::Fp8Scaling::Tensor && g.dtype != sim::DType::FP8) {
      throw f.error("fp8_scaling", "block scaling needs dtype fp8");
    }
  }
  return g;
}

sim::OpShape read_attention(JsonFields& f) {
  sim::AttentionShape a;
  a.batch = f.get_int("batch", 1, kMaxDim);
  a.heads = f.get_int("heads", 1, kMaxDim);
  a.kv_heads = f.get_int("kv_heads", 1, kMaxDim);
  a.seq_q = f.get_int("seq_q", 1, kMaxDim);
  a.seq_kv = f.get_int("seq_kv", 1, kMaxDim);
  a.head_dim = f.get_int("head_dim", 1, kMaxDim);
  a.head_dim_v = f.get_int("head_dim_v", 1, kMaxDim);
  a.causal = f.get_bool("causal");
  if (a.causal && a.seq_q != a.seq_kv) {
    // Costs and FLOPs take a causal block as square (half its pairs); a rectangular one's
    // pairs depend on the mask's alignment (top-left or bottom-right), which is not modelled.
    throw f.error("causal", "a causal attention op needs seq_q == seq_kv (here " + std::to_string(a.seq_q) +
                                " x " + std::to_string(a.seq_kv) +
                                "); give a rectangular block as a causal square and a non-causal rest");
  }
  a.backward = f.get_bool("backward");
  a.dtype = f.get_enum("dtype", kDTypes);
  // Version 8: the kernel library (optional; cuDNN without it).
  if (f.has("kernel")) a.kernel = f.get_enum("kernel", kAttentionKernels);
  return a;
}

sim::OpShape read_mem(JsonFields& f) {
  sim::MemBoundShape m{f.get_enum("kernel", kMemKernels)};
  // Version 6: the threads of a host kernel's rank (optional; per_rank without it).
  if (f.has("host_threads")) m.host_threads = f.get_enum("host_threads", kHostThreads);
  return m;
}

sim::OpShape read_p2p(JsonFields& f) {
  return sim::P2PSpec{f.get_enum("send_to", kPeers), f.get_enum("recv_from", kPeers)};
}

// An op's shape by its `kind` (docs/trace-format.md): the reader at the kind's place in kKinds,
// the order of OpShape's alternatives, which the writer names them by.
sim::OpShape read_shape(JsonFields& f, const std::string& kind) {
  using Reader = sim::OpShape (*)(JsonFields&);
  static constexpr std::array<Reader, kKinds.size()> kReaders = {
      read_gemm, read_attention, read_mem,
      [](JsonFields& fields) -> sim::OpShape { return read_collective(fields); }, read_p2p};
  for (std::size_t i = 0; i < kKinds.size(); ++i) {
    if (kind == kKinds[i]) return kReaders[i](f);
  }
  std::string known;
  for (const char* name : kKinds) known += (known.empty() ? "" : ", ") + std::string(name);
  throw f.error("kind", "'" + kind + "' is not one of: " + known);
}

std::vector<std::uint32_t> read_deps(JsonFields& f, std::size_t index) {
  const Json& deps = f.get("deps");
  if (!deps.is_array()) throw f.error("deps", "expected a list of op indices");
  std::vector<std::uint32_t> out;
  for (const auto& dep : deps) {
    if (!dep.is_number_unsigned() || dep.get<std::uint64_t>() >= index) {
      throw f.error("deps", "dependencies must be indices of earlier ops (< " +
                                std::to_string(index) + ")");
    }
    out.push_back(static_cast<std::uint32_t>(dep.get<std::uint64_t>()));
  }
  return out;
}

std::uint16_t label_index(JsonFields& f, const std::vector<std::string>& labels) {
  const std::string label = f.get_string("label");
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] == label) return static_cast<std::uint16_t>(i);
  }
  throw f.error("label", "'" + label + "' is not in the header's labels");
}

sim::Op read_op(const Json& j, const std::string& origin, int line, std::size_t index,
                const std::vector<std::string>& labels) {
  JsonFields f(j, origin, line, "ops[" + std::to_string(index) + "]");
  if (f.get_int("op", 0, kMaxDim) != static_cast<std::int64_t>(index)) {
    throw f.error("op", "expected op index " + std::to_string(index));
  }
  sim::Op op;
  op.shape = read_shape(f, f.get_string("kind"));
  op.label = label_index(f, labels);
  op.stream = f.get_enum("stream", kStreams);
  op.phase = f.get_enum("phase", kPhases);
  op.layer = static_cast<std::int32_t>(f.get_int("layer", -1, kMaxInt32));
  op.microbatch = static_cast<std::int32_t>(f.get_int("microbatch", -1, kMaxInt32));
  op.recompute = f.get_bool("recompute");
  op.flops = f.get_number("flops", 0.0);
  op.bytes = f.get_number("bytes", 0.0);
  op.deps = read_deps(f, index);
  if (f.has("duration_s")) op.duration_s = f.get_number("duration_s", 0.0);
  f.finish();
  return op;
}

Json parse_line(const std::string& text, const std::string& origin, int line) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw SpecError(origin, line, "", std::string("invalid JSON: ") + e.what());
  }
}

}  // namespace

void write_rank_trace(std::ostream& out, const sim::Workload& workload, int rank) {
  if (rank < 0 || rank >= workload.layout.world()) throw std::out_of_range("rank out of range");
  out << header_line(workload, rank).dump() << '\n';
  const sim::Program& program = workload.program(rank);
  for (std::size_t i = 0; i < program.ops.size(); ++i) out << op_line(program, i).dump() << '\n';
}

void write_rank_trace_file(const std::string& path, const sim::Workload& workload, int rank) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot open '" + path + "' for writing");
  write_rank_trace(out, workload, rank);
  out.flush();
  if (!out) throw std::runtime_error("error writing '" + path + "'");
}

RankTrace read_rank_trace(std::istream& in, const std::string& origin) {
  RankTrace trace;
  std::string text;
  int line = 0;
  if (!std::getline(in, text)) throw SpecError(origin, 0, "", "empty trace (no header line)");
  ++line;
  const std::size_t count = read_header(parse_line(text, origin, line), origin, line, trace);
  trace.program.ops.reserve(count);
  while (std::getline(in, text)) {
    ++line;
    const std::size_t index = trace.program.ops.size();
    if (index >= count) {
      throw SpecError(origin, line, "ops", "more op lines than the header's " + std::to_string(count));
    }
    trace.program.ops.push_back(read_op(parse_line(text, origin, line), origin, line, index,
                                        trace.program.labels));
  }
  if (trace.program.ops.size() != count) {
    throw SpecError(origin, line, "ops", "the header announces " + std::to_string(count) +
                                             " ops, the file has " +
                                             std::to_string(trace.program.ops.size()));
  }
  return trace;
}

sim::Workload assemble_workload(const std::vector<RankTrace>& traces) {
  if (traces.empty()) throw SpecError("<traces>", 0, "", "no trace given");
  sim::Workload w;
  w.layout = traces.front().layout;
  const int pp = w.layout.size(sim::GroupKind::PP);
  std::vector<int> trace_of_stage(static_cast<std::size_t>(pp), -1);
  for (std::size_t i = 0; i < traces.size(); ++i) {
    const RankTrace& t = traces[i];
    const auto& a = t.layout;
    const auto& b = w.layout;
    bool same = a.full_order() == b.full_order();
    for (sim::GroupKind k : kLayoutSizes) same = same && a.size(k) == b.size(k);
    if (!same) {
      throw SpecError(t.description, 1, "layout", "differs from the first trace's layout");
    }
    trace_of_stage[static_cast<std::size_t>(w.layout.coord(t.rank, sim::GroupKind::PP))] =
        static_cast<int>(i);
  }
  for (int s = 0; s < pp; ++s) {
    const int i = trace_of_stage[static_cast<std::size_t>(s)];
    if (i < 0) {
      throw SpecError("<traces>", 0, "rank", "no trace for pipeline stage " + std::to_string(s));
    }
    w.programs.push_back(traces[static_cast<std::size_t>(i)].program);
  }
  w.program_of_rank.resize(static_cast<std::size_t>(w.layout.world()));
  double flops = 0.0, recomputed = 0.0;
  for (int r = 0; r < w.layout.world(); ++r) {
    const auto stage = static_cast<std::uint32_t>(w.layout.coord(r, sim::GroupKind::PP));
    w.program_of_rank[static_cast<std::size_t>(r)] = stage;
    for (const sim::Op& op : w.programs[stage].ops) {
      flops += op.flops;
      recomputed += op.recompute ? op.flops : 0.0;
    }
  }
  w.accounting.hardware_flops = flops;
  w.accounting.model_flops = flops - recomputed;
  w.accounting.mfu_convention = "trace";
  w.description = traces.front().description + " (from traces)";
  return w;
}

RankTrace read_rank_trace_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError(path, 0, "", "cannot open file");
  return read_rank_trace(in, path);
}

}  // namespace clustersim::workloads
