// The fabric guard of `fabricmon-bench run` (issue 31): a collective runs at
// the pace of its slowest path, so a host set whose rails differ in fabric
// class (infiniband, roce_spectrum_x, roce; docs/fabric-class.md) or in
// fabric is refused, or with --allow-mixed run with a loud warning kept in
// results.json and the report. Each agent reports its host's rails in its
// Prepared reply (benchtool/wire.h); hosts whose agent reports none (no RDMA
// device, an older agent) are unknown and left out of the comparison.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sources/rail_class.h"

namespace fabric::bench {

// The host's rails, read when a session is prepared; null = none reported.
using RailSource = std::function<std::vector<RailSummary>()>;

// A host's kinds of rail: "class@fabric" of each rail, sorted, unique, joined
// with ", "; "" for none.
std::string HostClasses(const std::vector<RailSummary>& rails);

struct HostSetCheck {
  // Hosts (with rails) that do not all have the same HostClasses.
  bool mixed = false;
  // Names the most common kind and every odd host (host:port, rank, kinds).
  std::string message;
  // The set's class for reports and the push: the one class all known rails
  // share, the classes joined with "+" when every host has the same mix
  // (an H100 host: infiniband+roce), "mixed" when hosts differ, "" when no
  // host reported a rail.
  std::string fabric_class;
};

// `rails[r]` are host `hosts[r]`'s (rank order).
HostSetCheck CheckHostSet(const std::vector<std::string>& hosts,
                          const std::vector<std::vector<RailSummary>>& rails);

}  // namespace fabric::bench
