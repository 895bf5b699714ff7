// The series budget's filter (core/counter_filter.h): which series a
// collector's include/exclude keeps, the globs the config accepts (a bad one
// is an error naming the key and line, one that matches nothing the
// collector knows a warning), the sink dropping what the filter refuses,
// and the known-name lists (collectors/series_names.h), whose families are
// docs/metrics.md's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "collectors/registry.h"
#include "collectors/series_names.h"
#include "config/config.h"
#include "core/counter_filter.h"
#include "core/metric_names.h"
#include "core/metric_sink.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<CollectorKeys> Specs() {
  std::vector<CollectorKeys> out;
  for (const auto& spec : CollectorSpecs()) {
    if (spec.name == "ib_port" || spec.name == "hw_counters" ||
        spec.name == "congestion") {
      out.push_back(spec);
    }
  }
  return out;
}

std::optional<Config> Parse(std::string_view yaml, std::string* error) {
  return ParseConfig(yaml, Specs(), error);
}

TEST(CounterFilterTest, EmptyKeepsEverything) {
  CounterFilter filter;
  EXPECT_TRUE(filter.empty());
  EXPECT_TRUE(filter.Allows("fabric_port_state", ""));
  EXPECT_TRUE(filter.Allows("fabric_hw_counters_total", "out_of_buffer"));
}

TEST(CounterFilterTest, PatternsMatchFamilyOrCounterName) {
  CounterFilter filter({}, {"fabric_port_multicast_*", "rx_*_requests"});
  EXPECT_FALSE(
      filter.Allows("fabric_port_multicast_receive_packets_total", ""));
  EXPECT_TRUE(filter.Allows("fabric_port_unicast_receive_packets_total", ""));
  EXPECT_FALSE(filter.Allows("fabric_hw_counters_total", "rx_write_requests"));
  EXPECT_TRUE(filter.Allows("fabric_hw_counters_total", "out_of_buffer"));
}

TEST(CounterFilterTest, IncludeKeepsOnlyMatchesAndExcludeWins) {
  CounterFilter filter(
      {"fabric_port_errors_total", "symbol_error", "fabric_hw_counters_total"},
      {"link_downed", "rx_*"});
  EXPECT_TRUE(filter.Allows("fabric_port_errors_total", "port_rcv_errors"));
  EXPECT_FALSE(filter.Allows("fabric_port_errors_total", "link_downed"));
  // A counter name included keeps that counter in any family carrying it.
  EXPECT_TRUE(filter.Allows("fabric_port_counters_saturated", "symbol_error"));
  EXPECT_FALSE(filter.Allows("fabric_port_counters_saturated", "VL15_dropped"));
  EXPECT_FALSE(filter.Allows("fabric_port_state", ""));
  EXPECT_FALSE(filter.Allows("fabric_hw_counters_total", "rx_write_requests"));
  EXPECT_TRUE(filter.Allows("fabric_hw_counters_total", "out_of_buffer"));
}

TEST(CounterFilterTest, GlobsAreFnmatchWithoutRegexes) {
  EXPECT_TRUE(GlobMatches("rx_prio[0-7]_pause", "rx_prio3_pause"));
  EXPECT_FALSE(GlobMatches("rx_prio[!3]_pause", "rx_prio3_pause"));
  EXPECT_TRUE(GlobMatches("port_?mit_*", "port_xmit_wait"));
  EXPECT_FALSE(GlobMatches("port_?xmit_*", "port_xmit_wait"));
  EXPECT_TRUE(GlobMatches("port_xmit_????", "port_xmit_wait"));
  // A regex's ".*" is a literal dot, then anything.
  EXPECT_FALSE(GlobMatches("rx_.*", "rx_write_requests"));
  const std::string long_name(300, 'a');
  EXPECT_TRUE(GlobMatches("a*", long_name));
  EXPECT_FALSE(GlobMatches("b*", long_name));
}

