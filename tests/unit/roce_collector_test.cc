// Tests for the roce collector: netdev discovery (gid_attrs/ndevs, device/net,
// bond slaves), ethtool + DCB + ECN + GID metrics through injected sources,
// absent sources giving absent metrics, and the ECN tree of the recorded
// tests/fixtures/real/sysfs eth0.
#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "collectors/roce.h"
#include "tests/support/ci.h"
#include "tests/support/fake_dcb.h"
#include "tests/support/fake_ethtool.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/families.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric {
namespace {

using Families = std::vector<prometheus::MetricFamily>;

using testing::ReadFile;  // tests/support/wait.h

std::optional<double> Value(const Families& fams, const std::string& name,
                            const Labels& want) {
  return testing::SampleValue(fams, name, want);
}

std::size_t Count(const Families& fams, const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return f.metric.size();
  }
  return 0;
}

EthtoolResult FromFixture(const std::string& relative, std::string driver) {
  EthtoolText t = ParseEthtoolText(ReadFile(testing::Fixture(relative)));
  EXPECT_EQ(t.bad_lines, 0u);
  t.stats.driver = std::move(driver);
  return std::move(t.stats);
}

// A host with an mlx5 RoCE port, an IB port, and a RoCE LAG bond.
std::shared_ptr<testing::FakeSysfs> RoceHost() {
  auto fs = std::make_shared<testing::FakeSysfs>();
  const std::string p0 = "class/infiniband/mlx5_0/ports/1/";
  fs->File(p0 + "link_layer", "Ethernet\n");
  fs->File(p0 + "gid_attrs/ndevs/0", "ens1f0np0\n");
  fs->File(p0 + "gid_attrs/ndevs/1", "ens1f0np0\n");
  fs->Fail(p0 + "gid_attrs/ndevs/2", EINVAL);
  fs->File(p0 + "gid_attrs/types/0", "IB/RoCE v1\n");
  fs->File(p0 + "gid_attrs/types/1", "RoCE v2\n");
  fs->File(p0 + "gid_attrs/types/3", "RoCE v2\n");
  fs->Fail(p0 + "gid_attrs/types/2", EINVAL);
  fs->File("class/infiniband/mlx5_1/ports/1/link_layer", "InfiniBand\n");
  fs->File("class/infiniband/mlx5_1/device/net/ib0/ifindex", "5\n");
  const std::string b = "class/infiniband/mlx5_bond_0/ports/1/";
  fs->File(b + "link_layer", "Ethernet");
  fs->File(b + "gid_attrs/ndevs/0", "bond0");
  fs->File("class/net/bond0/bonding/slaves", "ens2f0np0 ens2f1np1\n");
  // No gid_attrs here: device/net is the fallback.
  fs->File("class/infiniband/mlx5_2/ports/1/link_layer", "Ethernet\n");
  fs->File("class/infiniband/mlx5_2/device/net/ens3np0/ifindex", "9\n");
  // MLNX_OFED ECN tree for one netdev; one value is garbage.
  for (int p = 0; p < 8; ++p) {
    fs->File("class/net/ens1f0np0/ecn/roce_np/enable/" + std::to_string(p),
             p == 3 ? "1\n" : "0\n");
  }
  fs->File("class/net/ens1f0np0/ecn/roce_rp/enable/3", "1\n");
  fs->File("class/net/ens1f0np0/ecn/roce_rp/enable/4", "yes\n");
  for (const char* nd : {"ens3np0", "ens2f0np0", "ens2f1np1", "eth9"}) {
    fs->File(std::string("class/net/") + nd + "/ifindex", "1\n");
  }
  return fs;
}

TEST(RoceDiscoveryTest, FindsNetdevsOfEthernetPortsOnly) {
  auto fs = RoceHost();
  std::vector<RoceNetdev> got = DiscoverRoceNetdevs(*fs, {});
  std::vector<RoceNetdev> want = {
      {"mlx5_0", "1", "ens1f0np0"},      {"mlx5_2", "1", "ens3np0"},
      {"mlx5_bond_0", "1", "bond0"},     {"mlx5_bond_0", "1", "ens2f0np0"},
      {"mlx5_bond_0", "1", "ens2f1np1"},
  };
  EXPECT_EQ(got, want);
  DeviceFilter only_bond{{"mlx5_bond_.*"}, {}};
  EXPECT_EQ(DiscoverRoceNetdevs(*fs, only_bond).size(), 3u);
}

