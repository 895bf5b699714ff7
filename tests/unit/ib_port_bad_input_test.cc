// Bad input for ib_port and hw_counters: a tree built in a temp dir with
// garbage values, plus an injected Sysfs wrapping the real one to fail reads
// with EACCES/EINVAL/EOPNOTSUPP (tests run as root, so permissions can't do
// it) and to remove a device between listing and reading. Nothing may crash;
// broken inputs are skipped and counted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "collectors/hw_counters.h"
#include "collectors/ib_port.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

// Wraps a real Sysfs; `errors` maps a relative path to the errno its Read or
// List returns; `on_list` runs after a List of the given path succeeds.
class FaultySysfs final : public Sysfs {
 public:
  explicit FaultySysfs(std::string root) : real_(MakeRealSysfs(root)) {}

  ReadResult Read(const std::string& path) const override {
    if (auto it = errors.find(path); it != errors.end()) {
      return {"", {it->second, std::system_category()}};
    }
    return real_->Read(path);
  }
  std::optional<std::vector<std::string>> List(
      const std::string& path, std::error_code* error) const override {
    if (auto it = errors.find(path); it != errors.end()) {
      if (error) *error = {it->second, std::system_category()};
      return std::nullopt;
    }
    auto out = real_->List(path, error);
    if (auto it = on_list.find(path); out && it != on_list.end()) it->second();
    return out;
  }
  std::string ReadLink(const std::string& path) const override {
    return real_->ReadLink(path);
  }
  bool IsDirectory(const std::string& path) const override {
    return real_->IsDirectory(path);
  }

  std::map<std::string, int> errors;
  std::map<std::string, std::function<void()>> on_list;

 private:
  std::unique_ptr<Sysfs> real_;
};

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("fabricmon_bad_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    // tests/fixtures/bad/ is described here, built fresh per test.
    const std::string good = "class/infiniband/mlx5_0/ports/1/";
    Write(good + "state", "4: ACTIVE\n");
    Write(good + "phys_state", "5: LinkUp\n");
    Write(good + "rate", "400 Gb/sec (4X NDR)\n");
    Write(good + "link_layer", "InfiniBand\n");
    Write(good + "counters/port_rcv_data", "100\n");
    Write(good + "counters/port_xmit_data", "200");  // no newline
    Write(good + "counters/symbol_error", "");       // empty
    Write(good + "counters/link_downed", "garbage\n");
    Write(good + "counters/port_rcv_errors", "-3\n");
    Write(good + "counters/port_xmit_discards", "99999999999999999999999\n");
    Write(good + "counters/VL15_dropped", "N/A (no PMA)\n");
    Write(good + "counters/port_xmit_wait", "7\n");
    Write(good + "hw_counters/out_of_sequence", "bogus\n");
    Write(good + "hw_counters/np_cnp_sent", "5\n");
    // A port without counters/ at all.
    Write("class/infiniband/mlx5_0/ports/2/state", "1: DOWN\n");
    Write("class/infiniband/mlx5_0/ports/2/rate", "Unknown\n");
    Write("class/infiniband/mlx5_0/hca_type", "MT4129\n");
    // Garbage in attributes.
    Write("class/infiniband/mlx5_1/ports/1/state", "ACTIVE\n");
    Write("class/infiniband/mlx5_1/ports/1/rate", "fast\n");
    Write("class/infiniband/mlx5_1/ports/1/lid", "12\n");
    Write("class/infiniband/mlx5_1/node_guid", "not-a-guid\n");
    Write("class/infiniband/mlx5_1/ports/1/counters/port_rcv_data", "1\n");
    // A device that will vanish between listing and reading.
    Write("class/infiniband/mlx5_9/ports/1/counters/port_rcv_data", "1\n");
    Write("class/infiniband/mlx5_9/ports/1/hw_counters/out_of_sequence", "1\n");
    // A non-numeric entry under ports/ is ignored.
    fs::create_directories(root_ / "class/infiniband/mlx5_1/ports/power");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& data) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << data;
  }

  std::shared_ptr<FaultySysfs> MakeFaulty() {
    auto sysfs = std::make_shared<FaultySysfs>(root_.string());
    sysfs->on_list["class/infiniband"] = [this] {
      fs::remove_all(root_ / "class/infiniband/mlx5_9");
    };
    return sysfs;
  }

  fs::path root_;
};

