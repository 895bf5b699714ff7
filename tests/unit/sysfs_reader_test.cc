// The caching SysfsReader (sources/sysfs.h): whatever it keeps between
// collections, a collection must read what a fresh open/read would, on trees
// changed the ways the simulator and the tests change them (files replaced
// by rename, written in place, devices removed and re-created, directories
// renamed in), and it must not hold on to descriptors without bound.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sources/sysfs.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

std::size_t OpenFds() {
  std::size_t n = 0;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    (void)entry;
    ++n;
  }
  return n;
}

class SysfsReaderTest : public ::testing::TestWithParam<SysfsCacheMode> {
 protected:
  // The tree, and the ".gone" directory MoveAway keeps beside it, both in
  // the test's own temporary directory.
  void SetUp() override { fs::create_directories(root_); }

  void Write(const std::string& rel, const std::string& data) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << data;
  }
  // Removes `rel` from the tree the way a vanishing device does, but keeps
  // it alive beside the root so its inode numbers cannot be handed to a
  // re-created one (which would hide the re-creation).
  void MoveAway(const std::string& rel) {
    const fs::path gone = root_.string() + ".gone";
    fs::remove_all(gone);
    fs::rename(root_ / rel, gone);
  }
  // How the simulator writes: a new file renamed over the old one.
  void Replace(const std::string& rel, const std::string& data) {
    const fs::path tmp = root_.string() + ".tmp";
    std::ofstream(tmp) << data;
    fs::rename(tmp, root_ / rel);
  }

  std::unique_ptr<SysfsReader> Reader() {
    return MakeRealSysfsReader(root_.string(), GetParam());
  }

  // A read's content, or its error as "<message>".
  static std::string Show(const ReadResult& result) {
    return result.ok() ? *result : "<" + result.error().message() + ">";
  }
  static std::string Text(SysfsReader& r, const std::string& dir,
                          const std::string& name) {
    return Show(r.Read(dir, name));
  }
  static std::string Fixed(SysfsReader& r, const std::string& dir,
                           const std::string& name) {
    return Show(r.ReadFixed(dir, name));
  }

  static std::vector<std::string> Names(SysfsReader& r, const std::string& dir,
                                        bool stable) {
    std::error_code error;
    const auto* names = r.List(dir, stable, &error);
    if (!names) return {"<" + error.message() + ">"};
    return *names;
  }

  testing::TempDir tmp_{"fabricmon-reader"};
  fs::path root_ = fs::path(tmp_.path()) / "sys";
};

const std::string kPort = "class/infiniband/mlx5_0/ports/1";
const std::string kCounters = kPort + "/counters";

TEST_P(SysfsReaderTest, ReadsWhatAFreshOpenReads) {
  Write(kCounters + "/port_rcv_data", "1\n");
  Write(kCounters + "/port_xmit_data", "2\n");
  Write(kPort + "/state", "4: ACTIVE\n");
  auto r = Reader();
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "1\n");
  EXPECT_EQ(Text(*r, kPort, "counters/port_xmit_data"), "2\n");
  EXPECT_EQ(Names(*r, kCounters, true),
            (std::vector<std::string>{"port_rcv_data", "port_xmit_data"}));
  EXPECT_EQ(Text(*r, kPort, "lid"), "<No such file or directory>");
  EXPECT_EQ(Names(*r, kPort + "/hw_counters", true),
            std::vector<std::string>{"<No such file or directory>"});

  // In place (the bad-input and wrap tests write this way).
  Write(kCounters + "/port_rcv_data", "10\n");
  // By rename (the simulator).
  Replace(kCounters + "/port_xmit_data", "20\n");
  // Files appearing that were absent.
  Write(kPort + "/lid", "0x1\n");
  Write(kPort + "/hw_counters/np_cnp_sent", "5\n");
  for (int round = 0; round < 2; ++round) {
    r->Begin();
    EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "10\n");
    EXPECT_EQ(Text(*r, kCounters, "port_xmit_data"), "20\n");
    EXPECT_EQ(Text(*r, kPort, "lid"), "0x1\n");
    EXPECT_EQ(Names(*r, kPort + "/hw_counters", true),
              std::vector<std::string>{"np_cnp_sent"});
    EXPECT_EQ(Text(*r, kPort + "/hw_counters", "np_cnp_sent"), "5\n");
  }

  // A file removed, then one added.
  fs::remove(root_ / kCounters / "port_rcv_data");
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"),
            "<No such file or directory>");
  EXPECT_EQ(Names(*r, kCounters, true),
            std::vector<std::string>{"port_xmit_data"});
  Write(kCounters + "/symbol_error", "3\n");
  r->Begin();
  EXPECT_EQ(Names(*r, kCounters, true),
            (std::vector<std::string>{"port_xmit_data", "symbol_error"}));
  EXPECT_EQ(Text(*r, kCounters, "symbol_error"), "3\n");
}

