// What a run's report says about the fabric the job was played on: the oversubscription of the
// tiers whose uplinks exist at the job's size, the caveat of the identical-replica reduction on
// such a fabric, and a stated ratio that has no uplinks to act on (docs/outputs.md).
#pragma once

#include <string>

#include "tools/job.hpp"

namespace clustersim::tools {

/// The built oversubscription (down:up) of the leaf and spine tiers where their uplinks exist
/// for `job`: 1 above a single leaf, above a single spine group or with 2 tiers.
struct TierOversubscription {
  double leaf = 1.0;   ///< leaf tier, down:up
  double spine = 1.0;  ///< spine tier (3 tiers only), down:up
  bool leaf_uplinks = false;   ///< the fabric has leaf uplinks at the job's size
  bool spine_uplinks = false;  ///< it has spine-group uplinks (3 tiers, several groups)
  /// True if either tier is oversubscribed.
  bool any() const { return leaf > 1.0 || spine > 1.0; }
};

/// The tiers' oversubscription for `job` (the layout only: no per-GPU work).
TierOversubscription tier_oversubscription(const Job& job);

/// With the identical-replica reduction (`identical`) on an oversubscribed fabric: which flows
/// the reduction leaves out that would share the thin uplinks; empty otherwise.
std::string replicas_note(const Job& job, const TierOversubscription& tiers, bool identical);

/// A stated leaf or spine oversubscription that has no uplinks to act on at the job's size (a
/// spine ratio with 2 tiers, a leaf ratio with a single leaf); empty otherwise.
std::string fabric_note(const Job& job, const TierOversubscription& tiers);

}  // namespace clustersim::tools
