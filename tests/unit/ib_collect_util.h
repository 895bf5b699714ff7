// Test helpers for the ib_port / hw_counters collector tests: run a
// collector once on a tree and look samples up by name and labels.
// Thread-safety: none needed (test-only, single thread).
#pragma once

#include <prometheus/metric_family.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "core/metric_sink.h"
#include "tests/support/paths.h"

namespace fabric::testing {

struct Collected {
  bool ok = false;
  std::uint64_t skipped = 0;
  std::vector<std::string> reasons;
  std::vector<prometheus::MetricFamily> families;

  const prometheus::MetricFamily* Family(const std::string& name) const {
    for (const auto& f : families) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }

  // Samples of `name` whose labels include all of `want`.
  std::vector<const prometheus::ClientMetric*> Find(
      const std::string& name,
      const std::map<std::string, std::string>& want) const {
    std::vector<const prometheus::ClientMetric*> out;
    const auto* family = Family(name);
    if (!family) return out;
    for (const auto& m : family->metric) {
      std::size_t matched = 0;
      for (const auto& label : m.label) {
        auto it = want.find(label.name);
        if (it != want.end() && it->second == label.value) ++matched;
      }
      if (matched == want.size()) out.push_back(&m);
    }
    return out;
  }

  // Value of the single sample matching; nullopt if none (fails on >1).
  std::optional<double> Value(
      const std::string& name,
      const std::map<std::string, std::string>& want) const {
    auto found = Find(name, want);
    if (found.size() != 1) return std::nullopt;
    const auto* family = Family(name);
    return family->type == prometheus::MetricType::Counter
               ? found[0]->counter.value
               : found[0]->gauge.value;
  }

  std::string Label(const std::string& name,
                    const std::map<std::string, std::string>& want,
                    const std::string& label) const {
    auto found = Find(name, want);
    if (found.size() != 1) return "<" + std::to_string(found.size()) + ">";
    for (const auto& l : found[0]->label) {
      if (l.name == label) return l.value;
    }
    return "<absent>";
  }
};

inline Collected Run(Collector& collector) {
  MetricSink sink;
  Collected out;
  out.ok = collector.Collect(sink);
  out.skipped = sink.skipped();
  out.reasons = sink.skip_reasons();
  out.families = sink.Take();
  return out;
}

using Factory = std::unique_ptr<Collector> (*)(const CollectorEnv&,
                                               const CollectorConfig&);

inline Collected RunOn(Factory make, std::shared_ptr<const Sysfs> sysfs,
                       DeviceFilter filter = {}) {
  CollectorEnv env;
  env.sysfs = std::move(sysfs);
  CollectorConfig config;
  config.devices = std::move(filter);
  auto collector = make(env, config);
  return Run(*collector);
}

inline Collected RunOnTree(Factory make, const std::string& fixture) {
  return RunOn(make, MakeRealSysfs(Fixture(fixture)));
}

}  // namespace fabric::testing
