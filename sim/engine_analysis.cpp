// Static analyses of a workload that decide how the engine may play it (docs/engine.md): which
// TP collectives it may charge their estimate (tp_isolated), whether the identical-replica
// reduction applies (replica_streams) and whether one rank per TP group may be played
// (tp_fold_problem).
#include <array>
#include <set>
#include <string>
#include <vector>

#include "sim/detail/engine_impl.hpp"

namespace clustersim::sim::detail {
namespace {

// True if the op is a collective whose group spans replicas (DP, DP x CP, expert-DP groups, or
// any group a layout places across replicas) and is played as flows.
bool spans_replicas(const Workload& w, int rank, const Op& op) {
  const auto* c = std::get_if<CollectiveSpec>(&op.shape);
  if (c == nullptr || c->group == GroupKind::AMAX) return false;
  const GroupKind kind = replica_kind(w);
  const int coord = w.layout.coord(rank, kind);
  for (int m : w.layout.group(rank, c->group)) {
    if (w.layout.coord(m, kind) != coord) return true;
  }
  return false;
}

}  // namespace

GroupKind replica_kind(const Workload& w) {
  return w.layout.size(GroupKind::EP) > 1 ? GroupKind::EDP : GroupKind::DP;
}

int replica_source(const Workload& w, int rank) {
  return w.layout.group(rank, replica_kind(w)).front();
}

std::vector<std::vector<bool>> replica_streams(const Workload& w,
                                               const std::vector<ProgramPlan>& plans,
                                               std::string& problem) {
  std::vector<std::vector<bool>> out(w.programs.size());
  std::vector<int> first_rank(w.programs.size(), -1);
  for (int r = 0; r < w.layout.world(); ++r) {
    auto& f = first_rank[w.program_of_rank[static_cast<size_t>(r)]];
    if (f < 0) f = r;
  }
  for (size_t p = 0; p < w.programs.size(); ++p) {
    for (const StreamPlan& sp : plans[p].streams) {
      size_t spanning = 0;
      for (std::uint32_t i : sp.ops) {
        if (first_rank[p] >= 0 && spans_replicas(w, first_rank[p], w.programs[p].ops[i])) ++spanning;
      }
      if (spanning > 0 && spanning < sp.ops.size() && problem.empty()) {
        problem = std::string("stream ") + to_string(sp.stream) +
                  " mixes collectives across data-parallel replicas with other ops";
      }
      out[p].push_back(spanning > 0 && spanning == sp.ops.size());
    }
  }
  return out;
}

std::string replica_reduction_problem(const Workload& workload) {
  const GroupKind kind = replica_kind(workload);
  if (workload.layout.size(kind) <= 1) {
    return kind == GroupKind::DP ? "there is a single data-parallel replica"
                                 : "there is a single expert-data-parallel replica";
  }
  std::vector<ProgramPlan> plans;
  for (const Program& p : workload.programs) plans.push_back(plan_program(p));
  std::string problem;
  (void)replica_streams(workload, plans, problem);
  return problem;
}

namespace {

// Group kinds the programs use (pipeline transfers count as PP).
std::array<bool, kGroupKindCount> used_groups(const Workload& w) {
  std::array<bool, kGroupKindCount> used{};
  for (const Program& p : w.programs) {
    for (const Op& op : p.ops) {
      if (const auto* c = std::get_if<CollectiveSpec>(&op.shape)) used[static_cast<size_t>(c->group)] = true;
      if (op.is_p2p()) used[static_cast<size_t>(GroupKind::PP)] = true;
    }
  }
  return used;
}

// The rank `shift` TP coordinates further round rank's TP group.
int tp_shift(const Workload& w, int rank, int shift) {
  const std::vector<int> g = w.layout.group(rank, GroupKind::TP);
  const int c = w.layout.coord(rank, GroupKind::TP);
  return g[static_cast<size_t>((c + shift) % static_cast<int>(g.size()))];
}

// "" when every group of `kind` lies on one TP coordinate and the shift by each t maps it
// onto the group of its image, member by member.
std::string kind_fold_problem(const Workload& w, GroupKind kind) {
  const int world = w.layout.world();
  const int tp = w.layout.size(GroupKind::TP);
  std::vector<char> seen(static_cast<size_t>(world), 0);
  for (int r = 0; r < world; ++r) {
    if (seen[static_cast<size_t>(r)] != 0 || w.layout.coord(r, GroupKind::TP) != 0) continue;
    const std::vector<int> members = w.layout.group(r, kind);
    for (int m : members) {
      seen[static_cast<size_t>(m)] = 1;
      if (w.layout.coord(m, GroupKind::TP) != 0) {
        return std::string(to_string(kind)) + " groups span TP coordinates";
      }
    }
    for (int t = 1; t < tp; ++t) {
      const std::vector<int> image = w.layout.group(tp_shift(w, r, t), kind);
      for (size_t i = 0; i < members.size(); ++i) {
        if (image.size() != members.size() || image[i] != tp_shift(w, members[i], t)) {
          return std::string(to_string(kind)) + " groups are not mapped onto each other by the TP coordinate";
        }
      }
    }
  }
  return "";
}

}  // namespace

bool etp_is_tp(const Workload& w) {
  if (w.layout.size(GroupKind::ETP) != w.layout.size(GroupKind::TP)) return false;
  for (int r = 0; r < w.layout.world(); ++r) {
    if (w.layout.group(r, GroupKind::ETP) != w.layout.group(r, GroupKind::TP)) return false;
  }
  return true;
}

std::string tp_fold_problem(const Workload& w) {
  if (w.layout.size(GroupKind::TP) <= 1) return "tp is 1";
  for (int r = 0; r < w.layout.world(); ++r) {
    const int rep = w.layout.group(r, GroupKind::TP).front();
    if (w.program_of_rank[static_cast<size_t>(r)] != w.program_of_rank[static_cast<size_t>(rep)]) {
      return "the ranks of a TP group run different programs";
    }
  }
  const auto used = used_groups(w);
  for (int k = 0; k < kGroupKindCount; ++k) {
    const auto kind = static_cast<GroupKind>(k);
    if (kind == GroupKind::TP || kind == GroupKind::AMAX || !used[static_cast<size_t>(k)]) continue;
    if (kind == GroupKind::ETP && etp_is_tp(w)) continue;  // estimated with the TP collectives
    std::string problem = kind_fold_problem(w, kind);
    if (!problem.empty()) return problem;
  }
  return "";
}

bool tp_isolated(const Workload& w, int domain_size) {
  const auto used = used_groups(w);
  const bool etp_tp = etp_is_tp(w);
  const int world = w.layout.world();
  for (int k = 0; k < kGroupKindCount; ++k) {
    const auto kind = static_cast<GroupKind>(k);
    if (kind == GroupKind::AMAX || !used[static_cast<size_t>(k)]) continue;
    std::vector<char> seen(static_cast<size_t>(world), 0);
    for (int r = 0; r < world; ++r) {
      if (seen[static_cast<size_t>(r)] != 0) continue;
      const std::vector<int> members = w.layout.group(r, kind);
      std::set<int> domains;
      for (int m : members) {
        seen[static_cast<size_t>(m)] = 1;
        domains.insert(m / domain_size);
      }
      const bool tp_like = kind == GroupKind::TP || (kind == GroupKind::ETP && etp_tp);
      const bool ok = tp_like ? domains.size() == 1 : domains.size() == members.size();
      if (!ok) return false;
    }
  }
  return true;
}

}  // namespace clustersim::sim::detail