TEST(CounterFilterTest, ValidGlobs) {
  std::string why;
  for (const char* ok : {"fabric_port_*", "rx_prio[0-7]_pause", "[!a]b?",
                         "fabric:x", "a.b-c", "[]a]"}) {
    EXPECT_TRUE(ValidCounterGlob(ok, &why)) << ok << ": " << why;
  }
  EXPECT_FALSE(ValidCounterGlob("", &why));
  EXPECT_THAT(why, HasSubstr("empty"));
  EXPECT_FALSE(ValidCounterGlob("rx_[0-7", &why));
  EXPECT_THAT(why, HasSubstr("unclosed '['"));
  EXPECT_FALSE(ValidCounterGlob("rx_(a|b)", &why));
  EXPECT_THAT(why, HasSubstr("'('"));
  EXPECT_FALSE(ValidCounterGlob("a b", &why));
  EXPECT_FALSE(ValidCounterGlob("[a b]", &why));
  EXPECT_THAT(why, HasSubstr("bracket"));
}

TEST(CounterGateTest, RemembersTheFilterDecisions) {
  CounterGate gate(CounterFilter({}, {"fabric_port_state", "rx_*"}));
  for (int round = 0; round < 2; ++round) {
    EXPECT_FALSE(gate.Allows("fabric_port_state", ""));
    EXPECT_TRUE(gate.Allows("fabric_port_physical_state", ""));
    EXPECT_FALSE(gate.Allows("fabric_hw_counters_total", "rx_write_requests"));
    EXPECT_TRUE(gate.Allows("fabric_hw_counters_total", "out_of_buffer"));
    EXPECT_FALSE(gate.Allows("fabric_port_state", ""));
  }
}

// What the sink keeps: families and samples by name, counter and error
// labels alike, for every way of adding a sample.
TEST(CounterGateTest, SinkDropsWhatTheGateRefuses) {
  CounterGate gate(CounterFilter(
      {}, {"fabric_port_multicast_*", "rx_write_requests", "link_downed"}));
  MetricSink sink;
  sink.Gate(&gate);
  sink.Counter("fabric_port_multicast_transmit_packets_total", "h",
               LabelRefs{{"device", "mlx5_0"}, {"port", "1"}}, 1);
  sink.Counter("fabric_hw_counters_total", "h",
               LabelRefs{{"counter", "rx_write_requests"}, {"device", "d"}}, 1);
  sink.Counter("fabric_hw_counters_total", "h",
               Labels{{"counter", "out_of_buffer"}, {"device", "d"}}, 2);
  Labels error{{"device", "d"}, {"error", "link_downed"}};
  sink.Counter("fabric_port_errors_total", "h", std::move(error), 3);
  sink.Counter("fabric_port_errors_total", "h",
               Labels{{"device", "d"}, {"error", "symbol_error"}}, 4);
  sink.Gauge("fabric_port_state", "h", LabelRefs{{"device", "d"}}, 4);
  auto families = sink.Take();
  std::map<std::string, std::size_t> kept;
  for (const auto& f : families) kept[f.name] = f.metric.size();
  EXPECT_EQ(kept,
            (std::map<std::string, std::size_t>{{"fabric_hw_counters_total", 1},
                                                {"fabric_port_errors_total", 1},
                                                {"fabric_port_state", 1}}));
  EXPECT_EQ(sink.skipped(), 0u);
}

