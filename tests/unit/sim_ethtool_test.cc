// The simulator's ethtool view: mlx5 statistic names with the model's
// values, read by the real roce collector through its EthtoolSource seam
// from a rendered simulated host.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "collectors/roce.h"
#include "core/metric_sink.h"
#include "simulator/ethtool.h"
#include "simulator/model.h"
#include "simulator/render.h"
#include "sources/sysfs.h"
#include "tests/support/temp_dir.h"

namespace fabric::sim {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

std::uint64_t StatOf(const EthtoolResult& r, const std::string& name) {
  for (size_t i = 0; i < r->names.size(); ++i) {
    if (r->names[i] == name) return r->values[i];
  }
  ADD_FAILURE() << "no statistic " << name;
  return 0;
}

double Sample(const std::vector<prometheus::MetricFamily>& families,
              const std::string& name, const Labels& want) {
  for (const auto& f : families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      size_t matched = 0;
      for (const auto& l : m.label) {
        for (const auto& [k, v] : want) {
          if (l.name == k && l.value == v) ++matched;
        }
      }
      if (matched == want.size()) return m.counter.value;
    }
  }
  return -1;
}

class SimEthtool : public ::testing::Test {
 protected:
  void SetUp() override {
    SimConfig config;
    config.hosts = 4;
    config.timeline = SingleScenario(Scenario::kPfcStorm);
    cluster_ = std::make_unique<Cluster>(config);
    while (cluster_->now() < seconds(3)) cluster_->Step();
    ASSERT_FALSE(tmp_.path().empty());
    root_ = tmp_.path();
  }
  std::vector<prometheus::MetricFamily> CollectRoce(int host) {
    const fs::path dir = root_ / std::to_string(host);
    SysfsRenderer r(dir, host);
    std::string error;
    EXPECT_TRUE(r.Render(*cluster_, &error)) << error;
    CollectorEnv env;
    env.sysfs = MakeRealSysfs(dir.string());
    auto collector = MakeRoceCollector(
        env, RoceOptions{}, MakeSimEthtoolSource(*cluster_, host), nullptr);
    MetricSink sink;
    EXPECT_TRUE(collector->Collect(sink));
    for (const auto& reason : sink.skip_reasons()) ADD_FAILURE() << reason;
    return sink.Take();
  }
  std::unique_ptr<Cluster> cluster_;
  testing::TempDir tmp_{"simeth"};
  fs::path root_;
};

TEST_F(SimEthtool, Mlx5NamesWithTheModelsValues) {
  const EthtoolResult storming = SimEthtoolStats(*cluster_, 0, "bond0");
  ASSERT_TRUE(storming.ok());
  EXPECT_EQ(storming->driver, "mlx5_core");
  EXPECT_EQ(storming->names.size(), storming->values.size());
  EXPECT_EQ(StatOf(storming, "tx_prio3_pause"), 30000u);
  EXPECT_EQ(StatOf(storming, "tx_prio3_pause_duration"), 3'000'000u);
  EXPECT_EQ(StatOf(storming, "tx_pause_storm_warning_events"), 1u);
  EXPECT_EQ(StatOf(storming, "tx_pause_storm_error_events"), 0u);
  EXPECT_EQ(StatOf(storming, "rx_prio0_pause"), 0u);
  const EthtoolResult sender = SimEthtoolStats(*cluster_, 3, "bond0");
  ASSERT_TRUE(sender.ok());
  const Port* p = cluster_->FindPort(3, "mlx5_bond_0");
  EXPECT_EQ(StatOf(sender, "rx_prio3_pause"), p->ethtool.at("rx_prio3_pause"));
  EXPECT_GT(StatOf(sender, "rx_prio3_pause"), 0u);
  EXPECT_EQ(StatOf(sender, "tx_bytes"), p->tx_bytes);
  EXPECT_EQ(StatOf(sender, "tx_prio3_bytes"), p->tx_bytes);

  EXPECT_EQ(SimEthtoolStats(*cluster_, 0, "eth0").error(),
            std::errc::no_such_device);
  EXPECT_EQ(SimEthtoolStats(*cluster_, 9, "bond0").error(),
            std::errc::no_such_device);
}

TEST_F(SimEthtool, RoceCollectorReadsThePfcStorm) {
  const auto storming = CollectRoce(0);
  const auto sender = CollectRoce(3);
  const Labels prio3 = {
      {"device", "mlx5_bond_0"}, {"netdev", "bond0"}, {"priority", "3"}};
  auto with = [](Labels l, const char* k, const char* v) {
    l.emplace_back(k, v);
    return l;
  };
  EXPECT_EQ(Sample(storming, "fabric_pfc_pause_frames_total",
                   with(prio3, "direction", "tx")),
            30000);
  EXPECT_EQ(
      Sample(sender, "fabric_pfc_pause_frames_total",
             with(prio3, "direction", "rx")),
      static_cast<double>(
          cluster_->FindPort(3, "mlx5_bond_0")->ethtool.at("rx_prio3_pause")));
  EXPECT_NEAR(Sample(storming, "fabric_pfc_pause_duration_seconds_total",
                     with(prio3, "direction", "tx")),
              3.0, 1e-9);
  EXPECT_EQ(Sample(storming, "fabric_pfc_pause_storm_events_total",
                   {{"netdev", "bond0"}, {"level", "warning"}}),
            1);
}

}  // namespace
}  // namespace fabric::sim
