// Tests for the fabric class rules (sources/rail_class.h) on
// facts and GID strings, and for the fabric_class collector on the recorded
// H100 tree and the derived plain-RoCE and mixed-host trees
// (tests/fixtures/synthetic/README.md).
#include "collectors/fabric_class.h"

#include <gtest/gtest.h>

#include <map>

#include "sources/rail_class.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

using LabelMap = std::map<std::string, std::string>;

// "device/port" -> labels of its fabric_port_fabric_class sample.
std::map<std::string, LabelMap> Classes(std::shared_ptr<const Sysfs> fs,
                                        FabricClassSettings settings = {},
                                        bool* ok = nullptr) {
  CollectorEnv env;
  env.sysfs = std::move(fs);
  CollectorConfig config;
  config.settings =
      std::make_shared<SettingsOf<FabricClassSettings>>(std::move(settings));
  auto c = MakeFabricClassCollector(env, config);
  MetricSink sink;
  const bool result = c->Collect(sink);
  if (ok) *ok = result;
  std::map<std::string, LabelMap> out;
  for (const auto& f : sink.Take()) {
    if (f.name != "fabric_port_fabric_class") continue;
    for (const auto& m : f.metric) {
      EXPECT_EQ(m.gauge.value, 1);
      LabelMap labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      out[labels["device"] + "/" + labels["port"]] = labels;
    }
  }
  return out;
}

TEST(FabricClassRulesTest, RuleByRule) {
  RailFacts f;
  f.link_layer = "InfiniBand";
  EXPECT_EQ(ClassifyRail(f)->fabric_class, "infiniband");
  EXPECT_EQ(ClassifyRail(f)->reason, "link_layer_infiniband");
  f.link_layer = "Ethernet";
  EXPECT_EQ(ClassifyRail(f)->reason, "nic_unknown");
  f.model = "ConnectX-6 Dx";
  f.cc = CcState::kOn;
  f.adaptive_retransmission = true;
  EXPECT_EQ(ClassifyRail(f)->fabric_class, "roce");
  EXPECT_EQ(ClassifyRail(f)->reason, "nic_not_supernic");
  f.model = "BlueField-3";
  f.adaptive_retransmission = false;
  EXPECT_EQ(ClassifyRail(f)->reason, "no_adaptive_retransmission");
  f.adaptive_retransmission = true;
  f.cc = CcState::kOff;
  EXPECT_EQ(ClassifyRail(f)->reason, "cc_off");
  f.cc = CcState::kUnknown;
  EXPECT_EQ(ClassifyRail(f)->reason, "cc_not_visible");
  f.cc = CcState::kOn;
  EXPECT_EQ(ClassifyRail(f)->fabric_class, "roce_spectrum_x");
  f.model = "ConnectX-8";
  EXPECT_EQ(ClassifyRail(f)->fabric_class, "roce_spectrum_x");
  f.link_layer = "";  // unreadable or an unknown link layer: no class
  EXPECT_FALSE(ClassifyRail(f));
}

TEST(FabricClassRulesTest, GidNetworks) {
  EXPECT_EQ(IbSubnetPrefix("fe80:0000:0000:0000:a088:c203:0042:0a10\n"),
            "fe80:0000:0000:0000");
  EXPECT_FALSE(IbSubnetPrefix("fe80::1"));
  EXPECT_FALSE(IbSubnetPrefix(""));
  EXPECT_FALSE(IbSubnetPrefix("fe80:0000:0000:0000:a088:c203:0042:0a1g"));
  EXPECT_EQ(RoceNetwork("0000:0000:0000:0000:0000:ffff:0a1e:0107", 24),
            "10.30.1.0/24");
  EXPECT_EQ(RoceNetwork("0000:0000:0000:0000:0000:ffff:0a1e:0107", 16),
            "10.30.0.0/16");
  EXPECT_EQ(RoceNetwork("0000:0000:0000:0000:0000:ffff:0a1e:0107", 32),
            "10.30.1.7/32");
  EXPECT_EQ(RoceNetwork("0000:0000:0000:0000:0000:ffff:0a1e:0107", 0),
            "0.0.0.0/0");
  EXPECT_EQ(RoceNetwork("fd00:0001:0002:0003:0e42:a1ff:fed5:3e20", 24),
            "fd00:0001:0002:0003::/64");
  EXPECT_FALSE(RoceNetwork("0000:0000:0000:0000:0000:0000:0000:0000", 24));
  EXPECT_FALSE(RoceNetwork("garbage", 24));
}

