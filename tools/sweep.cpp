#include "tools/sweep.hpp"

#include <algorithm>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "platforms/platform_spec.hpp"
#include "sim/spec_error.hpp"
#include "tools/step_figures.hpp"
#include "workloads/schedule.hpp"

namespace clustersim::tools {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t next = text.find(sep, pos);
    out.push_back(text.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return out;
}

// Plain decimal digits, no leading zero (as YAML integers must be, docs/job-spec.md).
bool is_count(const std::string& v) {
  return !v.empty() && v.size() < 10 && (v[0] != '0' || v.size() == 1) &&
         std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int status_order(const std::string& status) {
  if (status == kSweepOk) return 0;
  if (status == kSweepFailed) return 1;
  if (status == kSweepOutOfMemory) return 2;
  return 3;
}

double number_or(const std::string& text, double fallback) {
  try {
    return text.empty() ? fallback : std::stod(text);
  } catch (const std::exception&) {
    return fallback;
  }
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A set value: "none", or distinct members of the dimension's allowed names joined by '+'.
void check_set_value(const SweepDimension& dim, const std::string& value, const std::string& token) {
  if (value == "none" && dim.none_allowed) return;
  std::set<std::string> members;
  for (const auto& m : split(value, '+')) {
    if (std::find(dim.allowed.begin(), dim.allowed.end(), m) == dim.allowed.end() || !members.insert(m).second) {
      throw std::invalid_argument("--space '" + token + "': bad value '" + value + "' for " + dim.name +
                                  (dim.none_allowed ? " (none, or distinct names of " : " (distinct names of ") +
                                  join_names(dim.allowed) +
                                  " joined by '+')");
    }
  }
}

// The YAML list a set value stands for.
std::string set_value_yaml(const std::string& value) {
  if (value == "none") return "[]";
  std::string out;
  for (const auto& m : split(value, '+')) out += (out.empty() ? "" : ", ") + m;
  return "[" + out + "]";
}

}  // namespace

std::size_t parse_count(const std::string& text, const std::string& what) {
  if (!is_count(text)) throw std::invalid_argument(what + ": '" + text + "' is not a number");
  return static_cast<std::size_t>(std::stoull(text));
}

const std::vector<SweepDimension>& sweep_dimensions() {
  static const std::vector<SweepDimension> kDims = {
      {"tp", "parallelism", "tp", {}},
      {"pp", "parallelism", "pp", {}},
      {"vp", "parallelism", "vp", {}, false, true, {"parallelism.schedule"}},
      {"schedule", "parallelism", "schedule", workloads::pipeline_schedule_names()},
      {"cp", "parallelism", "cp", {}},
      {"cp_comm", "parallelism", "cp_comm_type", {"p2p", "all_gather", "a2a"}},
      {"ep", "parallelism", "ep", {}},
      {"etp", "parallelism", "etp", {}},
      {"mbs", "training", "micro_batch_size", {}},
      {"zero", "parallelism", "zero_stage", {"0", "1", "2", "3"}, false, true,
       {"parallelism.fsdp", "parallelism.distributed_optimizer"}},
      {"recompute", "training", "recompute", {"none", "selective", "full"}},
      {"recompute_method", "training", "recompute_method", {"uniform", "block"}},
      {"recompute_layers", "training", "recompute_num_layers", {}},
      {"attention", "training", "attention_backend", {"cudnn", "flash2"}},
      {"fp8_recipe", "training", "fp8_recipe", {"delayed", "blockwise", "tensorwise"}},
      {"shared_overlap", "parallelism", "moe_shared_expert_overlap", {"false", "true"}},
      {"dispatcher", "parallelism", "moe_token_dispatcher", {"alltoall", "deepep"}},
      {"ep_overlap", "parallelism", "overlap_moe_expert_parallel_comm", {"false", "true"}},
      {"delay_wgrad", "parallelism", "delay_wgrad_compute", {"false", "true"}},
      {"offload", "training", "offload_modules",
       {"qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act"}, true},
      {"recompute_modules", "training", "recompute_modules",
       {"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"}, true, false},
      {"platform", "cluster", "platform", platforms::catalog_platforms(), false, true,
       {"cluster.overrides"}},
  };
  return kDims;
}

std::vector<SweepAxis> parse_space(const std::vector<std::string>& tokens) {
  std::vector<SweepAxis> axes;
  for (const auto& token : tokens) {
    const auto eq = token.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument("--space '" + token + "': expected NAME=V1,V2,...");
    }
    const std::string name = token.substr(0, eq);
    const auto& dims = sweep_dimensions();
    const auto dim = std::find_if(dims.begin(), dims.end(), [&](const auto& d) { return d.name == name; });
    if (dim == dims.end()) {
      std::string known;
      for (const auto& d : dims) known += (known.empty() ? "" : ", ") + d.name;
      throw std::invalid_argument("--space '" + token + "': unknown dimension '" + name +
                                  "' (known: " + known + ")");
    }
    if (std::any_of(axes.begin(), axes.end(), [&](const auto& a) { return a.dim.name == name; })) {
      throw std::invalid_argument("--space: dimension '" + name + "' given twice");
    }
    SweepAxis axis{*dim, split(token.substr(eq + 1), ',')};
    std::set<std::string> seen;
    for (const auto& v : axis.values) {
      if (dim->set_valued) {
        check_set_value(*dim, v, token);
        if (!seen.insert(v).second) throw std::invalid_argument("--space '" + token + "': '" + v + "' twice");
        continue;
      }
      const bool ok = dim->allowed.empty()
                          ? is_count(v) && std::stoll(v) >= 1
                          : std::find(dim->allowed.begin(), dim->allowed.end(), v) != dim->allowed.end();
      if (!ok) {
        throw std::invalid_argument("--space '" + token + "': bad value '" + v + "' for " + name +
                                    (dim->allowed.empty() ? " (expected integers >= 1)"
                                                          : " (known: " + join_names(dim->allowed) + ")"));
      }
      if (!seen.insert(v).second) throw std::invalid_argument("--space '" + token + "': '" + v + "' twice");
    }
    axes.push_back(std::move(axis));
  }
  std::size_t n = 1;
  for (const auto& a : axes) {
    n *= a.values.size();  // no overflow: n <= 1e6 before, and a command line holds < 1e6 values
    if (n > kMaxSweepConfigs) {
      throw std::invalid_argument("--space: the product of its value lists exceeds " +
                                  std::to_string(kMaxSweepConfigs) +
                                  " configurations; narrow the lists (each configuration is "
                                  "enumerated and checked against the memory model)");
    }
  }
  return axes;
}

std::size_t space_size(const std::vector<SweepAxis>& axes) {
  std::size_t n = 1;
  for (const auto& a : axes) n *= a.values.size();
  return n;
}

std::vector<std::string> config_values(const std::vector<SweepAxis>& axes, std::size_t id) {
  std::vector<std::string> values(axes.size());
  for (std::size_t i = axes.size(); i-- > 0;) {
    values[i] = axes[i].values[id % axes[i].values.size()];
    id /= axes[i].values.size();
  }
  return values;
}

Shard parse_shard(const std::string& text) {
  const auto parts = split(text, '/');
  if (parts.size() != 2) throw std::invalid_argument("--shard '" + text + "': expected K/N");
  Shard s{parse_count(parts[0], "--shard"), parse_count(parts[1], "--shard")};
  if (s.count < 1 || s.index < 1 || s.index > s.count) {
    throw std::invalid_argument("--shard '" + text + "': need 1 <= K <= N");
  }
  return s;
}

std::vector<std::size_t> shard_ids(std::size_t size, const Shard& shard) {
  std::vector<std::size_t> ids;
  for (std::size_t id = shard.index - 1; id < size; id += shard.count) ids.push_back(id);
  return ids;
}

std::vector<Override> sweep_overrides(const std::vector<SweepAxis>& axes,
                                      const std::vector<std::string>& values, std::int64_t gpus,
                                      std::int64_t global_batch) {
  std::vector<Override> o = {{"cluster.gpus", std::to_string(gpus)},
                             {"parallelism.dp", ""},
                             {"training.gradient_accumulation_steps", ""},
                             {"training.global_batch_size", std::to_string(global_batch)}};
  // Every dimension's clears first, so that a swept key one of them clears is set after.
  for (const auto& axis : axes) {
    for (const auto& key : axis.dim.clears) o.emplace_back(key, "");
  }
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto& d = axes[i].dim;
    o.emplace_back(d.section + "." + d.key, d.set_valued ? set_value_yaml(values[i]) : values[i]);
  }
  return o;
}