// ReadFixed() may answer from a remembered copy, but never one older than
// the file: written in place, replaced by rename, or its device re-created.
TEST_P(SysfsReaderTest, FixedAttributesFollowEveryChange) {
  const std::string dev = "class/infiniband/mlx5_0";
  Write(dev + "/fw_ver", "28.39.1002\n");
  auto r = Reader();
  auto fixed = [&] { return Fixed(*r, dev, "fw_ver"); };
  for (int round = 0; round < 2; ++round) {
    r->Begin();
    EXPECT_EQ(fixed(), "28.39.1002\n");
    EXPECT_EQ(fixed(), "28.39.1002\n");  // within one collection too
  }
  Write(dev + "/fw_ver", "28.40.1000\n");
  r->Begin();
  EXPECT_EQ(fixed(), "28.40.1000\n");
  Replace(dev + "/fw_ver", "28.41.1000\n");
  r->Begin();
  EXPECT_EQ(fixed(), "28.41.1000\n");
  MoveAway(dev);
  r->Begin();
  EXPECT_EQ(fixed(), "<No such file or directory>");
  Write(dev + "/fw_ver", "28.42.1000\n");
  r->Begin();
  EXPECT_EQ(fixed(), "28.42.1000\n");
  EXPECT_EQ(Text(*r, dev, "fw_ver"), "28.42.1000\n");
}

TEST_P(SysfsReaderTest, DeviceVanishesAndComesBackDifferent) {
  Write(kCounters + "/port_rcv_data", "1\n");
  Write("class/infiniband/mlx5_1/ports/1/counters/port_rcv_data", "7\n");
  auto r = Reader();
  r->Begin();
  EXPECT_EQ(Names(*r, "class/infiniband", false),
            (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "1\n");

  MoveAway("class/infiniband/mlx5_0");
  r->Begin();
  EXPECT_EQ(Names(*r, "class/infiniband", false),
            std::vector<std::string>{"mlx5_1"});
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"),
            "<No such file or directory>");
  EXPECT_EQ(Names(*r, kCounters, true),
            std::vector<std::string>{"<No such file or directory>"});

  // Back after a driver reload, with another set of counters.
  Write(kCounters + "/port_rcv_data", "2\n");
  Write(kCounters + "/port_xmit_wait", "3\n");
  r->Begin();
  EXPECT_EQ(Names(*r, "class/infiniband", false),
            (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(Names(*r, kCounters, true),
            (std::vector<std::string>{"port_rcv_data", "port_xmit_wait"}));
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "2\n");
  EXPECT_EQ(
      Text(*r, "class/infiniband/mlx5_1/ports/1/counters", "port_rcv_data"),
      "7\n");
}

// The simulator installs a device as a directory built elsewhere and
// renamed into place.
TEST_P(SysfsReaderTest, DirectoryRenamedIntoPlace) {
  Write(kCounters + "/port_rcv_data", "1\n");
  auto r = Reader();
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "1\n");
  const fs::path staging = root_.string() + ".staging";
  const fs::path old = root_.string() + ".old";
  fs::remove_all(staging);
  fs::remove_all(old);
  fs::create_directories(staging / "ports/1/counters");
  std::ofstream(staging / "ports/1/counters/port_rcv_data") << "99\n";
  fs::rename(root_ / "class/infiniband/mlx5_0", old);
  fs::rename(staging, root_ / "class/infiniband/mlx5_0");
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "99\n");
  fs::remove_all(old);
}

