// The rendered live sysfs tree: same devices and files as the recorded H100
// host, atomic updates, device removal, and the collectors reading it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "simulator/dcb.h"
#include "simulator/ethtool.h"
#include "simulator/model.h"
#include "simulator/render.h"
#include "sources/dcb_file.h"
#include "sources/ethtool_file.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"

namespace fabric::sim {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

// tests/support/temp_dir.h's, with a path to join onto.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("simrender") {}
  fs::path path() const { return testing::TempDir::path(); }
};

// Files (relative paths) below `dir`, following nothing.
std::set<std::string> Files(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
  }
  return out;
}

std::set<std::string> Entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

std::string Read(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SimConfig Config(Scenario s, Duration start = Duration(0),
                 Duration duration = Duration(0)) {
  SimConfig c;
  c.hosts = 2;
  c.timeline = SingleScenario(s);
  c.timeline.events[0].start = start;
  c.timeline.events[0].duration = duration;
  return c;
}

// Attributes real kernels have that the recorded H100 capture left out.
const std::set<std::string> kExtraDeviceFiles = {"node_guid", "sys_image_guid",
                                                 "node_desc"};
const std::set<std::string> kExtraPortFiles = {
    "ports/1/lid",      "ports/1/sm_lid",
    "ports/1/sm_sl",    "ports/1/lid_mask_count",
    "ports/1/cap_mask", "ports/1/gids/0"};
const std::set<std::string> kExtraRoceFiles = {
    "ports/1/gid_attrs/ndevs/0",
    "ports/1/gid_attrs/types/0",
    "ports/1/hw_counters/np_cnp_sent",
    "ports/1/hw_counters/np_ecn_marked_roce_packets",
    "ports/1/hw_counters/rp_cnp_handled",
    "ports/1/hw_counters/rp_cnp_ignored"};

TEST(SimRender, SameDevicesAndFilesAsTheRecordedH100) {
  TempDir tmp;
  Cluster c(Config(Scenario::kSteady));
  c.Step();
  SysfsRenderer r(tmp.path(), 0);
  std::string error;
  ASSERT_TRUE(r.Render(c, &error)) << error;

  const fs::path real =
      testing::Fixture("real/sysfs-gpud-h100/class/infiniband");
  const fs::path sim = tmp.path() / "class/infiniband";
  ASSERT_EQ(Entries(sim), Entries(real));
  for (const auto& dev : Entries(real)) {
    std::set<std::string> expected = Files(real / dev);
    expected.insert(kExtraDeviceFiles.begin(), kExtraDeviceFiles.end());
    expected.insert(kExtraPortFiles.begin(), kExtraPortFiles.end());
    if (dev == "mlx5_bond_0") {
      expected.insert(kExtraRoceFiles.begin(), kExtraRoceFiles.end());
    }
    EXPECT_EQ(Files(sim / dev), expected) << dev;
  }
  // Static attributes as recorded (the capture has no trailing newline).
  for (const auto& dev : Entries(real)) {
    for (const char* f :
         {"hca_type", "fw_ver", "board_id", "ports/1/link_layer",
          "ports/1/rate", "ports/1/state", "ports/1/phys_state"}) {
      EXPECT_EQ(Read(sim / dev / f), Read(real / dev / f) + "\n")
          << dev << "/" << f;
    }
  }
  // The RoCE netdev with its ECN config tree, like the recorded eth0.
  const fs::path net = tmp.path() / "class/net/bond0";
  EXPECT_EQ(Read(net / "ecn/roce_np/enable/3"), "1\n");
  EXPECT_EQ(Read(net / "ecn/roce_rp/enable/3"), "1\n");
  EXPECT_EQ(Read(net / "ecn/roce_np/min_time_between_cnps"), "4\n");
  EXPECT_EQ(Read(net / "operstate"), "up\n");
  EXPECT_EQ(Read(net / "speed"), "200000\n");
}

TEST(SimRender, UpdatesInPlaceWithoutLeftovers) {
  TempDir tmp;
  Cluster c(Config(Scenario::kSteady));
  SysfsRenderer r(tmp.path(), 1);
  std::string error;
  ASSERT_TRUE(r.Render(c, &error)) << error;
  const fs::path data =
      tmp.path() / "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data";
  EXPECT_EQ(Read(data), "0\n");
  const auto files = Files(tmp.path() / "class");
  for (int i = 0; i < 10; ++i) c.Step();
  ASSERT_TRUE(r.Render(c, &error)) << error;
  const Port* p = c.FindPort(1, "mlx5_0");
  EXPECT_EQ(Read(data),
            std::to_string(p->counters.Get(Ctr::kPortXmitData)) + "\n");
  EXPECT_EQ(Files(tmp.path() / "class"), files);  // no temp files in class/
  EXPECT_TRUE(fs::is_empty(tmp.path() / ".sim-staging"));
}

TEST(SimRender, RemovedDeviceDisappearsAndComesBack) {
  TempDir tmp;
  Cluster c(Config(Scenario::kDeviceRemoved, seconds(1), seconds(1)));
  SysfsRenderer r(tmp.path(), 0);
  std::string error;
  const fs::path dev = tmp.path() / "class/infiniband/mlx5_9";
  ASSERT_TRUE(r.Render(c, &error));
  EXPECT_TRUE(fs::exists(dev));
  for (int i = 0; i < 15; ++i) c.Step();  // t = 1.5 s
  ASSERT_TRUE(r.Render(c, &error)) << error;
  EXPECT_FALSE(fs::exists(dev));
  EXPECT_TRUE(fs::exists(tmp.path() / "class/infiniband/mlx5_8"));
  for (int i = 0; i < 10; ++i) c.Step();  // t = 2.5 s
  ASSERT_TRUE(r.Render(c, &error)) << error;
  EXPECT_TRUE(fs::exists(dev / "ports/1/counters/port_xmit_data"));
  EXPECT_EQ(Files(dev), Files(tmp.path() / "class/infiniband/mlx5_8"));
}

TEST(SimRender, FaultsShowInTheFiles) {
  TempDir tmp;
  SimConfig config = Config(Scenario::kLinkDegraded);
  config.timeline.events.push_back(
      SingleScenario(Scenario::kLinkFlap).events[0]);
  config.timeline.events.push_back(
      SingleScenario(Scenario::kSmFailover).events[0]);
  Cluster c(config);
  for (int i = 0; i < 5; ++i) c.Step();  // t = 0.5 s
  SysfsRenderer r(tmp.path(), 0);
  std::string error;
  ASSERT_TRUE(r.Render(c, &error)) << error;
  const fs::path ib = tmp.path() / "class/infiniband";
  EXPECT_EQ(Read(ib / "mlx5_5/ports/1/rate"), "200 Gb/sec (2X NDR)\n");
  EXPECT_EQ(Read(ib / "mlx5_1/ports/1/state"), "1: DOWN\n");
  EXPECT_EQ(Read(ib / "mlx5_1/ports/1/phys_state"), "2: Polling\n");
  EXPECT_EQ(Read(ib / "mlx5_1/ports/1/counters/link_downed"), "1\n");
  EXPECT_EQ(Read(ib / "mlx5_0/ports/1/sm_lid"), "0x1\n");
  for (int i = 0; i < 20; ++i) c.Step();  // t = 2.5 s: standby took over
  ASSERT_TRUE(r.Render(c, &error)) << error;
  EXPECT_EQ(Read(ib / "mlx5_0/ports/1/sm_lid"), "0x2\n");
  EXPECT_EQ(Read(ib / "mlx5_1/ports/1/state"), "4: ACTIVE\n");
  EXPECT_EQ(Read(ib / "mlx5_bond_0/ports/1/sm_lid"), "0x0\n");
}

TEST(SimRender, EthtoolDumpOfTheRoceNetdevOutsideClass) {
  TempDir tmp;
  Cluster c(Config(Scenario::kPfcStorm));
  SysfsRenderer r(tmp.path(), 0);
  std::string error;
  ASSERT_TRUE(r.Render(c, &error)) << error;
  // One dump per RoCE netdev, at <root>/ethtool/<netdev>, its link settings
  // beside it (<netdev>.link), and nothing else.
  const std::set<std::string> files_want{"bond0", "bond0.link"};
  EXPECT_EQ(Entries(tmp.path() / "ethtool"), files_want);
  const fs::path dump = tmp.path() / "ethtool/bond0";
  EXPECT_EQ(Read(dump).rfind("NIC statistics:\n     rx_packets: ", 0), 0u);
  for (int i = 0; i < 20; ++i) c.Step();  // t = 2 s of storm
  ASSERT_TRUE(r.Render(c, &error)) << error;
  // The file source reads back exactly the simulated source's statistics.
  const EthtoolResult want = SimEthtoolStats(c, 0, "bond0");
  ASSERT_TRUE(want.ok());
  FileEthtoolSource files((tmp.path() / "ethtool").string());
  const EthtoolResult got = files.Stats("bond0");
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(got->skipped_lines, 0u);
  EXPECT_EQ(got->names, want->names);
  EXPECT_EQ(got->values, want->values);
  EXPECT_NE(Read(dump).find("     tx_prio3_pause: 20000\n"), std::string::npos);
  EXPECT_EQ(files.Stats("eth0").error(), std::errc::no_such_device);
  // Replaced by rename: no temp files left in ethtool/ or staging.
  EXPECT_EQ(Entries(tmp.path() / "ethtool"), files_want);
  EXPECT_TRUE(fs::is_empty(tmp.path() / ".sim-staging"));
}

TEST(SimRender, EthtoolDumpGoesWithARemovedRoceDevice) {
  TempDir tmp;
  SimConfig config = Config(Scenario::kDeviceRemoved, seconds(1), seconds(1));
  config.timeline.events[0].device = "mlx5_bond_0";
  Cluster c(config);
  SysfsRenderer r(tmp.path(), 0);
  std::string error;
  ASSERT_TRUE(r.Render(c, &error)) << error;
  FileEthtoolSource files((tmp.path() / "ethtool").string());
  EXPECT_TRUE(files.Stats("bond0").ok());
  for (int i = 0; i < 15; ++i) c.Step();  // t = 1.5 s: removed
  ASSERT_TRUE(r.Render(c, &error)) << error;
  EXPECT_FALSE(fs::exists(tmp.path() / "class/net/bond0"));
  EXPECT_EQ(files.Stats("bond0").error(), std::errc::no_such_device);
  for (int i = 0; i < 10; ++i) c.Step();  // t = 2.5 s: back
  ASSERT_TRUE(r.Render(c, &error)) << error;
  EXPECT_TRUE(files.Stats("bond0").ok());
}

// The DCB dump next to the ethtool one: the expected RoCE configuration
// (PFC on priority 3 only, DSCP trust), with the model's pause counts, read
// back through the daemon's file-backed DcbSource; gone with the device.
TEST(SimRender, DcbDumpOfTheRoceNetdevReadsBackAsTheExpectedConfig) {
  TempDir tmp;
  SimConfig config = Config(Scenario::kPfcStorm);
  config.timeline.events.push_back(config.timeline.events[0]);
  config.timeline.events[1].scenario = Scenario::kDeviceRemoved;
  config.timeline.events[1].device = "mlx5_bond_0";
  config.timeline.events[1].start = seconds(3);
  Cluster c(config);
  SysfsRenderer r(tmp.path(), 0);
  std::string error;
  ASSERT_TRUE(r.Render(c, &error)) << error;
  EXPECT_EQ(Entries(tmp.path() / "dcb"), std::set<std::string>{"bond0"});
  for (int i = 0; i < 20; ++i) c.Step();  // t = 2 s of storm
  ASSERT_TRUE(r.Render(c, &error)) << error;
  FileDcbSource files((tmp.path() / "dcb").string());
  const DcbResult got = files.Ieee("bond0");
  ASSERT_TRUE(got.ok()) << got.error().message() << "\n"
                        << Read(tmp.path() / "dcb/bond0");
  ASSERT_TRUE(got->pfc.has_value());
  EXPECT_EQ(got->pfc->enabled, 1u << kRocePriority);
  EXPECT_EQ(got->pfc->cap, 8);
  // requests = PFC frames sent = the storming NIC's tx pause frames.
  const EthtoolResult stats = SimEthtoolStats(c, 0, "bond0");
  std::uint64_t tx_pause = 0;
  for (std::size_t i = 0; i < stats->names.size(); ++i) {
    if (stats->names[i] == "tx_prio3_pause") tx_pause = stats->values[i];
  }
  EXPECT_GT(tx_pause, 0u);
  EXPECT_EQ(got->pfc->requests[kRocePriority], tx_pause);
  ASSERT_TRUE(got->ets.has_value());
  EXPECT_EQ(got->ets->prio_tc[kRocePriority], kRocePriority);
  EXPECT_EQ(got->Trust(), "dscp");
  EXPECT_EQ(SimDcbText(c, 0, "eth0"), std::nullopt);
  EXPECT_EQ(files.Ieee("eth0").error(), std::errc::operation_not_supported);
  for (int i = 0; i < 15; ++i) c.Step();  // t = 3.5 s: device removed
  ASSERT_TRUE(r.Render(c, &error)) << error;
  EXPECT_EQ(SimDcbText(c, 0, "bond0"), std::nullopt);
  EXPECT_FALSE(fs::exists(tmp.path() / "dcb/bond0"));
}

}  // namespace
}  // namespace fabric::sim
