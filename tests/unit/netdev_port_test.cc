// sources/netdev_port: which RDMA port a netdev belongs to, on fake sysfs
// trees laid out as the kernel lays them out (IPoIB: the GID in the
// hardware address; RoCE: gid_attrs/ndevs), and bad input; the reverse,
// the netdevs of a device/port (NetdevsOfFabricPort).
#include "sources/netdev_port.h"

#include <gtest/gtest.h>

#include "tests/support/fake_sysfs.h"

namespace fabric {
namespace {

using testing::FakeSysfs;

constexpr char kGid[] = "fe80:0000:0000:0000:0002:c903:00a1:b2c3";

void IbPort(FakeSysfs& fs) {
  fs.File("class/infiniband/mlx5_0/node_guid", "0002:c903:00a1:b2c2\n");
  const std::string p = "class/infiniband/mlx5_0/ports/1/";
  fs.File(p + "gids/0", "fe80:0000:0000:0000:0002:c903:00a1:b2c9\n");
  fs.File("class/infiniband/mlx5_1/node_guid", "0002:c903:00a1:b2c0\n");
  const std::string q = "class/infiniband/mlx5_1/ports/1/";
  fs.File(q + "gids/0", std::string(kGid) + "\n");
  fs.File(q + "lid", "0x1f\n");
  fs.File(q + "link_layer", "InfiniBand\n");
}

TEST(NetdevPort, IpoibNetdevIsThePortWhoseGidItsAddressCarries) {
  FakeSysfs fs;
  IbPort(fs);
  fs.File("class/net/ib1/type", "32\n");
  fs.File("class/net/ib1/address",
          "00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c3\n");
  std::string error;
  auto port = FabricPortOfNetdev(fs, "ib1", &error);
  ASSERT_TRUE(port) << error;
  EXPECT_EQ(port->device, "mlx5_1");
  EXPECT_EQ(port->port, 1);
  EXPECT_EQ(port->link_layer, "InfiniBand");
  EXPECT_EQ(port->node_guid, 0x0002c90300a1b2c0u);
  EXPECT_EQ(port->port_guid, 0x0002c90300a1b2c3u);
  EXPECT_EQ(port->lid, 0x1f);
  EXPECT_EQ(FormatGid(port->gid), kGid);
}

TEST(NetdevPort, RoceNetdevIsThePortWhoseGidTableNamesIt) {
  FakeSysfs fs;
  const std::string p = "class/infiniband/mlx5_2/ports/1/";
  fs.File("class/infiniband/mlx5_2/node_guid", "b859:9f03:00d4:1234\n");
  fs.File(p + "link_layer", "Ethernet\n");
  fs.File(p + "lid", "0x0\n");
  fs.File(p + "gid_attrs/ndevs/0", "eth9\n");
  fs.File(p + "gid_attrs/ndevs/1", "eth2\n");
  fs.File(p + "gid_attrs/ndevs/2", "eth2\n");
  fs.Fail(p + "gid_attrs/ndevs/3", EINVAL);  // unused entries fail so
  fs.File(p + "gids/1", "fe80:0000:0000:0000:ba59:9fff:fed4:1234\n");
  fs.File(p + "gids/2", "0000:0000:0000:0000:0000:ffff:c0a8:0102\n");
  fs.File("class/net/eth2/type", "1\n");
  std::string error;
  auto port = FabricPortOfNetdev(fs, "eth2", &error);
  ASSERT_TRUE(port) << error;
  EXPECT_EQ(port->device, "mlx5_2");
  EXPECT_EQ(port->link_layer, "Ethernet");
  EXPECT_EQ(port->port_guid, 0u);
  EXPECT_EQ(port->lid, 0);
  EXPECT_EQ(FormatGid(port->gid), "fe80:0000:0000:0000:ba59:9fff:fed4:1234");
  EXPECT_EQ(port->node_guid, 0xb8599f0300d41234u);
}

TEST(NetdevPort, OtherNetdevsAndBadInputHaveNoPort) {
  FakeSysfs fs;
  IbPort(fs);
  std::string error;
  fs.File("class/net/lo/type", "772\n");
  EXPECT_FALSE(FabricPortOfNetdev(fs, "lo", &error));
  EXPECT_TRUE(error.empty()) << error;
  // An IPoIB netdev whose GID no port has, or whose address is garbage.
  fs.File("class/net/ib7/type", "32\n");
  fs.File("class/net/ib7/address",
          "00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:ff\n");
  EXPECT_FALSE(FabricPortOfNetdev(fs, "ib7", &error));
  EXPECT_NE(error.find("no RDMA port"), std::string::npos);
  fs.File("class/net/ib7/address", "zz\n");
  EXPECT_FALSE(FabricPortOfNetdev(fs, "ib7", &error));
  EXPECT_FALSE(FabricPortOfNetdev(fs, "../../etc", &error));
  EXPECT_FALSE(FabricPortOfNetdev(fs, "", &error));
  // No RDMA devices at all.
  FakeSysfs empty;
  EXPECT_FALSE(FabricPortOfNetdev(empty, "eth0", &error));
}

TEST(NetdevPort, ParsersRefuseWhatIsNotAGidOrAnIpoibAddress) {
  EXPECT_TRUE(ParseGidText(kGid));
  EXPECT_TRUE(ParseGidText(std::string(kGid) + "\n"));
  EXPECT_FALSE(ParseGidText("fe80::2:c903:a1:b2c3"));
  EXPECT_FALSE(ParseGidText("fe80:0000:0000:0000:0002:c903:00a1:b2cg"));
  EXPECT_FALSE(ParseGidText("fe80-0000:0000:0000:0002:c903:00a1:b2c3"));
  EXPECT_FALSE(ParseGidText(""));
  EXPECT_FALSE(IpoibAddressGid("52:54:00:12:34:56"));
  EXPECT_FALSE(IpoibAddressGid(
      "00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2"));
  EXPECT_EQ(FormatGid(*IpoibAddressGid(
                "80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c3")),
            kGid);
}

constexpr char kIpoibAddress[] =
    "00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c3\n";

// The reverse: mlx5_1 port 1's IPoIB netdevs are those whose address
// carries its GID (the parent and its P_Key child), not mlx5_0's.
TEST(NetdevsOfFabricPort, IpoibNetdevsCarryThePortsGid) {
  FakeSysfs fs;
  IbPort(fs);
  fs.File("class/net/ib1/type", "32\n");
  fs.File("class/net/ib1/address", kIpoibAddress);
  fs.File("class/net/ib1.8001/type", "32\n");
  fs.File("class/net/ib1.8001/address", kIpoibAddress);
  fs.File("class/net/ib0/type", "32\n");
  fs.File("class/net/ib0/address",
          "00:00:10:87:fe:80:00:00:00:00:00:00:00:02:c9:03:00:a1:b2:c9\n");
  fs.File("class/net/eth0/type", "1\n");
  fs.File("class/net/eth0/address", "52:54:00:12:34:56\n");
  std::string error;
  auto netdevs = NetdevsOfFabricPort(fs, "mlx5_1", 1, &error);
  ASSERT_TRUE(netdevs) << error;
  EXPECT_EQ(*netdevs, (std::vector<std::string>{"ib1", "ib1.8001"}));
  netdevs = NetdevsOfFabricPort(fs, "mlx5_0", 1, &error);
  ASSERT_TRUE(netdevs) << error;
  EXPECT_EQ(*netdevs, (std::vector<std::string>{"ib0"}));
}

// RoCE: the netdevs the GID table names, once each, in GID index order
// (index 10 after index 2); unused entries (EINVAL) are skipped.
TEST(NetdevsOfFabricPort, RoceNetdevsAreThoseItsGidTableNames) {
  FakeSysfs fs;
  const std::string p = "class/infiniband/mlx5_2/ports/1/";
  fs.File(p + "gid_attrs/ndevs/10", "vlan7\n");
  fs.File(p + "gid_attrs/ndevs/2", "eth2\n");
  fs.File(p + "gid_attrs/ndevs/3", "eth2\n");
  fs.Fail(p + "gid_attrs/ndevs/4", EINVAL);
  fs.File(p + "gids/0", "0000:0000:0000:0000:0000:0000:0000:0000\n");
  std::string error;
  auto netdevs = NetdevsOfFabricPort(fs, "mlx5_2", 1, &error);
  ASSERT_TRUE(netdevs) << error;
  EXPECT_EQ(*netdevs, (std::vector<std::string>{"eth2", "vlan7"}));
  // An Ethernet port has no IPoIB netdevs: every netdev is not read for
  // them (the lookup runs every collection). Only the port's own netdevs
  // are looked at, for bond slaves (sources/port_map.h).
  fs.File(p + "link_layer", "Ethernet\n");
  const std::size_t before = fs.calls().size();
  netdevs = NetdevsOfFabricPort(fs, "mlx5_2", 1, &error);
  ASSERT_TRUE(netdevs) << error;
  EXPECT_EQ(netdevs->size(), 2u);
  for (std::size_t i = before; i < fs.calls().size(); ++i) {
    const std::string& call = fs.calls()[i];
    if (call.ends_with("/bonding/slaves")) continue;
    EXPECT_EQ(call.find("class/net"), std::string::npos) << call;
  }
}

TEST(NetdevsOfFabricPort, MissingDevicePortOrNetdevSaysWhich) {
  FakeSysfs fs;
  IbPort(fs);
  std::string error;
  EXPECT_FALSE(NetdevsOfFabricPort(fs, "mlx5_9", 1, &error));
  EXPECT_EQ(error, "no RDMA device mlx5_9 (this host has mlx5_0, mlx5_1)");
  EXPECT_FALSE(NetdevsOfFabricPort(fs, "mlx5_1", 2, &error));
  EXPECT_EQ(error, "mlx5_1 has no port 2 (ports: 1)");
  EXPECT_FALSE(NetdevsOfFabricPort(fs, "mlx5_1", 1, &error));
  EXPECT_NE(error.find("mlx5_1 port 1 has no netdev"), std::string::npos)
      << error;
  EXPECT_FALSE(NetdevsOfFabricPort(fs, "../net", 1, &error));
  EXPECT_NE(error.find("bad RDMA device name"), std::string::npos) << error;
  FakeSysfs empty;
  EXPECT_FALSE(NetdevsOfFabricPort(empty, "mlx5_0", 1, &error));
  EXPECT_EQ(error, "no RDMA device mlx5_0 (this host has none)");
}

}  // namespace
}  // namespace fabric