TEST_P(SysfsReaderTest, FollowsSymlinkedDeviceDirectories) {
  const std::string pci = "devices/pci0000:00/0000:3b:00.0/infiniband/mlx5_4";
  Write(pci + "/ports/1/counters/port_rcv_data", "5\n");
  fs::create_directories(root_ / "class/infiniband");
  fs::create_directory_symlink("../../" + pci,
                               root_ / "class/infiniband/mlx5_4");
  const std::string dir = "class/infiniband/mlx5_4/ports/1/counters";
  auto r = Reader();
  r->Begin();
  EXPECT_EQ(Text(*r, dir, "port_rcv_data"), "5\n");
  // Point the link at another directory.
  const std::string other = "devices/pci0000:00/0000:5e:00.0/infiniband/mlx5_4";
  Write(other + "/ports/1/counters/port_rcv_data", "6\n");
  fs::remove(root_ / "class/infiniband/mlx5_4");
  fs::create_directory_symlink("../../" + other,
                               root_ / "class/infiniband/mlx5_4");
  r->Begin();
  EXPECT_EQ(Text(*r, dir, "port_rcv_data"), "6\n");
}

// class/net/<if> is a symlink on real sysfs; the roce and congestion
// collectors ask whether a netdev is in the tree this way.
TEST_P(SysfsReaderTest, IsDirectoryAsStatSaysAndFollowsChanges) {
  Write("devices/virtual/net/eth0/address", "00:11:22:33:44:55\n");
  fs::create_directories(root_ / "class/net");
  fs::create_directory_symlink("../../devices/virtual/net/eth0",
                               root_ / "class/net/eth0");
  Write("class/net/plain/address", "x\n");
  auto r = Reader();
  r->Begin();
  EXPECT_TRUE(r->IsDirectory("class/net/eth0"));
  EXPECT_TRUE(r->IsDirectory("class/net/plain"));
  EXPECT_TRUE(r->IsDirectory("class/net"));
  EXPECT_FALSE(r->IsDirectory("class/net/plain/address"));  // a file
  EXPECT_FALSE(r->IsDirectory("class/net/eth1"));
  EXPECT_FALSE(r->IsDirectory("class/nope/eth1"));
  // The answers follow the tree from one collection to the next.
  MoveAway("class/net/plain");
  Write("class/net/eth1/address", "y\n");
  fs::remove(root_ / "class/net/eth0");
  r->Begin();
  EXPECT_FALSE(r->IsDirectory("class/net/plain"));
  EXPECT_TRUE(r->IsDirectory("class/net/eth1"));
  EXPECT_FALSE(r->IsDirectory("class/net/eth0"));
  fs::create_directory_symlink("../../devices/virtual/net/eth0",
                               root_ / "class/net/eth0");
  r->Begin();
  EXPECT_TRUE(r->IsDirectory("class/net/eth0"));
  EXPECT_EQ(Text(*r, "class/net/eth0", "address"), "00:11:22:33:44:55\n");
}

TEST_P(SysfsReaderTest, RootRemovedAndRecreated) {
  Write(kCounters + "/port_rcv_data", "1\n");
  auto r = Reader();
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "1\n");
  fs::remove_all(root_);
  r->Begin();
  EXPECT_EQ(Names(*r, "class/infiniband", false),
            std::vector<std::string>{"<No such file or directory>"});
  Write(kCounters + "/port_rcv_data", "2\n");
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "2\n");
}

