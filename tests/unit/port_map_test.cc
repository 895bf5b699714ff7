// sources/port_map: the one netdev-of-port rule (GID table, else device/net
// by dev_port/dev_id, else IPoIB address; bond slaves after), the facts
// beside it, and that every user of the rule (ib_port's netdev label, the
// roce/transceiver discovery, the probe rails, the rail classification)
// gives the same answer. Run on the recorded real trees (tests/fixtures/
// real: an H100 with a RoCE LAG bond, mlx4/mlx5/hfi1) and on copies of them
// given the netdev files a kernel would show.
#include "sources/port_map.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "collectors/ib_port.h"
#include "collectors/roce.h"
#include "sources/netdev_port.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
using Names = std::vector<std::string>;

PortFacts FactsOf(const Sysfs& sysfs, const std::string& device,
                  const std::string& port) {
  auto reader = sysfs.NewReader();
  reader->Begin();
  return ReadPortFacts(*reader, device, port);
}

// The recorded trees have no netdev files: the map says so (no netdevs, no
// error) and still has each port's link layer and GUID.
TEST(PortMapRealTrees, RecordedTreesGiveFactsAndNoNetdevs) {
  auto procfs = MakeRealSysfs(testing::Fixture("real/sysfs"));
  PortFacts f = FactsOf(*procfs, "mlx4_0", "2");
  EXPECT_EQ(f.link_layer, "InfiniBand");  // "InfiniBand\n\n" in the tree
  EXPECT_TRUE(f.netdevs.netdevs.empty());
  EXPECT_TRUE(f.netdevs.bond_slaves.empty());
  f = FactsOf(*procfs, "mlx5_0", "1");
  EXPECT_EQ(f.node_guid, 0x0a7fbc1245efd23bu);  // no trailing newline
  f = FactsOf(*procfs, "hfi1_0", "1");
  EXPECT_EQ(f.link_layer, "InfiniBand");  // Omni-Path shows itself as IB
  EXPECT_EQ(f.node_guid, 0u);             // the tree has no node_guid
  EXPECT_TRUE(f.netdevs.netdevs.empty());

  auto h100 = MakeRealSysfs(testing::Fixture("real/sysfs-gpud-h100"));
  f = FactsOf(*h100, "mlx5_bond_0", "1");
  EXPECT_EQ(f.link_layer, "Ethernet");
  EXPECT_TRUE(f.netdevs.netdevs.empty());
  f = FactsOf(*h100, "mlx5_0", "1");
  EXPECT_EQ(f.link_layer, "InfiniBand");
}

// A copy of the recorded H100 tree with the files its kernel shows for the
// netdevs: the RoCE LAG's GID table names bond0, whose slaves are the two
// PF netdevs; an IB device's device/net holds its IPoIB netdev; mlx5_1's
// PCI function also carries a second port's netdev (dev_port 1).
class H100WithNetdevs : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(testing::Fixture("real/sysfs-gpud-h100"), dir_.path(),
             fs::copy_options::recursive);
    const std::string bond = "class/infiniband/mlx5_bond_0/";
    Write(bond + "ports/1/gid_attrs/ndevs/0", "bond0\n");
    Write(bond + "ports/1/gid_attrs/ndevs/1", "bond0\n");
    Write(bond + "ports/1/gid_attrs/ndevs/3", "bond0.7\n");
    Write(bond + "device/uevent",
          "DRIVER=mlx5_core\nPCI_CLASS=20000\nPCI_SLOT_NAME=0000:9a:00.0\n");
    Write("class/net/bond0/bonding/slaves", "ens9f0np0 ens9f1np1\n");
    Write("class/net/bond0/type", "1\n");
    Write("class/net/ens9f0np0/type", "1\n");
    Write("class/net/ens9f1np1/type", "1\n");
    Write("class/infiniband/mlx5_0/device/net/ibp24s0/dev_port", "0\n");
    Write("class/infiniband/mlx5_1/device/net/ibp41s0/dev_port", "0\n");
    Write("class/infiniband/mlx5_1/device/net/ibp41s0.8001/dev_port", "0\n");
    Write("class/infiniband/mlx5_1/device/net/ibp41s1/dev_port", "1\n");
    sysfs_ = MakeRealSysfs(dir_.path());
  }
  void Write(const std::string& rel, const std::string& data) {
    const fs::path p = fs::path(dir_.path()) / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << data;
  }
  testing::TempDir dir_;
  std::shared_ptr<const Sysfs> sysfs_;
};