TEST(SeriesConfigTest, IncludeAndExcludeAreParsedPerCollector) {
  std::string error;
  auto config = Parse(R"(collectors:
  ib_port:
    include: ["fabric_port_*", symbol_error]
    exclude: [fabric_port_multicast_*]
  hw_counters:
    exclude: ["rx_*_requests"]
)",
                      &error);
  ASSERT_TRUE(config) << error;
  const CounterFilter& ib = config->Collector("ib_port").series;
  EXPECT_THAT(ib.include(), ElementsAre("fabric_port_*", "symbol_error"));
  EXPECT_THAT(ib.exclude(), ElementsAre("fabric_port_multicast_*"));
  EXPECT_THAT(config->Collector("hw_counters").series.exclude(),
              ElementsAre("rx_*_requests"));
  EXPECT_THAT(config->warnings, IsEmpty());
  // A change of the lists is a change of the collector's settings (a
  // reload rebuilds it).
  auto other =
      Parse("collectors:\n  hw_counters:\n    exclude: [rx_*]\n", &error);
  ASSERT_TRUE(other) << error;
  EXPECT_FALSE(config->Collector("hw_counters") ==
               other->Collector("hw_counters"));
}

TEST(SeriesConfigTest, BadGlobIsAnErrorNamingKeyAndLine) {
  std::string error;
  EXPECT_FALSE(Parse(R"(collectors:
  hw_counters:
    exclude:
      - out_of_buffer
      - "rx_[0-7"
)",
                     &error));
  EXPECT_THAT(error, HasSubstr("config error: collectors.hw_counters.exclude "
                               "(line 5): \"rx_[0-7\" is not a valid glob: "
                               "has an unclosed '['"));
  EXPECT_FALSE(Parse(
      "collectors:\n  ib_port:\n    include: fabric_port_state\n", &error));
  EXPECT_THAT(error, HasSubstr("collectors.ib_port.include (line 3): "
                               "expected a list"));
}

TEST(SeriesConfigTest, OnlyRawCounterCollectorsTakeTheKeys) {
  std::string error;
  EXPECT_FALSE(Parse("collectors:\n  congestion:\n    exclude: [a]\n", &error));
  EXPECT_THAT(error, HasSubstr("collectors.congestion.exclude (line 3): "
                               "unknown key"));
  EXPECT_FALSE(Parse("collectors:\n  ib_port:\n    excludes: [a]\n", &error));
  EXPECT_THAT(error, HasSubstr("include, exclude"));
}

TEST(SeriesConfigTest, PatternMatchingNothingKnownIsAWarning) {
  std::string error;
  auto config = Parse(R"(collectors:
  ib_port:
    exclude:
      - fabric_port_multicast_*
      - fabric_port_multicats_*
  hw_counters:
    include: ["rx_.*", out_of_buffer]
)",
                      &error);
  ASSERT_TRUE(config) << error;
  ASSERT_EQ(config->warnings.size(), 2u);
  EXPECT_THAT(config->warnings[0],
              HasSubstr("config warning: collectors.ib_port.exclude (line 5): "
                        "\"fabric_port_multicats_*\" matches no metric or "
                        "counter name this collector knows"));
  EXPECT_THAT(config->warnings[1],
              HasSubstr("collectors.hw_counters.include (line 7)"));
  EXPECT_THAT(config->warnings[1], HasSubstr("globs, not regexes"));
}

// The families come from docs/metrics.md's section (core/metric_names.h);
// the counter names follow them.
TEST(KnownSeriesTest, FamiliesAreTheMetricsDocsSection) {
  for (const char* collector : {"ib_port", "hw_counters", "roce", "fabric"}) {
    const auto known = KnownSeries(collector);
    const auto documented = DocumentedFamilies(collector);
    ASSERT_FALSE(documented.empty()) << collector;
    ASSERT_GT(known.size(), documented.size()) << collector;
    EXPECT_TRUE(std::equal(documented.begin(), documented.end(), known.begin()))
        << collector;
  }
  EXPECT_THAT(KnownSeries("ib_port"), ::testing::Contains("symbol_error"));
  EXPECT_THAT(KnownSeries("congestion"), IsEmpty());
}

TEST(KnownSeriesTest, RegistryHandsThemToTheConfigParser) {
  for (const auto& spec : CollectorSpecs()) {
    EXPECT_EQ(spec.series, KnownSeries(spec.name)) << spec.name;
  }
}

}  // namespace
}  // namespace fabric