TEST_P(SysfsReaderTest, KeepsDescriptorsWithinABudget) {
  // Directory handles and kept files alike come from the budget; beyond it
  // files are read with open/read/close and directories by path, and every
  // read still answers. Two readers share one budget; a budget of 0 keeps
  // nothing at all.
  for (int i = 0; i < 100; ++i) {
    Write(kCounters + "/c" + std::to_string(i), std::to_string(i) + "\n");
  }
  for (const std::size_t size : {std::size_t{32}, std::size_t{0}}) {
    SCOPED_TRACE(size);
    auto budget = std::make_shared<FdBudget>(size);
    const std::size_t before = OpenFds();
    {
      auto a = MakeRealSysfsReader(root_.string(), GetParam(), budget);
      auto b = MakeRealSysfsReader(root_.string(), GetParam(), budget);
      for (int round = 0; round < 3; ++round) {
        for (SysfsReader* r : {a.get(), b.get()}) {
          r->Begin();
          ASSERT_EQ(Names(*r, kCounters, true).size(), 100u);
          for (int i = 0; i < 100; ++i) {
            ASSERT_EQ(Text(*r, kCounters, "c" + std::to_string(i)),
                      std::to_string(i) + "\n");
          }
          EXPECT_TRUE(r->IsDirectory(kCounters));
          EXPECT_FALSE(r->IsDirectory(kCounters + "/c1"));
        }
      }
      EXPECT_LE(budget->used(), size);
      // Kept ones plus each reader's inotify instance (in that mode).
      EXPECT_LE(OpenFds(), before + size + 2);
    }
    EXPECT_EQ(budget->used(), 0u);
    EXPECT_EQ(OpenFds(), before);  // all given back
  }
}

// A counter file replaced by a FIFO (or a device node) fails at once
// instead of blocking the collection in open() or read(); once a regular
// file is back it is read again.
TEST_P(SysfsReaderTest, RefusesFilesThatAreNotRegular) {
  Write(kCounters + "/port_rcv_data", "1\n");
  auto r = Reader();
  ASSERT_EQ(::mkfifo((root_ / kCounters / "port_xmit_data").c_str(), 0644), 0);
  fs::create_symlink("/dev/zero", root_ / kCounters / "zero");
  for (int round = 0; round < 2; ++round) {
    r->Begin();
    EXPECT_EQ(Text(*r, kCounters, "port_xmit_data"), "<Invalid argument>");
    EXPECT_EQ(Text(*r, kCounters, "zero"), "<Invalid argument>");
    EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "1\n");
  }
  EXPECT_EQ(Show(MakeRealSysfs(root_.string())->Read(kCounters + "/zero")),
            "<Invalid argument>");
  fs::remove(root_ / kCounters / "port_xmit_data");
  Write(kCounters + "/port_xmit_data", "3\n");
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_xmit_data"), "3\n");
}

// ReadKept() (the congestion sample's reads) answers what Read() answers,
// through the same changes, Begin() or BeginSample() alike.
TEST_P(SysfsReaderTest, KeptReadsAnswerAsReadDoes) {
  Write(kCounters + "/port_rcv_data", "1\n");
  auto r = Reader();
  const auto file = r->Keep(kCounters, "port_rcv_data");
  EXPECT_EQ(r->Keep(kCounters, "port_rcv_data"), file);  // one per path
  const auto absent = r->Keep(kCounters, "port_xmit_wait");
  char buf[64];
  auto kept = [&](SysfsReader::KeptFile f) {
    const auto result = r->ReadKept(f, buf);
    return result.ok() ? std::string(*result)
                       : "<" + result.error().message() + ">";
  };
  r->Begin();
  EXPECT_EQ(kept(file), "1\n");
  EXPECT_EQ(kept(absent), "<No such file or directory>");
  for (bool sample : {false, true}) {
    SCOPED_TRACE(sample ? "BeginSample" : "Begin");
    auto begin = [&] { sample ? r->BeginSample() : r->Begin(); };
    Write(kCounters + "/port_rcv_data", "2\n");  // in place
    begin();
    EXPECT_EQ(kept(file), "2\n");
    Replace(kCounters + "/port_rcv_data", "3\n");  // by rename
    begin();
    EXPECT_EQ(kept(file), "3\n");
    EXPECT_EQ(kept(file), "3\n");
    Write(kCounters + "/port_xmit_wait", "4\n");  // appears
    begin();
    EXPECT_EQ(kept(absent), "4\n");
    fs::remove(root_ / kCounters / "port_xmit_wait");
    begin();
    EXPECT_EQ(kept(absent), "<No such file or directory>");
  }
  // The device goes and comes back with new files (new inodes).
  MoveAway("class/infiniband/mlx5_0");
  r->Begin();
  EXPECT_EQ(kept(file), "<No such file or directory>");
  Write(kCounters + "/port_rcv_data", "5\n");
  r->Begin();
  EXPECT_EQ(kept(file), "5\n");
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "5\n");
  // More than the buffer holds: an error, not a cut value.
  Write(kCounters + "/port_rcv_data", std::string(100, '7'));
  r->Begin();
  EXPECT_EQ(kept(file), "<" + ErrnoError(EOVERFLOW).message() + ">");
}

