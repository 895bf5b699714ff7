// Tests for daemon/collection.h: building collectors from a config and
// deciding which collectors a reload may keep running.
#include <gtest/gtest.h>

#include <map>

#include "collectors/registry.h"
#include "daemon/collection.h"

namespace fabric {
namespace {

Config Parse(const std::string& yaml) {
  std::string error;
  auto config = ParseConfig(yaml, AllCollectorKeys(), &error);
  EXPECT_TRUE(config) << error;
  return config.value_or(Config{});
}

TEST(CollectionTest, BuildsEnabledCollectorsInRegistryOrder) {
  auto sysfs = std::shared_ptr<const Sysfs>(MakeRealSysfs("/nonexistent"));
  auto all = BuildCollectors(Parse(""), sysfs);
  std::vector<std::string> names;
  for (const auto& c : all) names.push_back(c.name);
  // Every collector that is on by default (fabric is not), in registry order.
  std::vector<std::string> on_by_default;
  for (const auto& spec : CollectorSpecs()) {
    if (spec.enabled) on_by_default.push_back(spec.name);
  }
  EXPECT_EQ(names, on_by_default);

  auto fewer = BuildCollectors(
      Parse("collectors:\n  ib_port:\n    enabled: false\n"), sysfs);
  for (const auto& c : fewer) EXPECT_NE(c.name, "ib_port");
  EXPECT_EQ(fewer.size(), all.size() - 1);

  auto only = BuildCollectors(Parse(""), sysfs, [](const std::string& name) {
    return name == "hw_counters";
  });
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].name, "hw_counters");
}

// collectors.congestion.{window,xmit_wait_tick_ns} reach the collector it
// builds (which exports both as gauges).
TEST(CollectionTest, CongestionSettingsReachTheCollector) {
  auto sysfs = std::shared_ptr<const Sysfs>(MakeRealSysfs("/nonexistent"));
  auto built = BuildCollectors(
      Parse("collectors:\n  congestion:\n    window: 30s\n"
            "    xmit_wait_tick_ns: 32\n"),
      sysfs, [](const std::string& name) { return name == "congestion"; });
  ASSERT_EQ(built.size(), 1u);
  MetricSink sink;
  ASSERT_TRUE(built[0].collector->Collect(sink));
  std::map<std::string, double> gauges;
  for (const auto& family : sink.Take()) {
    if (family.metric.size() == 1 && family.metric[0].label.empty()) {
      gauges[family.name] = family.metric[0].gauge.value;
    }
  }
  EXPECT_DOUBLE_EQ(gauges["fabric_congestion_window_seconds"], 30);
  EXPECT_DOUBLE_EQ(gauges["fabric_congestion_xmit_wait_tick_seconds"], 32e-9);
}

TEST(CollectionTest, ReloadKeepsOnlyUnchangedCollectors) {
  Config base = Parse("log_level: info\n");
  EXPECT_TRUE(
      SameCollectorSettings(base, Parse("log_level: debug\n"), "ib_port"));
  EXPECT_TRUE(SameCollectorSettings(
      base, Parse("listen_address: \"127.0.0.1:1\"\n"), "ib_port"));
  Config slower = Parse("collectors:\n  ib_port:\n    interval: 2s\n");
  EXPECT_FALSE(SameCollectorSettings(base, slower, "ib_port"));
  EXPECT_TRUE(SameCollectorSettings(base, slower, "hw_counters"));
  EXPECT_FALSE(SameCollectorSettings(base, Parse("devices:\n  exclude: [x]\n"),
                                     "hw_counters"));
  // Other series lists: rebuilt, with a new gate.
  EXPECT_FALSE(SameCollectorSettings(
      base, Parse("collectors:\n  hw_counters:\n    exclude: [rx_*]\n"),
      "hw_counters"));
  EXPECT_FALSE(
      SameCollectorSettings(base, Parse("sysfs_root: /other\n"), "ib_port"));
  // Another ethtool source: roce/congestion must be rebuilt.
  EXPECT_FALSE(
      SameCollectorSettings(base, Parse("ethtool_dir: /dumps\n"), "roce"));
  EXPECT_FALSE(SameCollectorSettings(
      base, Parse("collectors:\n  ib_port:\n    enabled: false\n"), "ib_port"));
  // Another tick or window: congestion is rebuilt with it.
  EXPECT_FALSE(SameCollectorSettings(
      base, Parse("collectors:\n  congestion:\n    xmit_wait_tick_ns: 32\n"),
      "congestion"));
  EXPECT_FALSE(SameCollectorSettings(
      base, Parse("collectors:\n  congestion:\n    window: 30s\n"),
      "congestion"));
  // A collector's own key: roce is rebuilt with new netdevs.
  EXPECT_FALSE(SameCollectorSettings(
      base, Parse("collectors:\n  roce:\n    netdevs: [eth9]\n"), "roce"));
  EXPECT_TRUE(SameCollectorSettings(
      Parse("collectors:\n  roce:\n    netdevs: [eth9]\n"),
      Parse("collectors:\n  roce:\n    netdevs: [eth9]\n"), "roce"));
}

