// The tests' FakeSysfs (tests/support/fake_sysfs.h) must answer like the
// real Sysfs, or a test on it proves nothing about the host: the same tree
// (files, an empty directory, sysfs-style relative symlinks, a dangling
// link, a loop) is built on disk and in the fake and every call compared.
// What the disk cannot do as root (fail a read with EACCES, change between
// a listing and a read, compute contents at each read) is checked on the
// fake alone.
#include "tests/support/fake_sysfs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

// Renders one call's answer, so a mismatch prints both sides.
std::string Answer(const Sysfs& sysfs, const std::string& path) {
  std::string out = "read ";
  const ReadResult r = sysfs.Read(path);
  out += r.ok() ? "'" + *r + "'" : std::to_string(r.error().value());
  out += "; list ";
  std::error_code error;
  if (auto names = sysfs.List(path, &error)) {
    for (const auto& name : *names) out += name + ",";
  } else {
    out += std::to_string(error.value());
  }
  out += "; link '" + sysfs.ReadLink(path) + "'";
  out += sysfs.IsDirectory(path) ? "; dir" : "; not dir";
  return out;
}

class FakeSysfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    root_ = tmp_.path();
  }

  void File(const std::string& path, const std::string& data) {
    fake_.File(path, data);
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << data;
  }
  void Dir(const std::string& path) {
    fake_.Dir(path);
    fs::create_directories(root_ / path);
  }
  void Link(const std::string& path, const std::string& target) {
    fake_.Link(path, target);
    fs::create_directories((root_ / path).parent_path());
    fs::create_symlink(target, root_ / path);
  }

  testing::TempDir tmp_{"fabricmon_fake"};
  fs::path root_;
  testing::FakeSysfs fake_;
};

TEST_F(FakeSysfsTest, AnswersLikeTheRealOne) {
  const std::string pci = "devices/pci0000:00/0000:3b:00.0";
  const std::string dev = pci + "/infiniband/mlx5_4";
  File(dev + "/ports/1/state", "4: ACTIVE\n");
  File(dev + "/ports/1/counters/port_rcv_data", "5\n");
  File(dev + "/ports/1/counters/symbol_error", "");
  Dir(dev + "/ports/power");
  File(pci + "/net/eth2/dev_port", "0\n");
  Link(dev + "/device", "../..");
  Link("class/infiniband/mlx5_4", "../../" + dev);
  Link("class/infiniband/gone", "../../devices/nowhere");
  Link("class/loop/a", "b");
  Link("class/loop/b", "a");
  // Written through a link, as a test may do: lands in the real directory.
  File("class/infiniband/mlx5_4/node_guid", "0002:c903:0000:1a2c\n");

  const std::string by_class = "class/infiniband/mlx5_4";
  const std::vector<std::string> paths = {
      "",
      "class",
      "class/infiniband",
      by_class,
      by_class + "/node_guid",
      by_class + "/ports",
      by_class + "/ports/1/counters",
      by_class + "/ports/1/counters/port_rcv_data",
      by_class + "/ports/1/counters/symbol_error",
      by_class + "/ports/1/state/x",
      by_class + "/ports/power",
      by_class + "/device",
      by_class + "/device/net/eth2/dev_port",
      by_class + "/device/infiniband/mlx5_4/device/net",
      by_class + "/../mlx5_4/ports/1/state",
      dev,
      dev + "/node_guid",
      "class/infiniband/gone",
      "class/loop/a",
      "class/loop/a/x",
      "class/missing",
      "class/missing/x",
  };
  auto real = MakeRealSysfs(root_.string());
  for (const auto& path : paths) {
    EXPECT_EQ(Answer(fake_, path), Answer(*real, path))
        << "path '" << path << "'";
  }
}

TEST_F(FakeSysfsTest, ComputedFileIsComputedAtEachRead) {
  int shows = 0;
  fake_.ComputedFile("class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
                     [&shows] { return std::to_string(++shows) + "\n"; });
  const std::string path =
      "class/infiniband/mlx5_0/ports/1/counters/port_rcv_data";
  EXPECT_EQ(*fake_.Read(path), "1\n");
  EXPECT_EQ(*fake_.Read(path), "2\n");
  EXPECT_EQ(fake_.List("class/infiniband/mlx5_0/ports/1/counters", nullptr),
            std::vector<std::string>{"port_rcv_data"});
  EXPECT_EQ(shows, 2);  // a listing does not compute contents
}

TEST_F(FakeSysfsTest, FailuresHooksRemovalAndTheCallLog) {
  fake_.File("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "eth0\n");
  fake_.Fail("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/1", EINVAL);
  fake_.File("class/infiniband/mlx5_9/ports/1/state", "4: ACTIVE\n");
  fake_.OnList("class/infiniband",
               [this] { fake_.Remove("class/infiniband/mlx5_9"); });

  const std::string ndevs = "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs";
  // A failing entry is listed and fails with its errno.
  EXPECT_EQ(fake_.List(ndevs, nullptr), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(fake_.Read(ndevs + "/1").error().value(), EINVAL);
  fake_.Fail(ndevs, EACCES);
  std::error_code error;
  EXPECT_EQ(fake_.List(ndevs, &error), std::nullopt);
  EXPECT_EQ(error.value(), EACCES);

  // The listing that ran the hook still names mlx5_9; then it is gone.
  EXPECT_EQ(fake_.List("class/infiniband", nullptr),
            (std::vector<std::string>{"mlx5_0", "mlx5_9"}));
  EXPECT_EQ(fake_.Read("class/infiniband/mlx5_9/ports/1/state").error().value(),
            ENOENT);
  EXPECT_FALSE(fake_.IsDirectory("class/infiniband/mlx5_9"));

  EXPECT_EQ(fake_.Reads(ndevs + "/1"), 1);
  EXPECT_EQ(fake_.Reads(ndevs + "/0"), 0);
  EXPECT_EQ(fake_.Reads(), 2);
  EXPECT_EQ(fake_.calls(), (std::vector<std::string>{
                               "list " + ndevs, "read " + ndevs + "/1",
                               "list " + ndevs, "list class/infiniband",
                               "read class/infiniband/mlx5_9/ports/1/state",
                               "isdir class/infiniband/mlx5_9"}));
}

}  // namespace
}  // namespace fabric
