// The shared device/port walk (sources/ib_walk.h): which devices and
// ports it yields, what it does when class/infiniband or a device's ports/
// cannot be listed (with and without a sink for skips), and that the
// storage-reusing overload gives what a fresh walk gives.
#include "sources/ib_walk.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "tests/support/fake_sysfs.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

// "device:port,port;device:..." for compact comparisons.
std::string Show(const IbPortList& walk) {
  std::string out;
  for (const auto& d : walk.devices) {
    if (!out.empty()) out += ";";
    out += d.device + ":";
    for (std::size_t i = 0; i < d.ports.size(); ++i) {
      out += (i ? "," : "") + d.ports[i];
    }
    EXPECT_EQ(d.dir, "class/infiniband/" + d.device);
  }
  return out;
}

IbPortList Walk(const Sysfs& fs, const DeviceFilter& filter,
                MetricSink* skips) {
  auto reader = fs.NewReader();
  reader->Begin();
  return ListIbPorts(*reader, filter, skips);
}

// Directories `<dir>/<name>` for each name.
void Dirs(testing::FakeSysfs& fs, const std::string& dir,
          const std::vector<std::string>& names) {
  for (const auto& name : names) fs.Dir(dir + "/" + name);
}

// The walk lists only: directories, no files.
void TwoDevices(testing::FakeSysfs& fs) {
  // Listed sorted as a directory listing is, so 10 before 2; "power" is
  // not a port (old kernels had such entries next to the port numbers).
  Dirs(fs, "class/infiniband/mlx5_0/ports", {"1", "10", "2", "9", "power"});
  Dirs(fs, "class/infiniband/mlx5_1/ports", {"1"});
  Dirs(fs, "class/infiniband/mlx5_bond_0/ports", {"1"});
}

TEST(IbWalkTest, NumericPortsInNumericOrderOfAllowedDevices) {
  testing::FakeSysfs fs;
  TwoDevices(fs);
  MetricSink sink;
  IbPortList walk = Walk(fs, {}, &sink);
  EXPECT_TRUE(walk.ok);
  EXPECT_FALSE(walk.error);
  EXPECT_EQ(Show(walk), "mlx5_0:1,2,9,10;mlx5_1:1;mlx5_bond_0:1");
  EXPECT_EQ(sink.skipped(), 0u);

  DeviceFilter no_bond{{}, {"mlx5_bond_.*"}};
  EXPECT_EQ(Show(Walk(fs, no_bond, nullptr)), "mlx5_0:1,2,9,10;mlx5_1:1");
  DeviceFilter only_1{{"mlx5_1"}, {}};
  EXPECT_EQ(Show(Walk(fs, only_1, nullptr)), "mlx5_1:1");
}

TEST(IbWalkTest, DeviceWhosePortsVanishedIsLeftOut) {
  testing::FakeSysfs fs;
  TwoDevices(fs);
  // Still listed in class/infiniband, its ports/ gone (removed between the
  // two listings).
  fs.Dir("class/infiniband/mlx5_1");
  fs.Remove("class/infiniband/mlx5_1/ports");
  MetricSink sink;
  IbPortList walk = Walk(fs, {}, &sink);
  EXPECT_TRUE(walk.ok);  // a race, not a failed collection
  EXPECT_EQ(Show(walk), "mlx5_0:1,2,9,10;mlx5_bond_0:1");
  ASSERT_EQ(sink.skipped(), 1u);
  EXPECT_EQ(sink.skip_reasons().at(0),
            "class/infiniband/mlx5_1: ports/ not listable");
  // Without a sink the same walk is quiet (roce, congestion).
  EXPECT_EQ(Show(Walk(fs, {}, nullptr)), "mlx5_0:1,2,9,10;mlx5_bond_0:1");
}

