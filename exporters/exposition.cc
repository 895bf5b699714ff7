#include "exporters/exposition.h"

#include <map>
#include <set>

#include "core/metric_sink.h"

namespace fabric {

BuildInfo ThisBuild() { return {FABRICMON_VERSION, FABRICMON_REVISION}; }

std::vector<prometheus::MetricFamily> BuildExposition(
    const std::vector<std::shared_ptr<const Snapshot>>& snapshots,
    const BuildInfo& build) {
  MetricSink self;
  std::map<std::string, prometheus::MetricFamily> merged;
  std::set<std::string> appended;  // got samples from a second collector
  for (const auto& snap : snapshots) {
    if (!snap) continue;
    const Labels labels = {{"collector", snap->collector}};
    self.Gauge("fabric_collector_success",
               "1 if the collector's latest background collection succeeded, "
               "0 if it failed or overran its timeout.",
               labels, snap->success ? 1 : 0);
    self.Gauge("fabric_collector_duration_seconds",
               "Wall time of the collector's latest background collection "
               "(cached from the background poll, not measured at scrape).",
               labels, snap->duration_seconds);
    self.Gauge("fabric_collector_last_success_timestamp_seconds",
               "Unix time the collector last completed a successful "
               "collection; cached from the background poll, so scrapes see "
               "values up to one poll interval old. 0 = never.",
               labels, snap->last_success_seconds);
    self.Gauge("fabric_collector_skipped_inputs",
               "Inputs (files, values) the collector's latest collection "
               "skipped because they were unreadable or malformed.",
               labels, static_cast<double>(snap->skipped));
    self.Gauge("fabric_collector_stuck",
               "1 while the collector's latest collection is running past "
               "its timeout (e.g. a read stuck in the kernel on a wedged "
               "device), else 0.",
               labels, snap->stuck ? 1 : 0);
    for (const auto& family : snap->families) {
      auto [it, inserted] = merged.try_emplace(family.name, family);
      if (inserted) continue;
      // Same name from two collectors: keep one family. A type clash would
      // make invalid exposition, so the later one's samples are dropped.
      if (it->second.type != family.type) continue;
      it->second.metric.insert(it->second.metric.end(), family.metric.begin(),
                               family.metric.end());
      appended.insert(family.name);
    }
  }
  self.Gauge("fabric_build_info",
             "A constant 1 labelled with the fabricmon version and git "
             "revision.",
             {{"version", build.version}, {"revision", build.revision}}, 1);
  for (auto& family : self.Take()) {
    // Self-metric names are reserved: a collector emitting one loses it.
    merged[family.name] = std::move(family);
  }
  // The map orders families by name, and a snapshot's families come sorted
  // from MetricSink::Take(), so only appended ones need their samples sorted
  // (this runs on every scrape).
  std::vector<prometheus::MetricFamily> out;
  out.reserve(merged.size());
  for (auto& [name, family] : merged) {
    if (appended.contains(name)) SortFamily(family);
    out.push_back(std::move(family));
  }
  return out;
}

SnapshotCollectable::SnapshotCollectable(
    std::shared_ptr<const SnapshotStore> store, BuildInfo build)
    : store_(std::move(store)), build_(std::move(build)) {}

std::vector<prometheus::MetricFamily> SnapshotCollectable::Collect() const {
  // A scrape must never throw into the server's event loop (the daemon's
  // own); allocation failure is the only source.
  try {
    return BuildExposition(store_->All(), build_);
  } catch (...) {
    return {};
  }
}

}  // namespace fabric