INSTANTIATE_TEST_SUITE_P(Modes, SysfsReaderTest,
                         ::testing::Values(SysfsCacheMode::kAuto,
                                           SysfsCacheMode::kPerCollection,
                                           SysfsCacheMode::kInotify),
                         [](const auto& info) {
                           switch (info.param) {
                             case SysfsCacheMode::kAuto:
                               return std::string("Auto");
                             case SysfsCacheMode::kPerCollection:
                               return std::string("PerCollection");
                             case SysfsCacheMode::kInotify:
                               return std::string("Inotify");
                             case SysfsCacheMode::kSysfs:
                               return std::string("Sysfs");
                           }
                           return std::string("Unknown");
                         });

// Sysfs mode relies on what kernfs guarantees (attribute files are never
// replaced in place), so only the directory-level rules are tested here on
// a disk tree: a directory that is a new node is re-read entirely; one that
// is the same node keeps its stable listing.
class SysfsModeTest : public SysfsReaderTest {};

TEST_F(SysfsModeTest, NewDirectoryNodeIsReadAgain) {
  Write(kCounters + "/port_rcv_data", "1\n");
  auto r = MakeRealSysfsReader(root_.string(), SysfsCacheMode::kSysfs);
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "1\n");
  EXPECT_EQ(Names(*r, kCounters, true),
            std::vector<std::string>{"port_rcv_data"});
  // Values are re-read from the kept descriptor every collection.
  Write(kCounters + "/port_rcv_data", "2\n");
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "2\n");

  // Device removed: gone at once.
  MoveAway("class/infiniband/mlx5_0");
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"),
            "<No such file or directory>");
  // Re-created (new inodes): new listing and values.
  Write(kCounters + "/port_rcv_data", "3\n");
  Write(kCounters + "/port_xmit_data", "4\n");
  r->Begin();
  EXPECT_EQ(Names(*r, kCounters, true),
            (std::vector<std::string>{"port_rcv_data", "port_xmit_data"}));
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "3\n");
  EXPECT_EQ(Text(*r, kCounters, "port_xmit_data"), "4\n");

  // Unstable listings (class/infiniband) are taken every collection.
  EXPECT_EQ(Names(*r, "class/infiniband", false),
            std::vector<std::string>{"mlx5_0"});
  Write("class/infiniband/mlx5_1/ports/1/state", "4: ACTIVE\n");
  r->Begin();
  EXPECT_EQ(Names(*r, "class/infiniband", false),
            (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
}

// On sysfs a fixed attribute is read once per device node: kernfs never
// rewrites it, so an in-place write (which only a disk tree allows) is not
// seen, while a re-created device directory is read afresh.
TEST_F(SysfsModeTest, FixedAttributeIsKeptUntilTheDeviceIsRecreated) {
  const std::string dev = "class/infiniband/mlx5_0";
  Write(dev + "/fw_ver", "28.39.1002\n");
  auto r = MakeRealSysfsReader(root_.string(), SysfsCacheMode::kSysfs);
  auto fixed = [&] { return Fixed(*r, dev, "fw_ver"); };
  r->Begin();
  EXPECT_EQ(fixed(), "28.39.1002\n");
  Write(dev + "/fw_ver", "28.40.1000\n");
  r->Begin();
  EXPECT_EQ(fixed(), "28.39.1002\n");  // remembered, not read again
  EXPECT_EQ(Text(*r, dev, "fw_ver"), "28.40.1000\n");  // Read() does read

  MoveAway(dev);
  r->Begin();
  EXPECT_EQ(fixed(), "<No such file or directory>");
  Write(dev + "/fw_ver", "28.41.1000\n");
  r->Begin();
  EXPECT_EQ(fixed(), "28.41.1000\n");
}

// BeginSample() (fast polls between full collections) re-reads values from
// the kept descriptors without re-validating directories; the next Begin()
// validates again. (On real sysfs a removed device's kept descriptors fail
// with ENODEV at once and are read again by path; a disk tree cannot show
// that, so here the re-created device waits for Begin().)
TEST_F(SysfsModeTest, SampleReusesTheLastValidation) {
  Write(kCounters + "/port_rcv_data", "1\n");
  auto r = MakeRealSysfsReader(root_.string(), SysfsCacheMode::kSysfs);
  r->BeginSample();  // no Begin() yet: a full one
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "1\n");
  Write(kCounters + "/port_rcv_data", "2\n");
  r->BeginSample();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "2\n");
  MoveAway("class/infiniband/mlx5_0");
  Write(kCounters + "/port_rcv_data", "3\n");  // re-created: new inodes
  r->BeginSample();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "2\n");
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "3\n");
}

