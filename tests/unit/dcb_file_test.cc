// The file-backed DCB source (sources/dcb_file.h): ParseDcbText on the
// text iproute2's `dcb` prints (PFC, ETS, APP table with numeric and named
// DSCP values), layout freedom and comments, unknown keys skipped, malformed
// values rejecting the whole dump; FileDcbSource on a directory (missing
// file = no DCB, unusable names, oversized files); EmitDcbMetrics on a
// parsed dump giving the fabric_roce_pfc_enabled/trust series; the roce
// collector's `dcb_dir` setting (parsed through ParseConfig) and the
// registry's roce collector reading a simulated host's DCB dump with it.
#include "sources/dcb_file.h"

#include <gtest/gtest.h>
#include <linux/dcbnl.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "collectors/registry.h"
#include "collectors/roce.h"
#include "config/config.h"
#include "core/metric_sink.h"
#include "simulator/model.h"
#include "simulator/render.h"
#include "sources/ethtool_file.h"
#include "sources/sysfs.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;

// What `dcb -s pfc show dev eth2; dcb ets show dev eth2; dcb -N app show dev
// eth2` prints for a RoCE port with PFC on priority 3 and DSCP trust.
constexpr const char* kDump =
    "pfc-cap 8 macsec-bypass off delay 0 \n"
    "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n"
    "requests 0:0 1:0 2:0 3:1234 4:0 5:0 6:0 7:0 \n"
    "indications 0:0 1:0 2:0 3:56 4:0 5:0 6:0 7:0 \n"
    "willing off ets-cap 8 cbs off \n"
    "tc-bw 0:50 1:0 2:0 3:50 4:0 5:0 6:0 7:0 \n"
    "tc-tsa 0:ets 1:strict 2:strict 3:ets 4:strict 5:strict 6:strict "
    "7:strict \n"
    "prio-tc 0:0 1:0 2:0 3:3 4:0 5:0 6:0 7:0 \n"
    "dscp-prio 26:3 48:6 \n";

TEST(DcbFileParseTest, ReadsPfcEtsAndAppTable) {
  const DcbResult r = ParseDcbText(kDump);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->pfc.has_value());
  EXPECT_EQ(r->pfc->cap, 8);
  EXPECT_EQ(r->pfc->enabled, 1u << 3);
  EXPECT_EQ(r->pfc->delay, 0);
  EXPECT_EQ(r->pfc->requests[3], 1234u);
  EXPECT_EQ(r->pfc->indications[3], 56u);
  EXPECT_EQ(r->pfc->requests[0], 0u);
  ASSERT_TRUE(r->ets.has_value());
  EXPECT_FALSE(r->ets->willing);
  EXPECT_EQ(r->ets->ets_cap, 8);
  EXPECT_EQ(r->ets->prio_tc[3], 3);
  EXPECT_EQ(r->ets->prio_tc[0], 0);
  ASSERT_TRUE(r->has_app_table);
  ASSERT_EQ(r->apps.size(), 2u);
  EXPECT_EQ(r->apps[0].selector, IEEE_8021QAZ_APP_SEL_DSCP);
  EXPECT_EQ(r->apps[0].protocol, 26);
  EXPECT_EQ(r->apps[0].priority, 3);
  EXPECT_EQ(r->Trust(), "dscp");
}

TEST(DcbFileParseTest, NamedDscpValuesAsDcbPrintsThemWithoutN) {
  const DcbResult r = ParseDcbText("dscp-prio AF31:3 CS6:6 EF:5\n");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->apps.size(), 3u);
  EXPECT_EQ(r->apps[0].protocol, 26);
  EXPECT_EQ(r->apps[1].protocol, 48);
  EXPECT_EQ(r->apps[2].protocol, 46);
}

