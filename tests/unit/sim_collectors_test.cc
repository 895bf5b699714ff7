// Realism: the simulated H100 host parses with the same collectors
// (ib_port, hw_counters, via the registry, in-process) to the same metric
// families and label sets as the recorded H100 tree, and the values they
// report are the model's.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <set>

#include "collectors/registry.h"
#include "core/metric_sink.h"
#include "simulator/model.h"
#include "simulator/render.h"
#include "sources/sysfs.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric::sim {
namespace {

namespace fs = std::filesystem;

// Labels whose values must match between the trees; the rest (GUIDs,
// netdev, ...) only need to be present.
const std::set<std::string> kCompareValues = {
    "device", "port", "counter", "error", "link_layer", "hca_type", "fw_ver"};

// Families that come from the attributes real kernels expose but the H100
// capture lacks (docs/simulator.md, "The rendered tree").
const std::set<std::string> kExtraFamilies = {
    "fabric_port_capability_mask",
    "fabric_port_lid",
    "fabric_port_sm_lid",
    "fabric_port_sm_sl",
    "fabric_roce_cnp_handled_total",
    "fabric_roce_cnp_ignored_total",
    "fabric_roce_cnp_sent_total",
    "fabric_roce_ecn_marked_packets_total"};

// family name -> set of label sets (names, plus values of kCompareValues).
using Shape = std::map<std::string, std::set<std::string>>;

struct Result {
  bool ok = false;
  std::uint64_t skipped = 0;
  std::vector<prometheus::MetricFamily> families;
};

Result Collect(const std::string& name, const std::string& root) {
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(root);
  auto collector = MakeCollector(name, env);
  Result r;
  if (!collector) return r;
  MetricSink sink;
  r.ok = collector->Collect(sink);
  r.skipped = sink.skipped();
  r.families = sink.Take();
  return r;
}

Shape ShapeOf(const std::vector<prometheus::MetricFamily>& families) {
  Shape shape;
  for (const auto& f : families) {
    for (const auto& m : f.metric) {
      std::string key;
      for (const auto& l : m.label) {
        key += l.name;
        if (kCompareValues.count(l.name)) key += "=" + l.value;
        key += ",";
      }
      shape[f.name].insert(key);
    }
  }
  return shape;
}

double Value(const std::vector<prometheus::MetricFamily>& families,
             const std::string& name, const std::string& device,
             const std::string& extra_label = "",
             const std::string& extra_value = "") {
  for (const auto& f : families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      bool dev = false, extra = extra_label.empty();
      for (const auto& l : m.label) {
        if (l.name == "device" && l.value == device) dev = true;
        if (l.name == extra_label && l.value == extra_value) extra = true;
      }
      if (dev && extra) {
        return f.type == prometheus::MetricType::Counter ? m.counter.value
                                                         : m.gauge.value;
      }
    }
  }
  return -1;
}

class SimCollectors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    root_ = tmp_.path();
    SimConfig config;
    config.hosts = 2;
    config.timeline = SingleScenario(Scenario::kCongestionHotspot);
    cluster_ = std::make_unique<Cluster>(config);
    for (int i = 0; i < 30; ++i) cluster_->Step();
    SysfsRenderer r(root_, 0);
    std::string error;
    ASSERT_TRUE(r.Render(*cluster_, &error)) << error;
  }
  testing::TempDir tmp_{"simcoll"};
  fs::path root_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(SimCollectors, SameFamiliesAndLabelSetsAsTheRecordedH100) {
  const std::string real = testing::Fixture("real/sysfs-gpud-h100");
  for (const char* name : {"ib_port", "hw_counters"}) {
    const Result want = Collect(name, real);
    const Result got = Collect(name, root_.string());
    ASSERT_FALSE(want.families.empty() && !want.ok)
        << "collector " << name << " is not registered";
    EXPECT_TRUE(got.ok) << name;
    EXPECT_EQ(got.skipped, 0u) << name;
    const Shape want_shape = ShapeOf(want.families);
    const Shape got_shape = ShapeOf(got.families);
    // Every family and label set of the real tree is there, identical.
    for (const auto& [family, sets] : want_shape) {
      auto it = got_shape.find(family);
      ASSERT_NE(it, got_shape.end()) << name << ": missing " << family;
      for (const auto& s : sets) {
        EXPECT_TRUE(it->second.count(s))
            << name << ": " << family << " lacks {" << s << "}";
      }
    }
    // Extra series only where the simulated tree has the extra attributes
    // real kernels expose (lid, sm_lid, ... and the RoCE congestion
    // counters).
    for (const auto& [family, sets] : got_shape) {
      EXPECT_TRUE(want_shape.count(family) || kExtraFamilies.count(family))
          << name << ": unexpected family " << family;
    }
  }
}

TEST_F(SimCollectors, ReportTheModelsValues) {
  const Result ib = Collect("ib_port", root_.string());
  ASSERT_FALSE(ib.families.empty()) << "ib_port exported nothing";
  const Port* victim = cluster_->FindPort(0, "mlx5_0");
  EXPECT_EQ(Value(ib.families, "fabric_port_transmit_bytes_total", "mlx5_0"),
            static_cast<double>(victim->tx_bytes));
  EXPECT_EQ(Value(ib.families, "fabric_port_receive_bytes_total", "mlx5_0"),
            static_cast<double>(victim->rx_bytes));
  EXPECT_EQ(Value(ib.families, "fabric_port_transmit_wait_total", "mlx5_0"),
            static_cast<double>(victim->counters.Get(Ctr::kPortXmitWait)));
  EXPECT_GT(Value(ib.families, "fabric_port_transmit_wait_total", "mlx5_0"), 0);
  EXPECT_EQ(Value(ib.families, "fabric_port_transmit_wait_total", "mlx5_1"), 0);
  EXPECT_EQ(Value(ib.families, "fabric_port_rate_bytes_per_second", "mlx5_0"),
            50e9);
  EXPECT_EQ(
      Value(ib.families, "fabric_port_rate_bytes_per_second", "mlx5_bond_0"),
      25e9);
  EXPECT_EQ(Value(ib.families, "fabric_port_state", "mlx5_0"), 4);
  EXPECT_EQ(Value(ib.families, "fabric_port_sm_lid", "mlx5_0"), 1);
}

}  // namespace
}  // namespace fabric::sim
