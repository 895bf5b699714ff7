// The one list of metric names (core/metric_names.h): the table compiled in
// from docs/metrics.md holds every row of the doc, and the names that are
// written elsewhere by hand — the queries fabricmon-locate sends — are in it.
// (What the collectors emit: metrics_doc_test; the rules and dashboards:
// dashboards_static_test.)
#include "core/metric_names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "locate/counters.h"
#include "locate/pairs.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

// The doc's table rows, read here independently of the CMake step.
std::set<std::string> RowsOfTheDoc() {
  std::ifstream in(testing::SourceDir() + "/docs/metrics.md");
  std::set<std::string> out;
  const std::regex row(R"(^\| `(fabric_[a-zA-Z0-9_]+))");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, row)) out.insert(m[1]);
  }
  return out;
}

TEST(MetricNamesTest, TheCompiledTableIsTheDoc) {
  std::set<std::string> compiled;
  for (const auto& m : DocumentedMetrics()) compiled.emplace(m.name);
  const auto rows = RowsOfTheDoc();
  ASSERT_GT(rows.size(), 200u);
  EXPECT_EQ(compiled, rows);
  EXPECT_THAT(DocumentedFamilies("ib_port"),
              ::testing::Contains("fabric_port_transmit_wait_total"));
  EXPECT_THAT(DocumentedFamilies("probe"),
              ::testing::Contains("fabric_probe_lost_total"));
  EXPECT_TRUE(DocumentedFamilies("no such section").empty());
}

TEST(MetricNamesTest, HistogramSeriesCountAsTheirFamily) {
  EXPECT_TRUE(IsDocumentedMetric("fabric_probe_rtt_seconds"));
  EXPECT_TRUE(IsDocumentedMetric("fabric_probe_rtt_seconds_bucket"));
  EXPECT_TRUE(IsDocumentedMetric("fabric_probe_rtt_seconds_count"));
  EXPECT_FALSE(IsDocumentedMetric("fabric_probe_rtt"));
  EXPECT_FALSE(IsDocumentedMetric("fabric_no_such_metric_total"));
}

// Every fabric_* name in a query fabricmon-locate sends Prometheus.
TEST(MetricNamesTest, LocateQueriesOnlyDocumentedSeries) {
  std::vector<std::string> queries;
  for (const auto& q : locate::MakeCounterQueries("30m", {0x10})) {
    queries.push_back(q.promql);
  }
  const locate::PairQueries pairs = locate::MakePairQueries("30m", "1d");
  for (const std::string* q : {&pairs.sent, &pairs.lost, &pairs.rtt,
                               &pairs.baseline, &pairs.info, &pairs.path}) {
    queries.push_back(*q);
  }
  const std::regex name(R"(fabric_[a-zA-Z0-9_]+)");
  int names = 0;
  for (const auto& q : queries) {
    for (std::sregex_iterator it(q.begin(), q.end(), name), end; it != end;
         ++it) {
      ++names;
      EXPECT_TRUE(IsDocumentedMetric(it->str())) << it->str() << " in " << q;
    }
  }
  EXPECT_GE(names, 10);
}

}  // namespace
}  // namespace fabric
