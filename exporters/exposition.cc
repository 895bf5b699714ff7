#include "exporters/exposition.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/metric_sink.h"

namespace fabric {

BuildInfo ThisBuild() { return {FABRICMON_VERSION, FABRICMON_REVISION}; }

namespace {

using LabelSet = std::vector<std::pair<std::string, std::string>>;

LabelSet Key(const prometheus::ClientMetric& metric) {
  LabelSet key;
  for (const auto& l : metric.label) key.emplace_back(l.name, l.value);
  std::sort(key.begin(), key.end());
  return key;
}

// Appends `from`'s samples to `into` but for the series `into` already has
// (two series with one name and label set are invalid exposition: the
// first collector's stays). Returns how many were left out. Runs only for
// a name two collectors share, e.g. the fabric sweep's and the opensm
// collector's switch port counters on one daemon.
std::uint64_t Append(prometheus::MetricFamily& into,
                     const prometheus::MetricFamily& from) {
  std::set<LabelSet> have;
  for (const auto& m : into.metric) have.insert(Key(m));
  std::uint64_t left_out = 0;
  for (const auto& m : from.metric) {
    if (have.insert(Key(m)).second) {
      into.metric.push_back(m);
    } else {
      ++left_out;
    }
  }
  return left_out;
}

}  // namespace

std::vector<prometheus::MetricFamily> BuildExposition(
    std::vector<std::shared_ptr<const Snapshot>> snapshots,
    const BuildInfo& build) {
  // In collector name order, whatever the caller's: it decides which of two
  // collectors keeps a series both export.
  std::erase(snapshots, nullptr);
  std::sort(
      snapshots.begin(), snapshots.end(),
      [](const auto& a, const auto& b) { return a->collector < b->collector; });
  MetricSink self;
  std::map<std::string, prometheus::MetricFamily> merged;
  std::set<std::string> appended;  // got samples from a second collector
  for (const auto& snap : snapshots) {
    const Labels labels = {{"collector", snap->collector}};
    std::uint64_t duplicates = 0;
    for (const auto& family : snap->families) {
      auto [it, inserted] = merged.try_emplace(family.name, family);
      if (inserted) continue;
      // Same name from two collectors: keep one family. A type clash would
      // make invalid exposition, so the later one's samples are dropped.
      if (it->second.type != family.type) continue;
      duplicates += Append(it->second, family);
      appended.insert(family.name);
    }
    self.Gauge("fabric_collector_duplicate_samples",
               "Samples of the collector's latest collection left out because "
               "a collector earlier in name order exported the same series.",
               labels, static_cast<double>(duplicates));
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