std::vector<std::string> sweep_header(const std::vector<SweepAxis>& axes) {
  std::vector<std::string> h = {"rank", "config"};
  for (const auto& a : axes) h.push_back(a.dim.name);
  for (const char* c : {"dp", "status", "tokens_per_s_per_gpu", "mfu", "step_time_s", "compute_s",
                        "exposed_comm_s", "bubble_s", "peak_memory_gib", "memory_headroom_gib"}) {
    h.emplace_back(c);
  }
  const auto& energy = energy_and_failure_columns();
  h.insert(h.end(), energy.begin(), energy.end());
  for (const char* c : {"replicas", "reason", "sweep", "space"}) h.emplace_back(c);
  return h;
}

void rank_sweep_table(CsvTable& table) {
  const std::size_t rank = table.column("rank");
  const std::size_t config = table.column("config");
  const std::size_t status = table.column("status");
  const std::size_t tokens = table.column("tokens_per_s_per_gpu");
  std::stable_sort(table.rows.begin(), table.rows.end(), [&](const auto& a, const auto& b) {
    const int sa = status_order(a[status]);
    const int sb = status_order(b[status]);
    if (sa != sb) return sa < sb;
    if (sa == 0) {
      const double ta = number_or(a[tokens], 0.0);
      const double tb = number_or(b[tokens], 0.0);
      if (ta != tb) return ta > tb;
    }
    return number_or(a[config], 0.0) < number_or(b[config], 0.0);
  });
  std::size_t next = 1;
  for (auto& row : table.rows) row[rank] = row[status] == kSweepOk ? std::to_string(next++) : "";
}