TEST_F(H100WithNetdevs, BondMasterThenItsSlaves) {
  const PortFacts f = FactsOf(*sysfs_, "mlx5_bond_0", "1");
  EXPECT_EQ(f.netdevs.netdevs, (Names{"bond0", "bond0.7"}));
  EXPECT_EQ(f.netdevs.bond_slaves, (Names{"ens9f0np0", "ens9f1np1"}));
  EXPECT_EQ(f.netdevs.Primary(), "bond0");
  EXPECT_EQ(f.pci_address, "0000:9a:00.0");
  EXPECT_EQ(f.link_layer, "Ethernet");
}

TEST_F(H100WithNetdevs, DeviceNetByDevPort) {
  EXPECT_EQ(FactsOf(*sysfs_, "mlx5_0", "1").netdevs.netdevs,
            (Names{"ibp24s0"}));
  // Two netdevs of port 1 (a P_Key child) and one of another port.
  EXPECT_EQ(FactsOf(*sysfs_, "mlx5_1", "1").netdevs.netdevs,
            (Names{"ibp41s0", "ibp41s0.8001"}));
  EXPECT_TRUE(FactsOf(*sysfs_, "mlx5_4", "1").netdevs.netdevs.empty());
}

// The rule has one answer, whoever asks: ib_port's netdev label is its
// primary netdev, the roce discovery and the probe rails get every netdev
// and the bond's slaves.
TEST_F(H100WithNetdevs, EveryUserGetsTheSameAnswer) {
  const PortFacts bond = FactsOf(*sysfs_, "mlx5_bond_0", "1");
  const PortFacts ib = FactsOf(*sysfs_, "mlx5_1", "1");
  auto c = testing::RunOn(MakeIbPortCollector, sysfs_);
  EXPECT_EQ(c.Label("fabric_port_info",
                    {{"device", "mlx5_bond_0"}, {"port", "1"}}, "netdev"),
            bond.netdevs.Primary());
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx5_1"}, {"port", "1"}},
                    "netdev"),
            ib.netdevs.Primary());

  Names roce;
  for (const RoceNetdev& n : DiscoverRoceNetdevs(*sysfs_, DeviceFilter())) {
    EXPECT_EQ(n.device, "mlx5_bond_0");
    roce.push_back(n.netdev);
  }
  EXPECT_EQ(roce, bond.netdevs.All());

  std::string error;
  auto rail = NetdevsOfFabricPort(*sysfs_, "mlx5_bond_0", 1, &error);
  ASSERT_TRUE(rail) << error;
  EXPECT_EQ(*rail, bond.netdevs.All());
  rail = NetdevsOfFabricPort(*sysfs_, "mlx5_1", 1, &error);
  ASSERT_TRUE(rail) << error;
  EXPECT_EQ(*rail, ib.netdevs.All());
}

// Older kernels have dev_id (hex) and no dev_port; a tree with neither
// cannot tell the device's netdevs apart and gives them all.
TEST(PortMapRule, DevIdWhenNoDevPortAndAllWhenNeither) {
  testing::FakeSysfs fs;
  fs.File("class/infiniband/mlx4_0/device/net/ib0/dev_id", "0x0\n");
  fs.File("class/infiniband/mlx4_0/device/net/ib1/dev_id", "0x1\n");
  fs.File("class/infiniband/mlx4_1/device/net/eth0/ifindex", "3\n");
  fs.File("class/infiniband/mlx4_1/device/net/eth1/ifindex", "4\n");
  auto reader = fs.NewReader();
  reader->Begin();
  EXPECT_EQ(ReadPortNetdevs(*reader, "mlx4_0", "2", "InfiniBand").netdevs,
            (Names{"ib1"}));
  EXPECT_EQ(ReadPortNetdevs(*reader, "mlx4_1", "1", "Ethernet").netdevs,
            (Names{"eth0", "eth1"}));
}