TEST(RoceDiscoveryTest, HostileNamesAreIgnored) {
  testing::FakeSysfs fs;
  const std::string p = "class/infiniband/x/ports/1/";
  fs.File(p + "link_layer", "Ethernet\n");
  fs.File(p + "gid_attrs/ndevs/0", "../../etc\n");
  fs.File(p + "gid_attrs/ndevs/1", "a_name_much_longer_than_ifnamsiz\n");
  fs.File(p + "gid_attrs/ndevs/2", "\n");
  EXPECT_TRUE(DiscoverRoceNetdevs(static_cast<const Sysfs&>(fs), {}).empty());
}

struct Collected {
  Families families;
  bool ok;
  std::uint64_t skipped;
};

Collected RunRoce(std::shared_ptr<const Sysfs> fs, RoceOptions options,
                  std::unique_ptr<EthtoolSource> ethtool,
                  std::unique_ptr<DcbSource> dcb) {
  CollectorEnv env;
  env.sysfs = std::move(fs);
  auto c = MakeRoceCollector(env, std::move(options), std::move(ethtool),
                             std::move(dcb));
  EXPECT_EQ(c->Name(), "roce");
  MetricSink sink;
  bool ok = c->Collect(sink);
  std::uint64_t skipped = sink.skipped();
  return {sink.Take(), ok, skipped};
}

// The RoceHost tree read through fake ethtool/DCB sources with data on
// every kind of metric.
Collected FullHost() {
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  ethtool->results.insert_or_assign(
      "ens1f0np0", FromFixture("ethtool/mlx5-pfc-prio3.txt", "mlx5_core"));
  ethtool->results.insert_or_assign(
      "ens2f1np1",
      FromFixture("real/ethtool/mlx5_core-cx4lx-ethq-1.txt", "mlx5_core"));
  // No stats: not an error.
  ethtool->results.insert_or_assign("bond0", EthtoolStats{.driver = "bonding"});
  ethtool->results.insert_or_assign("ens3np0",
                                    EthtoolStats{.driver = "mlx5_core"});
  // ens2f0np0 is missing: ENODEV, counted as a skip.
  auto dcb = std::make_unique<testing::FakeDcb>();
  DcbIeee d;
  d.pfc = DcbPfc{};
  d.pfc->cap = 8;
  d.pfc->enabled = 1u << 3;
  d.pfc->requests[3] = 119;
  d.pfc->indications[3] = 4499;
  d.ets = DcbEts{};
  d.ets->willing = false;
  d.ets->prio_tc[3] = 3;
  d.has_app_table = true;
  d.apps.push_back({IEEE_8021QAZ_APP_SEL_DSCP, 3, 26});
  dcb->results.insert_or_assign("ens1f0np0", d);
  dcb->results.insert_or_assign("ens3np0", std::errc::bad_message);

  return RunRoce(RoceHost(), {}, std::move(ethtool), std::move(dcb));
}

