// Bad input for ib_port and hw_counters: a tree of garbage values in the
// tests' FakeSysfs, which also fails reads with EACCES/EINVAL/EOPNOTSUPP
// (tests run as root, so permissions can't do it) and removes a device
// between listing and reading. Nothing may crash; broken inputs are skipped
// and counted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "collectors/hw_counters.h"
#include "collectors/ib_port.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The broken tree, built fresh per test.
    const std::string good = "class/infiniband/mlx5_0/ports/1/";
    sysfs_->File(good + "state", "4: ACTIVE\n");
    sysfs_->File(good + "phys_state", "5: LinkUp\n");
    sysfs_->File(good + "rate", "400 Gb/sec (4X NDR)\n");
    sysfs_->File(good + "link_layer", "InfiniBand\n");
    sysfs_->File(good + "counters/port_rcv_data", "100\n");
    sysfs_->File(good + "counters/port_xmit_data", "200");  // no newline
    sysfs_->File(good + "counters/symbol_error", "");       // empty
    sysfs_->File(good + "counters/link_downed", "garbage\n");
    sysfs_->File(good + "counters/port_rcv_errors", "-3\n");
    sysfs_->File(good + "counters/port_xmit_discards",
                 "99999999999999999999999\n");
    sysfs_->File(good + "counters/VL15_dropped", "N/A (no PMA)\n");
    sysfs_->File(good + "counters/port_xmit_wait", "7\n");
    sysfs_->File(good + "hw_counters/out_of_sequence", "bogus\n");
    sysfs_->File(good + "hw_counters/np_cnp_sent", "5\n");
    // A port without counters/ at all.
    sysfs_->File("class/infiniband/mlx5_0/ports/2/state", "1: DOWN\n");
    sysfs_->File("class/infiniband/mlx5_0/ports/2/rate", "Unknown\n");
    sysfs_->File("class/infiniband/mlx5_0/hca_type", "MT4129\n");
    // Garbage in attributes.
    sysfs_->File("class/infiniband/mlx5_1/ports/1/state", "ACTIVE\n");
    sysfs_->File("class/infiniband/mlx5_1/ports/1/rate", "fast\n");
    sysfs_->File("class/infiniband/mlx5_1/ports/1/lid", "12\n");
    sysfs_->File("class/infiniband/mlx5_1/node_guid", "not-a-guid\n");
    sysfs_->File("class/infiniband/mlx5_1/ports/1/counters/port_rcv_data",
                 "1\n");
    // A device that will vanish between listing and reading.
    sysfs_->File("class/infiniband/mlx5_9/ports/1/counters/port_rcv_data",
                 "1\n");
    sysfs_->File("class/infiniband/mlx5_9/ports/1/hw_counters/out_of_sequence",
                 "1\n");
    // A non-numeric entry under ports/ is ignored.
    sysfs_->Dir("class/infiniband/mlx5_1/ports/power");
  }

  // The tree with mlx5_9 removed right after each listing of the devices.
  std::shared_ptr<testing::FakeSysfs> MakeFaulty() {
    sysfs_->OnList("class/infiniband",
                   [this] { sysfs_->Remove("class/infiniband/mlx5_9"); });
    return sysfs_;
  }

  std::shared_ptr<testing::FakeSysfs> sysfs_ =
      std::make_shared<testing::FakeSysfs>();
};

TEST_F(BadInputTest, IbPortSkipsAndCountsBrokenFiles) {
  auto sysfs = MakeFaulty();
  const std::string p = "class/infiniband/mlx5_0/ports/1/";
  sysfs->Fail(p + "counters/port_xmit_wait", EACCES);
  sysfs->Fail(p + "phys_state", EINVAL);
  sysfs->Fail("class/infiniband/mlx5_0/fw_ver", EOPNOTSUPP);
  auto c = testing::RunOn(MakeIbPortCollector, sysfs);
  ASSERT_TRUE(c.ok);
  const std::map<std::string, std::string> port = {{"device", "mlx5_0"},
                                                   {"port", "1"}};
  // Good values survive next to bad ones.
  EXPECT_EQ(c.Value("fabric_port_receive_bytes_total", port), 400.0);
  EXPECT_EQ(c.Value("fabric_port_transmit_bytes_total", port), 800.0);
  EXPECT_EQ(c.Value("fabric_port_state", port), 4.0);
  EXPECT_EQ(c.Value("fabric_port_rate_bytes_per_second", port), 50e9);
  // Broken ones are absent, not zero.
  EXPECT_TRUE(c.Find("fabric_port_errors_total", port).empty());
  EXPECT_EQ(c.Value("fabric_port_transmit_wait_total", port), std::nullopt);
  EXPECT_EQ(c.Value("fabric_port_physical_state", port), std::nullopt);
  // Port 2 has no counters/: attributes only; "Unknown" rate is absent.
  const std::map<std::string, std::string> port2 = {{"device", "mlx5_0"},
                                                    {"port", "2"}};
  EXPECT_EQ(c.Value("fabric_port_state", port2), 1.0);
  EXPECT_EQ(c.Value("fabric_port_rate_bytes_per_second", port2), std::nullopt);
  EXPECT_EQ(c.Find("fabric_port_info", port2).size(), 1u);
  // mlx5_1: garbage attributes skipped, counter still read; "power" ignored.
  EXPECT_EQ(c.Value("fabric_port_receive_bytes_total", {{"device", "mlx5_1"}}),
            4.0);
  EXPECT_EQ(c.Value("fabric_port_state", {{"device", "mlx5_1"}}), std::nullopt);
  EXPECT_EQ(c.Label("fabric_device_info", {{"device", "mlx5_1"}}, "node_guid"),
            "");
  EXPECT_TRUE(c.Find("fabric_port_info", {{"port", "power"}}).empty());
  // mlx5_9 vanished after the listing: skipped as a whole.
  EXPECT_TRUE(c.Find("fabric_device_info", {{"device", "mlx5_9"}}).empty());
  EXPECT_TRUE(c.Find("fabric_port_info", {{"device", "mlx5_9"}}).empty());
  // mlx5_0: 5 garbage/empty/N/A counters + EACCES counter + EINVAL
  // phys_state + EOPNOTSUPP fw_ver = 8; mlx5_1: state, rate, lid,
  // node_guid = 4; mlx5_9 vanished = 1.
  EXPECT_EQ(c.skipped, 13u);
}