TEST(CollectionTest, RunCollectionOnMissingTreeIsAnEmptySuccess) {
  // A host without /sys/class/infiniband: success with no samples.
  auto sysfs = std::shared_ptr<const Sysfs>(MakeRealSysfs("/nonexistent"));
  for (auto& c : BuildCollectors(Parse(""), sysfs, [](const std::string& n) {
         return n == "ib_port";
       })) {
    auto snap = RunCollection(c, 0);
    EXPECT_EQ(snap->collector, "ib_port");
    EXPECT_TRUE(snap->success);
    EXPECT_GT(snap->last_success_seconds, 0);
  }
}

// A collector's exception is caught once, by the runner: the collection
// fails and says why, nothing escapes.
TEST(CollectionTest, ThrowingCollectorIsAFailedCollection) {
  struct Throwing : Collector {
    std::string_view Name() const override { return "throwing"; }
    bool Collect(MetricSink& sink) override {
      sink.Gauge("fabric_partial", "test", {}, 1);
      throw std::runtime_error("boom");
    }
  };
  NamedCollector c{"throwing", {}, std::make_shared<Throwing>()};
  auto snap = RunCollection(c, 42);
  EXPECT_FALSE(snap->success);
  EXPECT_EQ(snap->skipped, 1u);
  EXPECT_EQ(snap->last_success_seconds, 42);
}

// RunCollection reuses the storage of the snapshot before the previous
// one, and only once nothing else (the store, a scrape) holds it.
TEST(CollectionTest, RecyclesOnlySnapshotsNobodyHolds) {
  struct Steady : Collector {
    std::string_view Name() const override { return "steady"; }
    bool Collect(MetricSink& sink) override {
      ++round;
      // Emitted in sorted order ("00".."49"), so the family's vector is
      // handed on as it is (a sort would move the samples into a new one).
      for (int i = 0; i < 50; ++i) {
        const std::string label = (i < 10 ? "0" : "") + std::to_string(i);
        sink.Counter("fabric_steady_total", "test", LabelRefs{{"i", label}},
                     round);
      }
      return true;
    }
    int round = 0;
  };
  NamedCollector c{"steady", {}, std::make_shared<Steady>()};
  auto storage = [](const Snapshot& s) { return s.families[0].metric.data(); };
  auto first = RunCollection(c, 0);
  const auto* first_storage = storage(*first);
  first.reset();  // like a store that published the next one
  auto second = RunCollection(c, 0);
  auto third = RunCollection(c, 0);
  EXPECT_EQ(storage(*third), first_storage);
  EXPECT_EQ(third->families[0].metric[49].counter.value, 3);

  // A scrape still holding the second: not recycled, and not changed.
  auto held = second;
  second.reset();
  auto fourth = RunCollection(c, 0);
  EXPECT_NE(storage(*fourth), storage(*held));
  EXPECT_EQ(held->families[0].metric.size(), 50u);
  EXPECT_EQ(held->families[0].metric[49].counter.value, 2);
  EXPECT_EQ(fourth->families[0].metric[49].counter.value, 4);
}

}  // namespace
}  // namespace fabric
