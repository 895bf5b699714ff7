// Snapshot and SnapshotStore: the hand-off between collectors (writers, on
// the poll threads) and exporters (readers, on the HTTP threads or --once).
//
// A Snapshot is immutable once published. The store keeps the latest one per
// collector behind an atomic shared_ptr, so a scrape never waits for a poll
// and never sees a half-written collection.
//
// Thread-safety: SnapshotStore is safe for concurrent Publish/Latest/All.
#pragma once

#include <prometheus/metric_family.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_annotations.h"

namespace fabric {

struct Snapshot {
  std::string collector;
  std::vector<prometheus::MetricFamily> families;  // sorted (MetricSink)
  bool success = false;
  // Published at the deadline of a collection still running (a read stuck
  // in the kernel, a hung device): fabric_collector_stuck.
  bool stuck = false;
  std::uint64_t skipped = 0;        // inputs skipped in this collection
  double duration_seconds = 0;      // wall time of the collection
  double last_success_seconds = 0;  // unix time of the last success, 0 never
};

class SnapshotStore {
 public:
  void Publish(std::shared_ptr<const Snapshot> snapshot);
  std::shared_ptr<const Snapshot> Latest(const std::string& collector) const;
  // Latest snapshot of every collector that has published, by name.
  std::vector<std::shared_ptr<const Snapshot>> All() const;
  // Forgets a collector (after a reload that disabled it).
  void Remove(const std::string& collector);

 private:
  using Slot = std::atomic<std::shared_ptr<const Snapshot>>;
  // The map's shape, not the slots (atomic).
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Slot>> slots_ GUARDED_BY(mu_);
};

}  // namespace fabric