TEST_F(BadInputTest, IbPortSkipsAndCountsBrokenFiles) {
  auto sysfs = MakeFaulty();
  const std::string p = "class/infiniband/mlx5_0/ports/1/";
  sysfs->errors[p + "counters/port_xmit_wait"] = EACCES;
  sysfs->errors[p + "phys_state"] = EINVAL;
  sysfs->errors["class/infiniband/mlx5_0/fw_ver"] = EOPNOTSUPP;
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
  sysfs->errors["class/infiniband/mlx5_0/ports/1/hw_counters"] = EACCES;
  auto c = testing::RunOn(MakeHwCountersCollector, sysfs);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.Family("fabric_hw_counters_total"), nullptr);
  EXPECT_EQ(c.skipped, 2u);  // the directory + vanished mlx5_9
}

TEST_F(BadInputTest, EmptyAbsentAndUnlistableClassDir) {
  fs::remove_all(root_ / "class/infiniband");
  for (auto make : {MakeIbPortCollector, MakeHwCountersCollector}) {
    // Absent: success with no samples.
    auto absent = testing::RunOn(make, MakeRealSysfs(root_.string()));
    EXPECT_TRUE(absent.ok);
    EXPECT_TRUE(absent.families.empty());
    EXPECT_EQ(absent.skipped, 0u);
  }
  fs::create_directories(root_ / "class/infiniband");
  for (auto make : {MakeIbPortCollector, MakeHwCountersCollector}) {
    // Empty: success with no samples.
    auto empty = testing::RunOn(make, MakeRealSysfs(root_.string()));
    EXPECT_TRUE(empty.ok);
    EXPECT_TRUE(empty.families.empty());
  }
  auto sysfs = std::make_shared<FaultySysfs>(root_.string());
  sysfs->errors["class/infiniband"] = EACCES;
  for (auto make : {MakeIbPortCollector, MakeHwCountersCollector}) {
    // Exists but unlistable: the only case that fails the collector.
    auto failed = testing::RunOn(make, sysfs);
    EXPECT_FALSE(failed.ok);
    EXPECT_EQ(failed.skipped, 1u);
  }
}

TEST_F(BadInputTest, NetdevFromDevicePortOnTwoPortDevice) {
  const std::string dev = "class/infiniband/mlx4_0/";
  Write(dev + "ports/1/state", "4: ACTIVE\n");
  Write(dev + "ports/2/state", "4: ACTIVE\n");
  Write(dev + "device/net/ib0/dev_port", "0\n");
  Write(dev + "device/net/ib1/dev_port", "1\n");
  auto c = testing::RunOn(MakeIbPortCollector, MakeRealSysfs(root_.string()));
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx4_0"}, {"port", "1"}},
                    "netdev"),
            "ib0");
  EXPECT_EQ(c.Label("fabric_port_info", {{"device", "mlx4_0"}, {"port", "2"}},
                    "netdev"),
            "ib1");
}

// Real sysfs: class/infiniband/<dev> and <dev>/device are symlinks into
// /sys/devices; the collectors must follow them.
TEST_F(BadInputTest, FollowsRealSysfsSymlinks) {
  const std::string pci = "devices/pci0000:00/0000:00:02.0/0000:3b:00.0";
  Write(pci + "/infiniband/mlx5_4/ports/1/state", "4: ACTIVE\n");
  Write(pci + "/infiniband/mlx5_4/ports/1/counters/port_rcv_data", "5\n");
  Write(pci + "/infiniband/mlx5_4/ports/1/hw_counters/np_cnp_sent", "6\n");
  Write(pci + "/net/eth2/dev_port", "0\n");
  fs::create_directory_symlink("../..",
                               root_ / pci / "infiniband/mlx5_4/device");
  fs::create_directory_symlink("../../" + pci + "/infiniband/mlx5_4",
                               root_ / "class/infiniband/mlx5_4");
  std::shared_ptr<const Sysfs> sysfs = MakeRealSysfs(root_.string());
  auto c = testing::RunOn(MakeIbPortCollector, sysfs);
  const std::map<std::string, std::string> port = {{"device", "mlx5_4"},
                                                   {"port", "1"}};
  EXPECT_EQ(c.Value("fabric_port_receive_bytes_total", port), 20.0);
  EXPECT_EQ(c.Label("fabric_port_info", port, "netdev"), "eth2");
  auto hw = testing::RunOn(MakeHwCountersCollector, sysfs);
  EXPECT_EQ(hw.Value("fabric_roce_cnp_sent_total", port), 6.0);
}

}  // namespace
}  // namespace fabric