TEST(RoceCollectorTest, FullHostThroughInjectedSources) {
  Collected c = FullHost();
  EXPECT_TRUE(c.ok);
  // ENODEV for ens2f0np0, EBADMSG from DCB, garbage rp/enable/4.
  EXPECT_EQ(c.skipped, 3u);
  const Families& f = c.families;
  const Labels n0 = {
      {"device", "mlx5_0"}, {"port", "1"}, {"netdev", "ens1f0np0"}};
  auto L = [&](Labels extra) {
    Labels l = n0;
    l.insert(l.end(), extra.begin(), extra.end());
    return l;
  };
  EXPECT_EQ(Value(f, "fabric_pfc_pause_frames_total",
                  L({{"priority", "3"}, {"direction", "rx"}})),
            4500);
  EXPECT_EQ(Value(f, "fabric_pfc_pause_frames_total",
                  L({{"priority", "3"}, {"direction", "tx"}})),
            120);
  EXPECT_DOUBLE_EQ(*Value(f, "fabric_pfc_pause_duration_seconds_total",
                          L({{"priority", "3"}, {"direction", "rx"}})),
                   2.5);
  EXPECT_DOUBLE_EQ(*Value(f, "fabric_pfc_pause_duration_seconds_total",
                          L({{"priority", "3"}, {"direction", "tx"}})),
                   0.075);
  EXPECT_EQ(Value(f, "fabric_pfc_pause_transitions_total",
                  L({{"priority", "3"}, {"direction", "rx"}})),
            4400);
  // PFC counters exist for priority 3 only: 2 directions on one netdev.
  EXPECT_EQ(Count(f, "fabric_pfc_pause_frames_total"), 2u);
  EXPECT_FALSE(
      Value(f, "fabric_pfc_pause_frames_total", L({{"priority", "0"}})));
  EXPECT_EQ(Value(f, "fabric_pfc_pause_storm_events_total",
                  L({{"level", "warning"}})),
            2);
  EXPECT_EQ(
      Value(f, "fabric_pfc_pause_storm_events_total", L({{"level", "error"}})),
      1);
  EXPECT_EQ(Value(f, "fabric_roce_priority_discarded_packets_total",
                  L({{"priority", "3"}, {"reason", "cong_discard"}})),
            11);
  EXPECT_EQ(Value(f, "fabric_roce_priority_ecn_marked_packets_total",
                  L({{"priority", "3"}})),
            987654);
  EXPECT_EQ(Value(f, "fabric_roce_rx_ecn_marked_packets_total", n0), 1234);
  EXPECT_EQ(Value(f, "fabric_roce_phy_discarded_packets_total",
                  L({{"direction", "rx"}})),
            2048);
  EXPECT_EQ(Value(f, "fabric_roce_global_pause_frames_total",
                  L({{"direction", "tx"}})),
            0);  // from tx_pause_ctrl_phy
  // The bond slave with the recorded CX-4 Lx dump.
  EXPECT_EQ(Value(f, "fabric_roce_priority_bytes_total",
                  {{"device", "mlx5_bond_0"},
                   {"netdev", "ens2f1np1"},
                   {"priority", "0"},
                   {"direction", "rx"}}),
            2202570777997.0);
  EXPECT_EQ(Value(f, "fabric_roce_netdev_info",
                  {{"netdev", "bond0"}, {"driver", "bonding"}}),
            1);
  EXPECT_FALSE(Value(f, "fabric_roce_netdev_info", {{"netdev", "ens2f0np0"}}));
  // ECN config.
  EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled",
                  L({{"priority", "3"}, {"point", "np"}})),
            1);
  EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled",
                  L({{"priority", "2"}, {"point", "np"}})),
            0);
  EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled",
                  L({{"priority", "3"}, {"point", "rp"}})),
            1);
  EXPECT_EQ(Count(f, "fabric_roce_ecn_enabled"), 9u);
  // DCB.
  EXPECT_EQ(Value(f, "fabric_roce_pfc_enabled", L({{"priority", "3"}})), 1);
  EXPECT_EQ(Value(f, "fabric_roce_pfc_enabled", L({{"priority", "4"}})), 0);
  EXPECT_EQ(Count(f, "fabric_roce_pfc_enabled"), 8u);  // only ens1f0np0
  EXPECT_EQ(Value(f, "fabric_roce_dcb_pfc_frames_total",
                  L({{"priority", "3"}, {"direction", "rx"}})),
            4499);
  EXPECT_EQ(Value(f, "fabric_roce_pfc_capable_traffic_classes", n0), 8);
  EXPECT_EQ(Value(f, "fabric_roce_ets_willing", n0), 0);
  EXPECT_EQ(
      Value(f, "fabric_roce_priority_traffic_class", L({{"priority", "3"}})),
      3);
  EXPECT_EQ(Value(f, "fabric_roce_trust_info", L({{"trust", "dscp"}})), 1);
  // GID types of mlx5_0 port 1.
  EXPECT_EQ(Value(f, "fabric_roce_gid_entries",
                  {{"device", "mlx5_0"}, {"port", "1"}, {"type", "roce_v1"}}),
            1);
  EXPECT_EQ(Value(f, "fabric_roce_gid_entries",
                  {{"device", "mlx5_0"}, {"port", "1"}, {"type", "roce_v2"}}),
            2);
  EXPECT_EQ(Count(f, "fabric_roce_gid_entries"), 2u);
}

