// Looking up one sample in the families a collector returned (MetricSink::
// Take), for the collector tests.
//
// Thread-safety: pure functions; failures are reported through GoogleTest.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/metric_sink.h"

namespace fabric::testing {

using Families = std::vector<prometheus::MetricFamily>;

// The value of the sample of `name` whose labels include all of `want` (in
// any order), or nullopt. Fails the test if more than one sample matches.
inline std::optional<double> SampleValue(const Families& fams,
                                         const std::string& name,
                                         const Labels& want) {
  std::optional<double> found;
  for (const auto& f : fams) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      bool all = true;
      for (const auto& [k, v] : want) {
        bool hit = false;
        for (const auto& l : m.label) hit |= l.name == k && l.value == v;
        all &= hit;
      }
      if (!all) continue;
      EXPECT_FALSE(found) << name << " matched twice";
      found = f.type == prometheus::MetricType::Counter ? m.counter.value
                                                        : m.gauge.value;
    }
  }
  return found;
}

}  // namespace fabric::testing