TEST(FabricClassTest, RecordedH100TreeEightIbRailsAndOneRoce) {
  bool ok = false;
  auto got =
      Classes(MakeRealSysfs(testing::Fixture("real/sysfs-gpud-h100")), {}, &ok);
  EXPECT_TRUE(ok);
  ASSERT_EQ(got.size(), 9u);
  for (const char* dev : {"mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6",
                          "mlx5_7", "mlx5_8", "mlx5_9"}) {
    const LabelMap& l = got[std::string(dev) + "/1"];
    EXPECT_EQ(l.at("class"), "infiniband") << dev;
    EXPECT_EQ(l.at("reason"), "link_layer_infiniband") << dev;
    EXPECT_EQ(l.at("model"), "ConnectX-7") << dev;
    EXPECT_EQ(l.at("fw_ver"), "28.41.1000") << dev;
    EXPECT_EQ(l.at("fabric"), "ib:unknown") << dev;  // no gids/ recorded
  }
  // A BlueField-3 with the RoCE acceleration counters, but the recorded
  // tree has no ecn/ state: congestion control cannot be confirmed.
  const LabelMap& bond = got["mlx5_bond_0/1"];
  EXPECT_EQ(bond.at("class"), "roce");
  EXPECT_EQ(bond.at("reason"), "cc_not_visible");
  EXPECT_EQ(bond.at("model"), "BlueField-3");
  EXPECT_EQ(bond.at("fw_ver"), "32.38.3056");
  EXPECT_EQ(bond.at("adaptive_retransmission"), "1");
  EXPECT_EQ(bond.at("cc"), "unknown");
  EXPECT_EQ(bond.at("fabric"), "roce:unknown");
}

TEST(FabricClassTest, DerivedPlainRoceHost) {
  auto got =
      Classes(MakeRealSysfs(testing::Fixture("synthetic/sysfs-plain-roce")));
  ASSERT_EQ(got.size(), 2u);
  for (const char* rail : {"mlx5_0/1", "mlx5_1/1"}) {
    const LabelMap& l = got[rail];
    EXPECT_EQ(l.at("class"), "roce") << rail;
    EXPECT_EQ(l.at("reason"), "nic_not_supernic") << rail;
    EXPECT_EQ(l.at("model"), "ConnectX-6 Dx") << rail;
    EXPECT_EQ(l.at("cc"), "on") << rail;
    EXPECT_EQ(l.at("adaptive_retransmission"), "0") << rail;
    // The IPv4-mapped RoCE v2 GID (slot 3) wins over the link-local one.
    EXPECT_EQ(l.at("fabric"), "roce:10.20.1.0/24") << rail;
  }
  EXPECT_EQ(got["mlx5_0/1"].at("node_guid"), "0x0c42a10300d53e20");
}

TEST(FabricClassTest, DerivedMixedHost) {
  auto got =
      Classes(MakeRealSysfs(testing::Fixture("synthetic/sysfs-mixed-host")));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got["mlx5_0/1"].at("class"), "infiniband");
  EXPECT_EQ(got["mlx5_0/1"].at("fabric"), "ib:fe80:0000:0000:0000");
  EXPECT_EQ(got["mlx5_0/1"].at("cc"), "");
  // The bond's slaves carry the ecn/ tree.
  const LabelMap& bond = got["mlx5_bond_0/1"];
  EXPECT_EQ(bond.at("class"), "roce_spectrum_x");
  EXPECT_EQ(bond.at("reason"), "supernic_cc_adaptive_retransmission");
  EXPECT_EQ(bond.at("cc"), "on");
  EXPECT_EQ(bond.at("fabric"), "roce:10.30.0.0/24");
  const LabelMap& odd = got["mlx5_2/1"];
  EXPECT_EQ(odd.at("class"), "roce");
  EXPECT_EQ(odd.at("reason"), "cc_off");
  EXPECT_EQ(odd.at("fabric"), "roce:10.30.0.0/24");
}

TEST(FabricClassTest, SettingsNameFabricsAndPickThePriority) {
  FabricClassSettings s;
  s.ib_fabric = "pod-a";
  s.roce_fabric = "storage";
  s.lossless_priority = 4;  // ECN is off there on every netdev
  auto got =
      Classes(MakeRealSysfs(testing::Fixture("synthetic/sysfs-mixed-host")), s);
  EXPECT_EQ(got["mlx5_0/1"].at("fabric"), "pod-a");
  EXPECT_EQ(got["mlx5_bond_0/1"].at("fabric"), "storage");
  EXPECT_EQ(got["mlx5_bond_0/1"].at("reason"), "cc_off");
}

TEST(FabricClassTest, BadInputGivesNoCrash) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  fs->File("class/infiniband/mlx5_0/hca_type", "garbage\n");
  fs->File("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  fs->File("class/infiniband/mlx5_0/ports/1/gids/0", "not a gid\n");
  fs->File("class/infiniband/mlx5_0/ports/1/gid_attrs/types/0", "RoCE v2\n");
  fs->File("class/infiniband/mlx5_1/ports/1/link_layer", "Omni-Path\n");
  bool ok = false;
  auto got = Classes(fs, {}, &ok);
  EXPECT_TRUE(ok);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got["mlx5_0/1"].at("reason"), "nic_unknown");
  EXPECT_EQ(got["mlx5_0/1"].at("fabric"), "roce:unknown");
}

TEST(FabricClassTest, NoInfinibandClassIsSuccessWithNothing) {
  bool ok = false;
  auto got = Classes(std::make_shared<testing::FakeSysfs>(), {}, &ok);
  EXPECT_TRUE(ok);
  EXPECT_TRUE(got.empty());
}

}  // namespace
}  // namespace fabric