TEST(RoceCollectorTest, AbsentSourcesGiveAbsentMetrics) {
  // No ethtool source, no DCB source, no ECN tree: nothing but GID counts.
  Collected c = RunRoce(RoceHost(), {}, nullptr, nullptr);
  EXPECT_TRUE(c.ok);
  for (const auto& fam : c.families) {
    EXPECT_TRUE(fam.name == "fabric_roce_gid_entries" ||
                fam.name == "fabric_roce_ecn_enabled")
        << fam.name;
  }
}

TEST(RoceCollectorTest, AllEthtoolReadsFailingIsAFailedCollection) {
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  ethtool->missing = std::errc::permission_denied;  // every netdev
  Collected c = RunRoce(RoceHost(), {}, std::move(ethtool), nullptr);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.skipped, 5u + 1u);  // 5 netdevs + the garbage ECN value
}

TEST(RoceCollectorTest, VanishedNetdevsAreSkipsNotFailure) {
  auto ethtool =
      std::make_unique<testing::FakeEthtool>();  // every netdev: ENODEV
  Collected c = RunRoce(RoceHost(), {}, std::move(ethtool), nullptr);
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 5u + 1u);
}

TEST(RoceCollectorTest, ExtraNetdevsAreReadWithEmptyDeviceLabels) {
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  ethtool->results.insert_or_assign(
      "eth9", EthtoolStats{"virtio_net", {"rx_prio3_pause"}, {5}, ""});
  ethtool->results.insert_or_assign("ens1f0np0",
                                    EthtoolStats{.driver = "mlx5_core"});
  auto calls = ethtool->calls;
  RoceOptions options;
  // ghost0 is not in class/net of the tree: never read (on a recorded tree
  // it would otherwise hit a host interface of the same name).
  options.extra_netdevs = {"eth9", "ens1f0np0", "bad/name", "ghost0"};
  Collected c = RunRoce(RoceHost(), options, std::move(ethtool), nullptr);
  EXPECT_EQ(Value(c.families, "fabric_pfc_pause_frames_total",
                  {{"device", ""}, {"port", ""}, {"netdev", "eth9"}}),
            5);
  // ens1f0np0 was discovered already: read once, with its RDMA labels.
  EXPECT_EQ(std::count(calls->begin(), calls->end(), "ens1f0np0"), 1);
  EXPECT_EQ(std::count(calls->begin(), calls->end(), "bad/name"), 0);
  EXPECT_EQ(std::count(calls->begin(), calls->end(), "ghost0"), 0);
  // ghost0, the garbage ECN value, and the 4 other discovered netdevs this
  // fake has no stats for (ENODEV).
  EXPECT_EQ(c.skipped, 1u + 1u + 4u);
}