std::string sweep_fingerprint(const std::string& job_text, std::int64_t gpus,
                              const std::vector<SweepAxis>& axes, const std::string& replicas,
                              double memory_margin) {
  std::string key = job_text + "\n--gpus " + std::to_string(gpus) + "\n--replicas " + replicas;
  if (memory_margin > 0.0) key += "\n--memory-margin " + csv_number(memory_margin, 6);
  for (const auto& a : axes) {
    key += "\n" + a.dim.name + "=";
    for (const auto& v : a.values) key += v + ",";
  }
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a, 64 bits
  for (const unsigned char c : key) h = (h ^ c) * 1099511628211ULL;
  std::ostringstream out;
  out << std::hex << std::setw(16) << std::setfill('0') << h;
  return out.str();
}

std::string top_table(const CsvTable& table, std::size_t n) {
  const std::size_t first_axis = table.column("config") + 1;
  const std::size_t dp = table.column("dp");
  // Axis columns at least 10 wide, wider for a longer name (shared_overlap) or value (module
  // sets of offload) among the rows shown.
  auto width = [&](std::size_t c) {
    std::size_t w = std::max<std::size_t>(10, table.header[c].size() + 2);
    for (std::size_t r = 0; r < std::min(n, table.rows.size()); ++r) w = std::max(w, table.rows[r][c].size() + 2);
    return static_cast<int>(w);
  };
  std::ostringstream out;
  out << std::setw(5) << "rank";
  for (std::size_t c = first_axis; c <= dp; ++c) out << std::setw(width(c)) << table.header[c];
  out << std::setw(14) << "tok/s/GPU" << std::setw(8) << "MFU" << std::setw(12) << "headroom"
      << std::setw(8) << "J/tok" << std::setw(8) << "$/Mtok" << "\n";
  const std::size_t tokens = table.column("tokens_per_s_per_gpu");
  const std::size_t mfu = table.column("mfu");
  const std::size_t head = table.column("memory_headroom_gib");
  const std::size_t joules = table.column("joules_per_token");
  const std::size_t usd = table.column("usd_per_million_tokens");
  const auto three = [](const std::string& v) { return v.empty() ? std::string("-") : csv_number(number_or(v, 0.0), 3); };
  std::size_t shown = 0;
  for (const auto& row : table.rows) {
    if (shown == n || row[table.column("status")] != kSweepOk) break;
    out << std::setw(5) << row[table.column("rank")];
    for (std::size_t c = first_axis; c <= dp; ++c) out << std::setw(width(c)) << row[c];
    out << std::setw(14) << row[tokens] << std::setw(7) << std::fixed << std::setprecision(1)
        << 100.0 * number_or(row[mfu], 0.0) << "%" << std::setw(12)
        << (row[head].empty() ? "-" : row[head] + " GiB") << std::setw(8) << three(row[joules])
        << std::setw(8) << three(row[usd]) << "\n";
    ++shown;
  }
  if (shown == 0) out << "  (no configuration was simulated)\n";
  return out.str();
}

}  // namespace clustersim::tools