TEST(DcbFileParseTest, PcpOnlyAppTableIsPcpTrustAndNoAppTableIsNoTrust) {
  const DcbResult pcp = ParseDcbText("default-prio 0\nethtype-prio 0x8906:3\n");
  ASSERT_TRUE(pcp.ok());
  EXPECT_TRUE(pcp->has_app_table);
  EXPECT_EQ(pcp->Trust(), "pcp");
  ASSERT_EQ(pcp->apps.size(), 2u);
  EXPECT_EQ(pcp->apps[1].protocol, 0x8906);
  const DcbResult none = ParseDcbText("prio-pfc 0:on\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_app_table);
  EXPECT_EQ(none->Trust(), "");
  EXPECT_FALSE(none->ets.has_value());
  ASSERT_TRUE(none->pfc.has_value());
  EXPECT_EQ(none->pfc->enabled, 1);
}

TEST(DcbFileParseTest, CommentsLayoutAndUnknownKeys) {
  const DcbResult r = ParseDcbText(
      "# written by fabricmon-sim\n"
      "prio-pfc 3:on   # RoCE\n"
      "  4:on\n"
      "buffer-size 0:256K 1:0\n"  // a key this parser does not know
      "pfc-cap 8\r\n");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->pfc.has_value());
  EXPECT_EQ(r->pfc->enabled, (1u << 3) | (1u << 4));
  EXPECT_EQ(r->pfc->cap, 8);
}

TEST(DcbFileParseTest, EmptyTextIsNoConfiguration) {
  const DcbResult r = ParseDcbText("");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->pfc.has_value());
  EXPECT_FALSE(r->ets.has_value());
  EXPECT_FALSE(r->has_app_table);
}

TEST(DcbFileParseTest, MalformedValuesRejectTheWholeDump) {
  for (const char* bad : {
           "prio-pfc 8:on\n",           // priority out of range
           "prio-pfc 3:maybe\n",        // not on/off
           "prio-pfc 3:\n",             // no value
           "pfc-cap 9\n",               // more than 8 traffic classes
           "pfc-cap\n",                 // scalar without a value
           "willing yes\n",             // not on/off
           "delay 70000\n",             // over 16 bits
           "requests 3:-1\n",           // negative
           "requests 3:12abc\n",        // trailing garbage
           "prio-tc 0:8\n",             // traffic class out of range
           "dscp-prio 64:3\n",          // DSCP is 6 bits
           "dscp-prio XX1:3\n",         // unknown DSCP name
           "dscp-prio 26:9\n",          // priority out of range
           "ethtype-prio 0x1ffff:3\n",  // over 16 bits
           "default-prio x\n",
       }) {
    const DcbResult r = ParseDcbText(bad);
    EXPECT_EQ(r.error(), std::errc::bad_message) << bad;
  }
}

class DcbFileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
  }
  testing::TempDir tmp_{"dcb_file"};
  fs::path dir_;
};

TEST_F(DcbFileSourceTest, ReadsTheNetdevsFile) {
  std::ofstream(dir_ / "bond0") << kDump;
  FileDcbSource source(dir_.string());
  const DcbResult r = source.Ieee("bond0");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_TRUE(r->pfc.has_value());
  EXPECT_EQ(r->pfc->enabled, 1u << 3);
}

TEST_F(DcbFileSourceTest, MissingFileIsNoDcbAndBadNamesAreNoDevice) {
  FileDcbSource source(dir_.string());
  EXPECT_EQ(source.Ieee("eth9").error(), std::errc::operation_not_supported);
  EXPECT_EQ(source.Ieee("../etc").error(), std::errc::no_such_device);
  EXPECT_EQ(source.Ieee("").error(), std::errc::no_such_device);
  FileDcbSource nowhere((dir_ / "absent").string());
  EXPECT_EQ(nowhere.Ieee("eth0").error(), std::errc::operation_not_supported);
}

TEST_F(DcbFileSourceTest, OversizedAndMalformedFilesAreErrors) {
  std::ofstream(dir_ / "big") << std::string(kMaxDcbDumpBytes + 1, ' ');
  std::ofstream(dir_ / "bad") << "prio-pfc 3:sometimes\n";
  FileDcbSource source(dir_.string());
  EXPECT_EQ(source.Ieee("big").error(), std::errc::file_too_large);
  EXPECT_EQ(source.Ieee("bad").error(), std::errc::bad_message);
}