TEST(RoceCollectorTest, SameNamedInterfaceWithAnotherAddressIsNotRead) {
  auto fs = RoceHost();
  fs->File("class/net/ens1f0np0/address", "0c:42:a1:00:00:01\n");
  fs->File("class/net/ens3np0/address", "0c:42:a1:00:00:03\n");
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  // The kernel's ens1f0np0 is another interface than the tree's.
  ethtool->results.insert_or_assign(
      "ens1f0np0", FromFixture("ethtool/mlx5-pfc-prio3.txt", "mlx5_core"));
  ethtool->results.at("ens1f0np0")->hw_address = "02:fc:00:00:00:01";
  ethtool->results.insert_or_assign(
      "ens3np0", FromFixture("ethtool/mlx5-pfc-prio3.txt", "mlx5_core"));
  ethtool->results.at("ens3np0")->hw_address = "0c:42:a1:00:00:03";
  auto dcb = std::make_unique<testing::FakeDcb>();
  auto dcb_calls = dcb->calls;
  Collected c = RunRoce(fs, {}, std::move(ethtool), std::move(dcb));
  EXPECT_FALSE(
      Value(c.families, "fabric_roce_netdev_info", {{"netdev", "ens1f0np0"}}));
  EXPECT_FALSE(
      Value(c.families, "fabric_pfc_pause_frames_total",
            {{"netdev", "ens1f0np0"}, {"priority", "3"}, {"direction", "rx"}}));
  EXPECT_EQ(std::count(dcb_calls->begin(), dcb_calls->end(), "ens1f0np0"), 0);
  // The tree's own ECN config of ens1f0np0 is still reported.
  EXPECT_EQ(
      Value(c.families, "fabric_roce_ecn_enabled",
            {{"netdev", "ens1f0np0"}, {"priority", "3"}, {"point", "np"}}),
      1);
  // Matching address: read as usual.
  EXPECT_EQ(
      Value(c.families, "fabric_pfc_pause_frames_total",
            {{"netdev", "ens3np0"}, {"priority", "3"}, {"direction", "rx"}}),
      4500);
}

TEST(RoceCollectorTest, ReadsEcnConfigOfRecordedEth0) {
  std::shared_ptr<const Sysfs> fs =
      MakeRealSysfs(testing::Fixture("real/sysfs"));
  RoceOptions options;
  options.netdevs = std::vector<RoceNetdev>{{"mlx5_0", "1", "eth0"}};
  Collected c = RunRoce(fs, options, nullptr, nullptr);
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.skipped, 0u);
  const Families& f = c.families;
  // roce_np/enable: 1 1 0 1 1 0 1 1; roce_rp/enable: 1 1 0 1 1 0 1 0.
  const int np[8] = {1, 1, 0, 1, 1, 0, 1, 1};
  const int rp[8] = {1, 1, 0, 1, 1, 0, 1, 0};
  for (int p = 0; p < 8; ++p) {
    const std::string prio = std::to_string(p);
    EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled",
                    {{"netdev", "eth0"}, {"priority", prio}, {"point", "np"}}),
              np[p])
        << p;
    EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled",
                    {{"netdev", "eth0"}, {"priority", prio}, {"point", "rp"}}),
              rp[p])
        << p;
  }
  EXPECT_EQ(Count(f, "fabric_roce_ecn_enabled"), 16u);
  // mlx5_0 in this tree is not Ethernet, and there is no gid_attrs anyway.
  EXPECT_EQ(Count(f, "fabric_roce_gid_entries"), 0u);
}

TEST(RoceCollectorTest, RecordedH100TreeHasNoNetdevsToRead) {
  // gpud's H100 tree has the BlueField-3 bond port (Ethernet) but neither
  // gid_attrs nor device/: nothing to read, and that is not a failure.
  std::shared_ptr<const Sysfs> fs =
      MakeRealSysfs(testing::Fixture("real/sysfs-gpud-h100"));
  EXPECT_TRUE(DiscoverRoceNetdevs(*fs, {}).empty());
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  Collected c = RunRoce(fs, {}, std::move(ethtool), nullptr);
  EXPECT_TRUE(c.ok);
  EXPECT_TRUE(c.families.empty());
}

// docs/metrics.md must list every family the collector can emit; the
// golden trees exercise only a few of them, so check the full host here.
TEST(RoceCollectorTest, EveryEmittedFamilyIsInMetricsDoc) {
  std::string doc = ReadFile(testing::SourceDir() + "/docs/metrics.md");
  std::size_t from = doc.find("\n## roce\n");
  ASSERT_NE(from, std::string::npos);
  std::size_t to = doc.find("\n## ", from + 1);
  std::string section = doc.substr(from, to - from);
  Collected c = FullHost();
  ASSERT_GE(c.families.size(), 20u);
  for (const auto& f : c.families) {
    EXPECT_NE(section.find("| `" + f.name + "` |"), std::string::npos)
        << f.name << " is not in the ## roce table of docs/metrics.md";
  }
}

