// The shared device/port walk (sources/ib_walk.h): which devices and
// ports it yields, what it does when class/infiniband or a device's ports/
// cannot be listed (with and without a sink for skips), and that the
// storage-reusing overload gives what a fresh walk gives.
#include "sources/ib_walk.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>

#include "tests/support/paths.h"

namespace fabric {
namespace {

// Directories are listed from `dirs`; `errors` fails a listing with an
// errno; anything else is absent. No file reads: the walk lists only.
class ListingFake final : public Sysfs {
 public:
  ReadResult Read(const std::string&) const override {
    return std::errc::no_such_file_or_directory;
  }
  std::optional<std::vector<std::string>> List(
      const std::string& path, std::error_code* error) const override {
    if (auto e = errors.find(path); e != errors.end()) {
      if (error) *error = {e->second, std::system_category()};
      return std::nullopt;
    }
    if (auto d = dirs.find(path); d != dirs.end()) return d->second;
    if (error)
      *error = std::make_error_code(std::errc::no_such_file_or_directory);
    return std::nullopt;
  }
  std::string ReadLink(const std::string&) const override { return {}; }
  bool IsDirectory(const std::string& path) const override {
    return dirs.count(path) > 0;
  }

  std::map<std::string, std::vector<std::string>> dirs;
  std::map<std::string, int> errors;
};

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

ListingFake TwoDevices() {
  ListingFake fs;
  fs.dirs["class/infiniband"] = {"mlx5_0", "mlx5_1", "mlx5_bond_0"};
  // Sorted as a directory listing is, so 10 before 2; "power" is not a
  // port (old kernels had such entries next to the port numbers).
  fs.dirs["class/infiniband/mlx5_0/ports"] = {"1", "10", "2", "9", "power"};
  fs.dirs["class/infiniband/mlx5_1/ports"] = {"1"};
  fs.dirs["class/infiniband/mlx5_bond_0/ports"] = {"1"};
  return fs;
}

TEST(IbWalkTest, NumericPortsInNumericOrderOfAllowedDevices) {
  ListingFake fs = TwoDevices();
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
  ListingFake fs = TwoDevices();
  fs.dirs.erase("class/infiniband/mlx5_1/ports");  // gone after the listing
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
    ListingFake fs;
    fs.errors["class/infiniband"] = absent;
    MetricSink sink;
    IbPortList walk = Walk(fs, {}, &sink);
    EXPECT_TRUE(walk.ok) << absent;
    EXPECT_EQ(walk.error.value(), absent);  // for callers with stricter rules
    EXPECT_TRUE(walk.devices.empty());
    EXPECT_EQ(sink.skipped(), 0u);
  }
}

TEST(IbWalkTest, UnlistableClassDirectoryFails) {
  ListingFake fs = TwoDevices();
  fs.errors["class/infiniband"] = EACCES;
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
  ListingFake fs = TwoDevices();
  auto reader = fs.NewReader();
  reader->Begin();
  IbDeviceList list = ListIbDevices(*reader, DeviceFilter{{}, {"mlx5_0"}});
  EXPECT_TRUE(list.ok);
  EXPECT_FALSE(list.error);
  EXPECT_EQ(list.devices, (std::vector<std::string>{"mlx5_1", "mlx5_bond_0"}));
}

TEST(IbWalkTest, ReusedResultMatchesAFreshWalk) {
  ListingFake fs = TwoDevices();
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
  fs.dirs["class/infiniband"] = {"mlx5_1", "mlx5_7"};
  fs.dirs["class/infiniband/mlx5_7/ports"] = {"2", "1"};
  step();
  EXPECT_EQ(Show(kept), "mlx5_1:1;mlx5_7:1,2");
  fs.errors["class/infiniband"] = EIO;
  step();
  EXPECT_FALSE(kept.ok);
  EXPECT_TRUE(kept.devices.empty());
  fs.errors.clear();
  fs.dirs["class/infiniband"] = {"mlx5_0", "mlx5_1", "mlx5_bond_0"};
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
