// sources/netdev_address: which netdev and address a rail named by RDMA
// device/port binds, on fake sysfs trees and address lists (IPv4 first,
// then global IPv6; link-local never; a wanted address must be the
// port's), and the errors an operator reads.
#include "sources/netdev_address.h"

#include <gtest/gtest.h>

#include "tests/support/fake_sysfs.h"

namespace fabric {
namespace {

using testing::FakeSysfs;

// mlx5_0 port 1 is RoCE on eth2 (and its VLAN eth2.7).
FakeSysfs RocePort() {
  FakeSysfs fs;
  const std::string p = "class/infiniband/mlx5_0/ports/1/";
  fs.File(p + "gid_attrs/ndevs/0", "eth2\n");
  fs.File(p + "gid_attrs/ndevs/1", "eth2.7\n");
  return fs;
}

InterfaceAddress V4(const std::string& netdev, const std::string& a) {
  return {netdev, a, false, false};
}
InterfaceAddress V6(const std::string& netdev, const std::string& a) {
  return {netdev, a, true, a.rfind("fe80:", 0) == 0};
}

TEST(BindingOfFabricPort, PrefersIpv4ThenGlobalIpv6NetdevByNetdev) {
  const FakeSysfs fs = RocePort();
  std::string error;
  auto b = BindingOfFabricPort(
      fs,
      {V4("eth0", "192.168.1.5"), V6("eth2", "fe80::1"), V6("eth2", "fd00::2"),
       V4("eth2", "10.0.0.2"), V4("eth2.7", "10.7.0.2")},
      "mlx5_0", 1, "", &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(*b, (RailBinding{"eth2", "10.0.0.2", false}));
  // Without IPv4 there: the global IPv6 address, never the link-local one.
  b = BindingOfFabricPort(fs, {V6("eth2", "fe80::1"), V6("eth2", "fd00::2")},
                          "mlx5_0", 1, "", &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(*b, (RailBinding{"eth2", "fd00::2", true}));
  // Nothing on eth2: the next netdev of the port.
  b = BindingOfFabricPort(fs, {V4("eth2.7", "10.7.0.2")}, "mlx5_0", 1, "",
                          &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->netdev, "eth2.7");
}

TEST(BindingOfFabricPort, WantedAddressMustBeThePorts) {
  const FakeSysfs fs = RocePort();
  const std::vector<InterfaceAddress> addresses = {V4("eth2", "10.0.0.2"),
                                                   V4("eth2", "10.0.0.3"),
                                                   V4("eth0", "192.168.1.5")};
  std::string error;
  auto b = BindingOfFabricPort(fs, addresses, "mlx5_0", 1, "10.0.0.3", &error);
  ASSERT_TRUE(b) << error;
  EXPECT_EQ(b->address, "10.0.0.3");
  EXPECT_FALSE(
      BindingOfFabricPort(fs, addresses, "mlx5_0", 1, "192.168.1.5", &error));
  EXPECT_EQ(error,
            "listen_address 192.168.1.5 is not on mlx5_0 port 1's netdev "
            "eth2, eth2.7 (it is eth0's)");
  EXPECT_FALSE(
      BindingOfFabricPort(fs, addresses, "mlx5_0", 1, "10.9.9.9", &error));
  EXPECT_NE(error.find("(no netdev has it)"), std::string::npos) << error;
}

TEST(BindingOfFabricPort, NoAddressNoNetdevNoDeviceAreClearErrors) {
  const FakeSysfs fs = RocePort();
  std::string error;
  EXPECT_FALSE(BindingOfFabricPort(fs, {V6("eth2", "fe80::1")}, "mlx5_0", 1, "",
                                   &error));
  EXPECT_EQ(error,
            "mlx5_0 port 1: netdev eth2, eth2.7 has no IPv4 or global IPv6 "
            "address");
  EXPECT_FALSE(BindingOfFabricPort(fs, {}, "mlx5_1", 1, "", &error));
  EXPECT_EQ(error, "no RDMA device mlx5_1 (this host has mlx5_0)");
  EXPECT_FALSE(BindingOfFabricPort(fs, {}, "mlx5_0", 2, "", &error));
  EXPECT_EQ(error, "mlx5_0 has no port 2 (ports: 1)");
}

TEST(CanonicalAddress, NormalisesOrRefuses) {
  EXPECT_EQ(CanonicalAddress("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(CanonicalAddress("fd00:0:0::0001"), "fd00::1");
  EXPECT_EQ(CanonicalAddress("mlx5_0"), "");
  EXPECT_EQ(CanonicalAddress(""), "");
}

// The real lister: loopback has 127.0.0.1 on every Linux host.
TEST(SystemInterfaceAddresses, ListsLoopback) {
  std::string error;
  const auto addresses = SystemInterfaceAddresses(&error);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_NE(
      std::find(addresses.begin(), addresses.end(), V4("lo", "127.0.0.1")),
      addresses.end());
}

}  // namespace
}  // namespace fabric
