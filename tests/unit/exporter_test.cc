// Tests for exporters/: merging snapshots, self-metrics, build info, the
// failed-collector policy (serving over HTTP: http_server_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/metric_sink.h"
#include "exporters/exposition.h"

namespace fabric {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::shared_ptr<const Snapshot> Snap(const std::string& collector, bool success,
                                     std::vector<prometheus::MetricFamily> f,
                                     double last_success = 100) {
  auto s = std::make_shared<Snapshot>();
  s->collector = collector;
  s->success = success;
  s->families = std::move(f);
  s->skipped = 3;
  s->duration_seconds = 0.25;
  s->last_success_seconds = last_success;
  return s;
}

const BuildInfo kBuild{"9.9.9", "abc123"};

TEST(ExpositionTest, MergesFamiliesAcrossCollectorsSorted) {
  MetricSink a, b;
  a.Counter("fabric_z_total", "z", {{"device", "mlx5_1"}}, 1);
  a.Gauge("fabric_shared", "shared from a", {{"device", "mlx5_9"}}, 9);
  b.Gauge("fabric_shared", "shared from b", {{"device", "mlx5_0"}}, 0);
  b.Counter("fabric_a_total", "a", {{"device", "mlx5_0"}}, 2);
  auto text = ToText(BuildExposition(
      {Snap("one", true, a.Take()), Snap("two", true, b.Take())}, kBuild));

  // One family for the shared name, its samples sorted by labels.
  EXPECT_THAT(text, HasSubstr("# TYPE fabric_shared gauge\n"
                              "fabric_shared{device=\"mlx5_0\"} 0\n"
                              "fabric_shared{device=\"mlx5_9\"} 9\n"));
  // Families sorted by name, self-metrics included in the order.
  auto pos = [&](const std::string& s) { return text.find(s); };
  EXPECT_LT(pos("# TYPE fabric_a_total"), pos("# TYPE fabric_build_info"));
  EXPECT_LT(pos("# TYPE fabric_build_info"),
            pos("# TYPE fabric_collector_success"));
  EXPECT_LT(pos("# TYPE fabric_collector_success"),
            pos("# TYPE fabric_shared"));
  EXPECT_LT(pos("# TYPE fabric_shared"), pos("# TYPE fabric_z_total"));
  EXPECT_EQ(text.find("# TYPE fabric_shared"),
            text.rfind("# TYPE fabric_shared"));

  // Same input in the other order: byte-identical output.
  MetricSink a2, b2;
  a2.Counter("fabric_z_total", "z", {{"device", "mlx5_1"}}, 1);
  a2.Gauge("fabric_shared", "shared from a", {{"device", "mlx5_9"}}, 9);
  b2.Gauge("fabric_shared", "shared from b", {{"device", "mlx5_0"}}, 0);
  b2.Counter("fabric_a_total", "a", {{"device", "mlx5_0"}}, 2);
  auto text2 = ToText(BuildExposition(
      {Snap("one", true, a2.Take()), Snap("two", true, b2.Take())}, kBuild));
  EXPECT_EQ(text, text2);
}

TEST(ExpositionTest, SelfMetricsAndBuildInfo) {
  auto text = ToText(BuildExposition({Snap("ib_port", true, {})}, kBuild));
  EXPECT_THAT(text,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 1\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "fabric_collector_duration_seconds{collector=\"ib_port\"} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("fabric_collector_last_success_timestamp_seconds"
                              "{collector=\"ib_port\"} 100\n"));
  EXPECT_THAT(
      text,
      HasSubstr("fabric_collector_skipped_inputs{collector=\"ib_port\"} 3\n"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "fabric_build_info{revision=\"abc123\",version=\"9.9.9\"} 1\n"));
  // The HELP text says the values are cached from the background poll.
  EXPECT_THAT(text, HasSubstr("# HELP fabric_collector_last_success_timestamp_"
                              "seconds Unix time the collector last completed "
                              "a successful collection; cached"));
}

TEST(ExpositionTest, NoSnapshotsStillExportsBuildInfo) {
  auto families = BuildExposition({}, kBuild);
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "fabric_build_info");
}

TEST(ExpositionTest, FailedCollectorShowsZeroAndOnlyItsOwnSamples) {
  // Policy: a failed snapshot carries no samples from earlier collections
  // (the poller publishes an empty one on timeout), so its old series go
  // stale in Prometheus, while other collectors are unaffected.
  MetricSink good;
  good.Counter("fabric_port_receive_bytes_total", "rx", {{"device", "a"}}, 5);
  auto text = ToText(BuildExposition(
      {Snap("ib_port", true, good.Take()), Snap("roce", false, {}, 0)},
      kBuild));
  EXPECT_THAT(text,
              HasSubstr("fabric_collector_success{collector=\"roce\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("fabric_collector_success{collector=\"ib_port\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fabric_collector_last_success_timestamp_seconds"
                              "{collector=\"roce\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("fabric_port_receive_bytes_total{device=\"a\"} 5"));
}

TEST(ExpositionTest, TypeClashAcrossCollectorsKeepsFirstValidFamily) {
  MetricSink a, b;
  a.Gauge("fabric_thing", "gauge", {{"device", "x"}}, 1);
  b.Counter("fabric_thing", "counter", {{"device", "y"}}, 2);
  auto families = BuildExposition(
      {Snap("a", true, a.Take()), Snap("b", true, b.Take())}, kBuild);
  auto it = std::find_if(families.begin(), families.end(), [](const auto& f) {
    return f.name == "fabric_thing";
  });
  ASSERT_NE(it, families.end());
  EXPECT_EQ(it->type, prometheus::MetricType::Gauge);
  EXPECT_EQ(it->metric.size(), 1u);
}

TEST(ExpositionTest, SameSeriesFromTwoCollectorsIsExportedOnceFirstByName) {
  // As the fabric sweep and the opensm collector both export a switch
  // port's counters: "fabric" sorts first and its value stays.
  MetricSink sweep, osm;
  const Labels port = {{"switch_guid", "0x1"}, {"port", "7"}};
  sweep.Counter("fabric_switch_port_transmit_wait_total", "w", port, 100);
  osm.Counter("fabric_switch_port_transmit_wait_total", "w", port, 40);
  osm.Counter("fabric_switch_port_transmit_wait_total", "w",
              {{"switch_guid", "0x1"}, {"port", "8"}}, 5);
  auto text = ToText(BuildExposition(
      {Snap("fabric", true, sweep.Take()), Snap("opensm", true, osm.Take())},
      kBuild));
  EXPECT_THAT(text, HasSubstr("fabric_switch_port_transmit_wait_total{port="
                              "\"7\",switch_guid=\"0x1\"} 100\n"));
  EXPECT_THAT(text, Not(HasSubstr("switch_guid=\"0x1\"} 40\n")));
  EXPECT_THAT(text, HasSubstr("fabric_switch_port_transmit_wait_total{port="
                              "\"8\",switch_guid=\"0x1\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("fabric_collector_duplicate_samples{collector="
                              "\"opensm\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fabric_collector_duplicate_samples{collector="
                              "\"fabric\"} 0\n"));
}

TEST(ExpositionTest, CollectorCannotOverrideSelfMetrics) {
  MetricSink a;
  a.Gauge("fabric_build_info", "fake", {{"version", "evil"}}, 1);
  auto text = ToText(BuildExposition({Snap("a", true, a.Take())}, kBuild));
  EXPECT_THAT(text, Not(HasSubstr("evil")));
}

}  // namespace
}  // namespace fabric