TEST_F(BadInputTest, HwCountersSkipsAndCountsBrokenFiles) {
  auto sysfs = MakeFaulty();
  auto c = testing::RunOn(MakeHwCountersCollector, sysfs);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Value("fabric_roce_cnp_sent_total", {{"device", "mlx5_0"}}), 5.0);
  EXPECT_EQ(c.Family("fabric_roce_out_of_sequence_total"), nullptr);
  EXPECT_TRUE(
      c.Find("fabric_hw_counters_total", {{"device", "mlx5_9"}}).empty());
  EXPECT_EQ(c.skipped, 2u);  // "bogus" + vanished mlx5_9
}

TEST_F(BadInputTest, HwCountersUnreadableDirectory) {
  auto sysfs = MakeFaulty();
  sysfs->Fail("class/infiniband/mlx5_0/ports/1/hw_counters", EACCES);
  auto c = testing::RunOn(MakeHwCountersCollector, sysfs);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Family("fabric_hw_counters_total"), nullptr);
  EXPECT_EQ(c.skipped, 2u);  // the directory + vanished mlx5_9
}

TEST_F(BadInputTest, EmptyAbsentAndUnlistableClassDir) {
  sysfs_->Remove("class/infiniband");
  for (auto make : {MakeIbPortCollector, MakeHwCountersCollector}) {
    // Absent: success with no samples.
    auto absent = testing::RunOn(make, sysfs_);
    EXPECT_TRUE(absent.ok);
    EXPECT_TRUE(absent.families.empty());
    EXPECT_EQ(absent.skipped, 0u);
  }
  sysfs_->Dir("class/infiniband");
  for (auto make : {MakeIbPortCollector, MakeHwCountersCollector}) {
    // Empty: success with no samples.
    auto empty = testing::RunOn(make, sysfs_);
    EXPECT_TRUE(empty.ok);
    EXPECT_TRUE(empty.families.empty());
  }
  sysfs_->Fail("class/infiniband", EACCES);
  for (auto make : {MakeIbPortCollector, MakeHwCountersCollector}) {
    // Exists but unlistable: the only case that fails the collector.
    auto failed = testing::RunOn(make, sysfs_);
    EXPECT_FALSE(failed.ok);
    EXPECT_EQ(failed.skipped, 1u);
  }
}

TEST_F(BadInputTest, NetdevFromDevicePortOnTwoPortDevice) {
  const std::string dev = "class/infiniband/mlx4_0/";
  sysfs_->File(dev + "ports/1/state", "4: ACTIVE\n");
  sysfs_->File(dev + "ports/2/state", "4: ACTIVE\n");
  sysfs_->File(dev + "device/net/ib0/dev_port", "0\n");
  sysfs_->File(dev + "device/net/ib1/dev_port", "1\n");
  auto c = testing::RunOn(MakeIbPortCollector, sysfs_);
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx4_0"}, {"port", "1"}},
                    "netdev"),
            "ib0");
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx4_0"}, {"port", "2"}},
                    "netdev"),
            "ib1");
}

// Real sysfs: class/infiniband/<dev> and <dev>/device are symlinks into
// /sys/devices; the collectors must follow them. On disk, not on the fake:
// the real Sysfs's caching reader treats directories reached through a
// link differently (sources/sysfs.h), and that is what runs on a host.
TEST(BadInputSymlinkTest, FollowsRealSysfsSymlinks) {
  const testing::TempDir tmp("fabricmon_bad_symlinks");
  ASSERT_FALSE(tmp.path().empty());
  const fs::path root = tmp.path();
  auto write = [&](const std::string& rel, const std::string& data) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << data;
  };
  const std::string pci = "devices/pci0000:00/0000:00:02.0/0000:3b:00.0";
  write(pci + "/infiniband/mlx5_4/ports/1/state", "4: ACTIVE\n");
  write(pci + "/infiniband/mlx5_4/ports/1/counters/port_rcv_data", "5\n");
  write(pci + "/infiniband/mlx5_4/ports/1/hw_counters/np_cnp_sent", "6\n");
  write(pci + "/net/eth2/dev_port", "0\n");
  fs::create_directories(root / "class/infiniband");
  fs::create_directory_symlink("../..",
                               root / pci / "infiniband/mlx5_4/device");
  fs::create_directory_symlink("../../" + pci + "/infiniband/mlx5_4",
                               root / "class/infiniband/mlx5_4");
  std::shared_ptr<const Sysfs> sysfs = MakeRealSysfs(root.string());
  auto c = testing::RunOn(MakeIbPortCollector, sysfs);
  auto hw = testing::RunOn(MakeHwCountersCollector, sysfs);
  const std::map<std::string, std::string> port = {{"device", "mlx5_4"},
                                                   {"port", "1"}};
  EXPECT_EQ(c.Value("fabric_port_receive_bytes_total", port), 20.0);
  EXPECT_EQ(c.Label("fabric_port_info", port, "netdev"), "eth2");
  EXPECT_EQ(hw.Value("fabric_roce_cnp_sent_total", port), 6.0);
}

}  // namespace
}  // namespace fabric
