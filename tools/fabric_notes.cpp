#include "tools/fabric_notes.hpp"

#include <iomanip>
#include <sstream>

#include "platforms/topology.hpp"

namespace clustersim::tools {

TierOversubscription tier_oversubscription(const Job& job) {
  const auto& f = job.cluster.platform.fabric;
  const platforms::Topology t(job.cluster.platform, job.cluster.gpus);
  TierOversubscription o;
  o.leaf_uplinks = t.link_class(platforms::LinkKind::LeafUp).count > 0;
  o.spine_uplinks = t.link_class(platforms::LinkKind::PodUp).count > 0;
  if (o.leaf_uplinks) o.leaf = platforms::built_oversubscription(f.switch_radix, f.oversubscription.leaf);
  if (o.spine_uplinks) o.spine = platforms::built_oversubscription(f.switch_radix, f.oversubscription.spine);
  return o;
}

// The identical-replica reduction does not play the other replicas' pipeline, tensor-parallel
// and expert-parallel flows (docs/engine.md). On a fat-tree tier that is oversubscribed they would
// share its uplinks with the played flows, so the step can come out fast: a 64-GPU TP4 PP2 DP8
// job on 8:1 non-rail leaves ran 7% faster identical than full (review, 2026-12-05), a 1,024-GPU
// EP64 DeepSeek-V3 cut on 4:1 rail leaves 22% (review, 2026-12-07).
std::string replicas_note(const Job& job, const TierOversubscription& o, bool identical) {
  if (!identical || !o.any()) return "";
  std::ostringstream out;
  out << std::setprecision(3) << "the fabric is oversubscribed (leaf " << o.leaf << ":1";
  if (o.spine > 1.0) out << ", spine " << o.spine << ":1";
  out << "): the identical-replica reduction does not play the other replicas' pipeline"
      << (job.workload.parallel.ep > 1 ? ", tensor-parallel and expert-parallel (all-to-all)" : " and tensor-parallel")
      << " flows, which would share its uplinks, so the step may be short; --replicas full plays them";
  return out.str();
}

std::string fabric_note(const Job& job, const TierOversubscription& tiers) {
  const auto& f = job.cluster.platform.fabric;
  std::ostringstream out;
  out << std::setprecision(3);
  if (f.oversubscription.leaf > 1.0 && !tiers.leaf_uplinks) {
    out << "leaf oversubscription " << f.oversubscription.leaf << ":1 has no effect: "
        << job.cluster.gpus << " GPUs sit under a single leaf";
  } else if (f.oversubscription.spine > 1.0 && !tiers.spine_uplinks) {
    out << "spine oversubscription " << f.oversubscription.spine << ":1 has no effect: at "
        << job.cluster.gpus << " GPUs the fabric has no spine uplinks (2 tiers, or a single spine group)";
  }
  return out.str();
}

}  // namespace clustersim::tools