// On a local disk tree a sample still applies the inotify events: the
// simulator replaces files by rename every tick.
TEST_F(SysfsModeTest, InotifySampleSeesReplacedFiles) {
  Write(kCounters + "/port_rcv_data", "1\n");
  auto r = MakeRealSysfsReader(root_.string(), SysfsCacheMode::kInotify);
  r->Begin();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "1\n");
  Replace(kCounters + "/port_rcv_data", "2\n");
  r->BeginSample();
  EXPECT_EQ(Text(*r, kCounters, "port_rcv_data"), "2\n");
}

// On sysfs a kept read is one pread() on the kept descriptor; the
// directory is still validated at each Begin(), so a re-created device is
// read afresh there.
TEST_F(SysfsModeTest, KeptReadsValidateAtBegin) {
  Write(kCounters + "/port_rcv_data", "1\n");
  auto r = MakeRealSysfsReader(root_.string(), SysfsCacheMode::kSysfs);
  const auto file = r->Keep(kCounters, "port_rcv_data");
  char buf[64];
  auto kept = [&] {
    const auto result = r->ReadKept(file, buf);
    return result.ok() ? std::string(*result)
                       : "<" + result.error().message() + ">";
  };
  r->Begin();
  EXPECT_EQ(kept(), "1\n");
  Write(kCounters + "/port_rcv_data", "2\n");
  r->BeginSample();
  EXPECT_EQ(kept(), "2\n");
  MoveAway("class/infiniband/mlx5_0");
  Write(kCounters + "/port_rcv_data", "3\n");  // re-created: new inodes
  r->Begin();
  EXPECT_EQ(kept(), "3\n");
  r->BeginSample();
  EXPECT_EQ(kept(), "3\n");
}

TEST(SysfsReaderForwardingTest, KeptReadsGoThroughFullPaths) {
  testing::FakeSysfs fake;
  fake.File("class/infiniband/x/ports/1/counters/port_rcv_data", "12\n");
  auto r = fake.NewReader();
  r->Begin();
  const auto file =
      r->Keep("class/infiniband/x/ports/1/counters", "port_rcv_data");
  char buf[64];
  const auto result = r->ReadKept(file, buf);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "12\n");
  char small[3];
  EXPECT_EQ(r->ReadKept(file, small).error(), std::errc::value_too_large);
  EXPECT_EQ(fake.calls(),
            (std::vector<std::string>{
                "read class/infiniband/x/ports/1/counters/port_rcv_data",
                "read class/infiniband/x/ports/1/counters/port_rcv_data"}));
}

TEST(SysfsReaderForwardingTest, FakesSeeFullPaths) {
  // The default NewReader() goes through Sysfs::Read/List with the joined
  // path, so fakes that fail or watch given paths keep working.
  testing::FakeSysfs fake;
  fake.File("class/infiniband/x/ports/1/gids/0", "1\n");
  auto r = fake.NewReader();
  r->Begin();
  EXPECT_EQ(*r->Read("class/infiniband/x/ports/1", "gids/0"), "1\n");
  std::error_code error;
  const auto* a = r->List("class/infiniband", false, &error);
  const auto* b = r->List("class/infiniband/x/ports", true, &error);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(*a, std::vector<std::string>{"x"});  // still valid after b
  EXPECT_EQ(*b, std::vector<std::string>{"1"});
  EXPECT_EQ(fake.calls(),
            (std::vector<std::string>{"read class/infiniband/x/ports/1/gids/0",
                                      "list class/infiniband",
                                      "list class/infiniband/x/ports"}));
}

}  // namespace
}  // namespace fabric
