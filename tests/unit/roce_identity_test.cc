// Tests for ConnectX/BlueField identification (nic_identity collector) on
// the recorded H100 tree (8x ConnectX-7 + BlueField-3 bond), the procfs tree
// and constructed trees with PCI ids and switchdev mode.
#include <gtest/gtest.h>

#include "collectors/nic_identity.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

// device -> labels of its fabric_device_model_info sample.
std::map<std::string, std::map<std::string, std::string>> Identify(
    std::shared_ptr<const Sysfs> fs, bool* ok = nullptr) {
  CollectorEnv env;
  env.sysfs = std::move(fs);
  auto c = MakeNicIdentityCollector(env, {});
  MetricSink sink;
  bool result = c->Collect(sink);
  if (ok) *ok = result;
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& f : sink.Take()) {
    EXPECT_EQ(f.name, "fabric_device_model_info");
    for (const auto& m : f.metric) {
      EXPECT_EQ(m.gauge.value, 1);
      std::map<std::string, std::string> labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      out[labels["device"]] = labels;
    }
  }
  return out;
}

TEST(RoceIdentityTest, ParsesHcaTypeAndPciId) {
  EXPECT_EQ(ParseHcaType("MT4129"), 4129u);
  EXPECT_EQ(ParseHcaType("MT41692\n"), 41692u);
  EXPECT_FALSE(ParseHcaType("I40IW"));
  EXPECT_FALSE(ParseHcaType("MT"));
  EXPECT_FALSE(ParseHcaType("MT12x"));
  EXPECT_EQ(ParsePciId("0xa2dc\n"), 0xa2dcu);
  EXPECT_EQ(ParsePciId("0x1021"), 0x1021u);
  EXPECT_FALSE(ParsePciId("a2dc"));
  EXPECT_FALSE(ParsePciId("0x123456"));
  EXPECT_FALSE(ParsePciId("0x"));
}

TEST(RoceIdentityTest, TableMatchesCountersAndProbesB5) {
  // hca_type is "MT" + decimal PCI device id.
  struct Row {
    std::uint32_t hca;
    const char* model;
    const char* family;
  };
  for (const Row& r : {Row{4119, "ConnectX-5", "connectx"},
                       Row{4121, "ConnectX-5 Ex", "connectx"},
                       Row{4123, "ConnectX-6", "connectx"},
                       Row{4125, "ConnectX-6 Dx", "connectx"},
                       Row{4127, "ConnectX-6 Lx", "connectx"},
                       Row{4129, "ConnectX-7", "connectx"},
                       Row{4131, "ConnectX-8", "connectx"},
                       Row{41682, "BlueField", "bluefield"},
                       Row{41686, "BlueField-2", "bluefield"},
                       Row{41692, "BlueField-3", "bluefield"},
                       Row{41695, "BlueField-4", "bluefield"}}) {
    auto m = ModelForPciId(r.hca);
    ASSERT_TRUE(m) << r.hca;
    EXPECT_EQ(m->model, r.model);
    EXPECT_EQ(m->family, r.family);
  }
  EXPECT_FALSE(ModelForPciId(0x1234));
}

TEST(RoceIdentityTest, RecordedH100Tree) {
  bool ok = false;
  auto got =
      Identify(MakeRealSysfs(testing::Fixture("real/sysfs-gpud-h100")), &ok);
  EXPECT_TRUE(ok);
  ASSERT_EQ(got.size(), 9u);
  for (const char* dev : {"mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6",
                          "mlx5_7", "mlx5_8", "mlx5_9"}) {
    EXPECT_EQ(got[dev]["model"], "ConnectX-7") << dev;
    EXPECT_EQ(got[dev]["family"], "connectx") << dev;
    EXPECT_EQ(got[dev]["pci_device_id"], "0x1021") << dev;
    EXPECT_EQ(got[dev]["mode"], "nic") << dev;
    EXPECT_EQ(got[dev]["bond"], "0") << dev;
  }
  auto& bond = got["mlx5_bond_0"];
  EXPECT_EQ(bond["model"], "BlueField-3");
  EXPECT_EQ(bond["family"], "bluefield");
  EXPECT_EQ(bond["pci_device_id"], "0xa2dc");
  EXPECT_EQ(bond["bond"], "1");
  EXPECT_EQ(bond["mode"], "unknown");  // the host cannot tell NIC from DPU
}

TEST(RoceIdentityTest, RecordedProcfsTree) {
  auto got = Identify(MakeRealSysfs(testing::Fixture("real/sysfs")));
  EXPECT_EQ(got["mlx5_0"]["model"], "ConnectX-4 Lx VF");  // MT4118
  EXPECT_EQ(got["mlx4_0"]["model"], "ConnectX-3");        // MT4099
  EXPECT_EQ(got.count("hfi1_0"), 0u);  // Omni-Path: no hca_type, no info
}

TEST(RoceIdentityTest, PciIdWinsAndSwitchdevMeansDpu) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  // PCI id present, hca_type absent (the PCI id is the primary key).
  fs->File("class/infiniband/mlx5_0/device/vendor", "0x15b3\n");
  fs->File("class/infiniband/mlx5_0/device/device", "0xa2d6\n");
  fs->File("class/infiniband/mlx5_0/device/net/p0/ifindex", "3\n");
  fs->File("class/net/p0/compat/devlink/mode", "switchdev\n");
  // Another vendor's PCI id: ignored, hca_type used.
  fs->File("class/infiniband/mlx5_1/device/vendor", "0x8086\n");
  fs->File("class/infiniband/mlx5_1/device/device", "0x1592\n");
  fs->File("class/infiniband/mlx5_1/hca_type", "MT4125\n");
  // Garbage PCI id: skipped and counted, hca_type used.
  fs->File("class/infiniband/mlx5_2/device/device", "zzz\n");
  fs->File("class/infiniband/mlx5_2/hca_type", "MT41692\n");
  fs->File("class/infiniband/mlx5_2/device/net/ens1/ifindex", "4\n");
  fs->File("class/net/ens1/compat/devlink/mode", "legacy\n");
  // Upstream kernel on the Arm side: no compat file, but the host-PF
  // representor is among the device's netdevs.
  fs->File("class/infiniband/mlx5_3/hca_type", "MT41692\n");
  fs->File("class/infiniband/mlx5_3/device/net/p0/ifindex", "6\n");
  fs->File("class/infiniband/mlx5_3/device/net/pf0hpf/ifindex", "7\n");
  fs->File("class/net/pf0hpf/phys_port_name", "pf0hpf\n");
  auto got = Identify(fs);
  EXPECT_EQ(got["mlx5_3"]["mode"], "dpu");
  EXPECT_EQ(got["mlx5_0"]["model"], "BlueField-2");
  EXPECT_EQ(got["mlx5_0"]["mode"], "dpu");
  EXPECT_EQ(got["mlx5_1"]["model"], "ConnectX-6 Dx");
  EXPECT_EQ(got["mlx5_2"]["model"], "BlueField-3");
  EXPECT_EQ(got["mlx5_2"]["mode"], "unknown");
}

TEST(RoceIdentityTest, NoInfinibandClassIsSuccessWithNothing) {
  bool ok = false;
  auto got = Identify(std::make_shared<testing::FakeSysfs>(), &ok);
  EXPECT_TRUE(ok);
  EXPECT_TRUE(got.empty());
}

}  // namespace
}  // namespace fabric