// The GID table wins over device/net, in GID index order (10 after 2),
// each name once; implausible names are dropped.
TEST(PortMapRule, GidTableInIndexOrder) {
  testing::FakeSysfs fs;
  const std::string p = "class/infiniband/mlx5_2/ports/1/";
  fs.File(p + "gid_attrs/ndevs/10", "vlan7\n");
  fs.File(p + "gid_attrs/ndevs/2", "eth2\n");
  fs.File(p + "gid_attrs/ndevs/3", "eth2\n");
  fs.File(p + "gid_attrs/ndevs/4", "../../etc\n");
  fs.Fail(p + "gid_attrs/ndevs/5", EINVAL);
  fs.File("class/infiniband/mlx5_2/device/net/other/dev_port", "0\n");
  auto reader = fs.NewReader();
  reader->Begin();
  EXPECT_EQ(ReadPortNetdevs(*reader, "mlx5_2", "1", "Ethernet").netdevs,
            (Names{"eth2", "vlan7"}));
}

constexpr char kGid0[] = "fe80:0000:0000:0000:0002:c903:00a1:b2c3\n";
constexpr char kIpoibAddress[] =
    "00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c3\n";

// An IB port with neither: the IPoIB netdevs carrying its GID, found by a
// scan of every netdev that PortMap keeps for kRescanSeconds, and drops at
// once when one of them is gone.
TEST(PortMapCache, KeepsAScanUntilItExpiresOrANetdevGoes) {
  testing::FakeSysfs fs;
  fs.File("class/infiniband/mlx5_0/ports/1/gids/0", kGid0);
  fs.File("class/net/ib0/type", "32\n");
  fs.File("class/net/ib0/address", kIpoibAddress);
  fs.File("class/net/eth0/type", "1\n");
  double now = 100;
  PortMap map([&] { return now; });
  auto reader = fs.NewReader();
  reader->Begin();
  EXPECT_EQ(map.Netdevs(*reader, "mlx5_0", "1", "InfiniBand").netdevs,
            (Names{"ib0"}));
  const int scans = fs.Reads("class/net/eth0/type");
  EXPECT_EQ(scans, 1);
  now += PortMap::kRescanSeconds - 1;
  EXPECT_EQ(map.Netdevs(*reader, "mlx5_0", "1", "InfiniBand").netdevs,
            (Names{"ib0"}));
  EXPECT_EQ(fs.Reads("class/net/eth0/type"), scans);  // kept
  now += 2;
  map.Netdevs(*reader, "mlx5_0", "1", "InfiniBand");
  EXPECT_EQ(fs.Reads("class/net/eth0/type"), scans + 1);  // expired
  fs.Remove("class/net/ib0");
  EXPECT_TRUE(
      map.Netdevs(*reader, "mlx5_0", "1", "InfiniBand").netdevs.empty());
  EXPECT_EQ(fs.Reads("class/net/eth0/type"), scans + 2);  // gone: rescanned
}

// A GID table or device/net answer is read every time (the reader keeps
// those files open), so a renamed netdev shows at once.
TEST(PortMapCache, CheapAnswersAreNotKept) {
  testing::FakeSysfs fs;
  const std::string p = "class/infiniband/mlx5_2/ports/1/";
  fs.File(p + "gid_attrs/ndevs/0", "eth2\n");
  PortMap map([] { return 0.0; });
  auto reader = fs.NewReader();
  reader->Begin();
  EXPECT_EQ(map.Netdevs(*reader, "mlx5_2", "1", "Ethernet").Primary(), "eth2");
  fs.File(p + "gid_attrs/ndevs/0", "renamed0\n");
  EXPECT_EQ(map.Netdevs(*reader, "mlx5_2", "1", "Ethernet").Primary(),
            "renamed0");
}

}  // namespace
}  // namespace fabric