TEST(IbWalkTest, AbsentClassDirectoryIsNoRdmaStack) {
  for (int absent : {ENOENT, ENOTDIR}) {
    testing::FakeSysfs fs;
    fs.Fail("class/infiniband", absent);
    MetricSink sink;
    IbPortList walk = Walk(fs, {}, &sink);
    EXPECT_TRUE(walk.ok) << absent;
    EXPECT_EQ(walk.error.value(), absent);  // for callers with stricter rules
    EXPECT_TRUE(walk.devices.empty());
    EXPECT_EQ(sink.skipped(), 0u);
  }
}

TEST(IbWalkTest, UnlistableClassDirectoryFails) {
  testing::FakeSysfs fs;
  TwoDevices(fs);
  fs.Fail("class/infiniband", EACCES);
  MetricSink sink;
  IbPortList walk = Walk(fs, {}, &sink);
  EXPECT_FALSE(walk.ok);
  EXPECT_EQ(walk.error, std::errc::permission_denied);
  EXPECT_TRUE(walk.devices.empty());
  EXPECT_EQ(sink.skipped(), 1u);

  auto reader = fs.NewReader();
  reader->Begin();
  IbDeviceList list = ListIbDevices(*reader, {}, nullptr);
  EXPECT_FALSE(list.ok);
  EXPECT_EQ(list.error, std::errc::permission_denied);
}

TEST(IbWalkTest, DeviceListingClearsTheErrorOnSuccess) {
  testing::FakeSysfs fs;
  TwoDevices(fs);
  auto reader = fs.NewReader();
  reader->Begin();
  IbDeviceList list = ListIbDevices(*reader, DeviceFilter{{}, {"mlx5_0"}});
  EXPECT_TRUE(list.ok);
  EXPECT_FALSE(list.error);
  EXPECT_EQ(list.devices, (std::vector<std::string>{"mlx5_1", "mlx5_bond_0"}));
}

TEST(IbWalkTest, ReusedResultMatchesAFreshWalk) {
  testing::FakeSysfs fs;
  TwoDevices(fs);
  IbPortList kept;
  auto reader = fs.NewReader();
  auto step = [&] {
    reader->Begin();
    ListIbPorts(*reader, {}, nullptr, kept);
    IbPortList fresh = Walk(fs, {}, nullptr);
    EXPECT_EQ(Show(kept), Show(fresh));
    EXPECT_EQ(kept.ok, fresh.ok);
    EXPECT_EQ(kept.error, fresh.error);
  };
  step();
  // Devices go, come back renamed, lose ports; the class directory breaks
  // and recovers.
  fs.Remove("class/infiniband/mlx5_0");
  fs.Remove("class/infiniband/mlx5_bond_0");
  Dirs(fs, "class/infiniband/mlx5_7/ports", {"2", "1"});
  step();
  EXPECT_EQ(Show(kept), "mlx5_1:1;mlx5_7:1,2");
  fs.Fail("class/infiniband", EIO);
  step();
  EXPECT_FALSE(kept.ok);
  EXPECT_TRUE(kept.devices.empty());
  fs.Remove("class/infiniband");
  TwoDevices(fs);
  step();
  EXPECT_EQ(Show(kept), "mlx5_0:1,2,9,10;mlx5_1:1;mlx5_bond_0:1");
}

TEST(IbWalkTest, RecordedH100TreeThroughTheCachingReader) {
  auto fs = MakeRealSysfs(testing::Fixture("real/sysfs-gpud-h100"),
                          SysfsCacheMode::kInotify);
  auto reader = fs->NewReader();
  for (int collection = 0; collection < 2; ++collection) {
    reader->Begin();
    MetricSink sink;
    IbPortList walk = ListIbPorts(*reader, {}, &sink);
    EXPECT_TRUE(walk.ok);
    EXPECT_EQ(Show(walk),
              "mlx5_0:1;mlx5_1:1;mlx5_4:1;mlx5_5:1;mlx5_6:1;mlx5_7:1;"
              "mlx5_8:1;mlx5_9:1;mlx5_bond_0:1");
    EXPECT_EQ(sink.skipped(), 0u);
  }
}

}  // namespace
}  // namespace fabric