TEST(RoceCollectorTest, FullHostExpositionPassesPromtool) {
  if (std::system("promtool --version >/dev/null 2>&1") != 0) {
    MISSING_DEPENDENCY("promtool not installed");
  }
  Collected c = FullHost();
  std::string path = ::testing::TempDir() + "roce_full_host.prom";
  {
    std::ofstream out(path);
    out << ToText(c.families);
  }
  std::string cmd = "promtool check metrics < " + path + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[256];
  while (std::fgets(buf, sizeof(buf), p)) output += buf;
  int status = ::pclose(p);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "");
}

TEST(RoceGidTypeTest, Labels) {
  EXPECT_EQ(GidTypeLabel("IB/RoCE v1\n"), "roce_v1");
  EXPECT_EQ(GidTypeLabel("RoCE v2"), "roce_v2");
  EXPECT_EQ(GidTypeLabel("Some New-Type"), "some_new_type");
}

// The collector reads through its own SysfsReader, which keeps handles and
// listings between collections on real trees: a tree that changes between
// collections (ECN toggled, the port's netdev renamed) must read as a fresh
// open would, in every cache mode.
TEST(RoceCollectorTest, FollowsTheTreeCollectionAfterCollection) {
  namespace fs = std::filesystem;
  testing::TempDir tmp("fabricmon-roce-reader");
  for (SysfsCacheMode mode :
       {SysfsCacheMode::kPerCollection, SysfsCacheMode::kSysfs,
        SysfsCacheMode::kInotify}) {
    const fs::path root =
        fs::path(tmp.path()) / std::to_string(static_cast<int>(mode));
    auto write = [&](const std::string& rel, const std::string& data) {
      fs::create_directories((root / rel).parent_path());
      if (mode == SysfsCacheMode::kSysfs) {
        // sysfs changes attribute contents in place, never the file.
        std::ofstream(root / rel) << data;
        return;
      }
      const fs::path tmp = root / "tmp";
      std::ofstream(tmp) << data;
      fs::rename(tmp, root / rel);  // how the simulator writes
    };
    const std::string port = "class/infiniband/mlx5_0/ports/1/";
    write(port + "link_layer", "Ethernet\n");
    write(port + "gid_attrs/ndevs/0", "eth0\n");
    write(port + "gid_attrs/types/0", "RoCE v2\n");
    write("class/net/eth0/ecn/roce_np/enable/3", "1\n");
    write("class/net/eth0/address", "00:11:22:33:44:55\n");

    CollectorEnv env;
    env.sysfs = MakeRealSysfs(root.string(), mode);
    auto c = MakeRoceCollector(env, {}, nullptr, nullptr);
    auto collect = [&] {
      MetricSink sink;
      EXPECT_TRUE(c->Collect(sink));
      EXPECT_EQ(sink.skipped(), 0u);
      return sink.Take();
    };
    const Labels np3 = {{"point", "np"}, {"priority", "3"}};
    Families f = collect();
    EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled",
                    {{"netdev", "eth0"}, {"point", "np"}, {"priority", "3"}}),
              1);
    EXPECT_EQ(Value(f, "fabric_roce_gid_entries", {{"type", "roce_v2"}}), 1);
    f = collect();  // unchanged: the same
    EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled", np3), 1);

    write("class/net/eth0/ecn/roce_np/enable/3", "0\n");
    f = collect();
    EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled", np3), 0) << int(mode);

    // udev renames the netdev.
    fs::rename(root / "class/net/eth0", root / "class/net/eth1");
    write(port + "gid_attrs/ndevs/0", "eth1\n");
    f = collect();
    EXPECT_EQ(Value(f, "fabric_roce_ecn_enabled",
                    {{"netdev", "eth1"}, {"point", "np"}, {"priority", "3"}}),
              0)
        << int(mode);
    EXPECT_EQ(Count(f, "fabric_roce_ecn_enabled"), 1u);
  }
}

}  // namespace
}  // namespace fabric