TEST(DcbFileMetricsTest, ParsedDumpGivesPfcEnabledAndTrustSeries) {
  const DcbResult r = ParseDcbText(kDump);
  ASSERT_TRUE(r.ok());
  MetricSink sink;
  EmitDcbMetrics(*r, RoceNetdev{"mlx5_bond_0", "1", "bond0"}, sink);
  int pfc_on = 0, pfc_series = 0, trust_dscp = 0;
  for (const auto& family : sink.Take()) {
    for (const auto& m : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      if (family.name == "fabric_roce_pfc_enabled") {
        ++pfc_series;
        if (m.gauge.value == 1) {
          ++pfc_on;
          EXPECT_EQ(labels["priority"], "3");
        }
      }
      if (family.name == "fabric_roce_trust_info" &&
          labels["trust"] == "dscp") {
        ++trust_dscp;
      }
    }
  }
  EXPECT_EQ(pfc_series, 8);
  EXPECT_EQ(pfc_on, 1);
  EXPECT_EQ(trust_dscp, 1);
}

std::vector<CollectorKeys> RoceSpec() {
  for (const auto& spec : CollectorSpecs()) {
    if (spec.name == "roce") return {spec};
  }
  ADD_FAILURE() << "no roce collector in this build";
  return {};
}

TEST(DcbFileSettingsTest, DcbDirIsAnAbsolutePathDefaultEmpty) {
  std::string error;
  auto none = ParseConfig("log_level: info\n", RoceSpec(), &error);
  ASSERT_TRUE(none) << error;
  EXPECT_EQ(SettingsAs<RoceSettings>(none->Collector("roce")).dcb_dir, "");
  auto set =
      ParseConfig("collectors:\n  roce:\n    dcb_dir: /dev/shm/sim/host0/dcb\n",
                  RoceSpec(), &error);
  ASSERT_TRUE(set) << error;
  EXPECT_EQ(SettingsAs<RoceSettings>(set->Collector("roce")).dcb_dir,
            "/dev/shm/sim/host0/dcb");
  EXPECT_FALSE(ParseConfig("collectors:\n  roce:\n    dcb_dir: sim/dcb\n",
                           RoceSpec(), &error));
  EXPECT_NE(error.find("collectors.roce.dcb_dir (line 3)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("not an absolute directory path"), std::string::npos)
      << error;
}

// The registry's roce collector on a simulated host: ethtool and DCB from
// the dumps the simulator writes, so fabric_roce_pfc_enabled and the trust
// mode are exported without DCB netlink.
TEST(DcbFileSettingsTest, RoceCollectorReadsTheSimulatorsDcbDump) {
  testing::TempDir tmp("fabricmon-dcb-roce");
  ASSERT_FALSE(tmp.path().empty());
  const fs::path root = tmp.path();
  sim::SimConfig sim_config;
  sim_config.hosts = 1;
  sim::Cluster cluster(sim_config);
  sim::SysfsRenderer renderer(root, 0);
  std::string error;
  ASSERT_TRUE(renderer.Render(cluster, &error)) << error;

  auto config = ParseConfig(
      "collectors:\n  roce:\n    dcb_dir: " + (root / "dcb").string() + "\n",
      RoceSpec(), &error);
  ASSERT_TRUE(config) << error;
  CollectorEnv env;
  env.sysfs = MakeRealSysfs(root.string());
  const std::string ethtool_dir = (root / "ethtool").string();
  env.ethtool = [ethtool_dir] { return MakeFileEthtoolSource(ethtool_dir); };
  env.ethtool_is_kernel = false;
  auto collector = MakeCollector("roce", env, config->Collector("roce"));
  ASSERT_TRUE(collector);
  MetricSink sink;
  EXPECT_TRUE(collector->Collect(sink));
  std::map<std::string, double> pfc;
  std::string trust;
  for (const auto& family : sink.Take()) {
    for (const auto& m : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      if (family.name == "fabric_roce_pfc_enabled") {
        EXPECT_EQ(labels["netdev"], "bond0");
        EXPECT_EQ(labels["device"], "mlx5_bond_0");
        pfc[labels["priority"]] = m.gauge.value;
      }
      if (family.name == "fabric_roce_trust_info") trust = labels["trust"];
    }
  }
  EXPECT_EQ(pfc.size(), 8u);
  EXPECT_EQ(pfc["3"], 1);
  EXPECT_EQ(pfc["0"], 0);
  EXPECT_EQ(trust, "dscp");
}

}  // namespace
}  // namespace fabric
