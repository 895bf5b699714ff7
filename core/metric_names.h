// The metric names fabricmon exports, as docs/metrics.md lists them: the one
// list (issue 41 item 6). The table is compiled in from the doc at build
// time (core/metric_names.cmake), so the collectors' known-series lists
// (collectors/series_names.cc) derive from it, and what cannot be derived —
// the names the collectors emit, the queries fabricmon-locate sends, the
// rules and dashboards — is tested against it.
//
// Thread-safety: immutable data; safe from any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fabric {

struct DocumentedMetric {
  std::string_view section;  // the doc's "## " heading: a collector's name
  std::string_view name;     // fabric_...
};

// Every table row of docs/metrics.md, in the doc's order.
std::span<const DocumentedMetric> DocumentedMetrics();

// The names listed under one section ("ib_port"); empty for an unknown one.
std::vector<std::string> DocumentedFamilies(std::string_view section);

// `name` is listed, or is a listed histogram's or summary's _bucket, _sum or
// _count series.
bool IsDocumentedMetric(std::string_view name);

}  // namespace fabric
