// Exposition: turns the latest per-collector snapshots into the families
// served at /metrics and printed by `fabricmon --once` (one code path for
// both). It merges families of the same name across collectors, adds the
// daemon's self-metrics and fabric_build_info, and sorts everything
// (SortFamilies) so the output is stable byte for byte.
//
// Failed collections: the exposition shows exactly what the latest snapshot
// holds. The scheduler (daemon/poller.h) publishes, for a failed or timed
// out collection, only what that collection itself gathered (nothing for a
// timeout) — samples from an earlier good collection are dropped, like
// node_exporter does, so Prometheus marks the series stale instead of
// graphing frozen values.
//
// Thread-safety: BuildExposition is a pure function; SnapshotCollectable is
// safe for concurrent Collect() calls (it only reads the store).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <memory>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace fabric {

struct BuildInfo {
  std::string version;
  std::string revision;
};

// This binary's version (CMake PROJECT_VERSION) and git revision.
BuildInfo ThisBuild();

// Merges the collectors' latest samples (in collector name order) with the
// self-metrics. Two collectors exporting one series (same name and labels)
// would be invalid exposition: the one whose name sorts first keeps it, the
// other's count in fabric_collector_duplicate_samples{collector}.
std::vector<prometheus::MetricFamily> BuildExposition(
    std::vector<std::shared_ptr<const Snapshot>> snapshots,
    const BuildInfo& build);

// prometheus-cpp pull adapter: each scrape reads the latest snapshots; it
// never touches hardware.
class SnapshotCollectable : public prometheus::Collectable {
 public:
  SnapshotCollectable(std::shared_ptr<const SnapshotStore> store,
                      BuildInfo build);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::shared_ptr<const SnapshotStore> store_;
  BuildInfo build_;
};

}  // namespace fabric
