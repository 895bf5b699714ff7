// The roce collector's cable and link health part: mlx5 physical-layer
// ethtool counters (on the recorded ConnectX-4 Lx dump and on a per-lane
// set) and ethtool-netlink FEC statistics through the FecSource seam,
// absent where the NIC or kernel lacks them, and every family they give
// listed in docs/metrics.md.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "collectors/roce.h"
#include "core/metric_names.h"
#include "tests/support/fake_ethtool.h"
#include "tests/support/fake_fec.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/families.h"
#include "tests/support/paths.h"
#include "tests/support/wait.h"

namespace fabric {
namespace {

using Families = std::vector<prometheus::MetricFamily>;

using testing::ReadFile;  // tests/support/wait.h

std::optional<double> Value(const Families& fams, const std::string& name,
                            const Labels& want) {
  return testing::SampleValue(fams, name, want);
}

bool Has(const Families& fams, const std::string& name) {
  for (const auto& f : fams) {
    if (f.name == name) return true;
  }
  return false;
}

const Labels kBase = {{"device", "mlx5_0"}, {"port", "1"}, {"netdev", "eth2"}};

Labels With(Labels l, Labels extra) {
  l.insert(l.end(), extra.begin(), extra.end());
  return l;
}

Families Emit(const RoceEthtoolStats& s) {
  MetricSink sink;
  EmitEthtoolMetrics(s, {"mlx5_0", "1", "eth2"}, sink);
  return sink.Take();
}

TEST(RocePhyTest, RecordedCx4LxHasPortCountersButNoLanes) {
  EthtoolText t = ParseEthtoolText(
      ReadFile(testing::Fixture("real/ethtool/mlx5_core-cx4lx-ethq-1.txt")));
  Families f = Emit(ParseEthtoolStats(t.stats.names, t.stats.values));
  EXPECT_EQ(Value(f, "fabric_roce_phy_symbol_errors_total", kBase), 0);
  EXPECT_EQ(Value(f, "fabric_roce_phy_pcs_symbol_errors_total", kBase), 0);
  EXPECT_EQ(Value(f, "fabric_roce_phy_corrected_bit_errors_total", kBase), 0);
  EXPECT_EQ(Value(f, "fabric_roce_phy_crc_errors_total", kBase), 0);
  EXPECT_EQ(Value(f, "fabric_roce_phy_link_down_events_total", kBase), 0);
  EXPECT_FALSE(Has(f, "fabric_roce_phy_lane_errors_total"));
}

TEST(RocePhyTest, LegacyDriverHasOnlyWhatItNames) {
  EthtoolText t = ParseEthtoolText(
      ReadFile(testing::Fixture("real/ethtool/mlx5_core-legacy-ethq-2.txt")));
  Families f = Emit(ParseEthtoolStats(t.stats.names, t.stats.values));
  EXPECT_EQ(Value(f, "fabric_roce_phy_symbol_errors_total", kBase), 0);
  EXPECT_EQ(Value(f, "fabric_roce_phy_crc_errors_total", kBase), 0);
  // Absent, never 0.
  EXPECT_FALSE(Has(f, "fabric_roce_phy_corrected_bit_errors_total"));
  EXPECT_FALSE(Has(f, "fabric_roce_phy_pcs_symbol_errors_total"));
  EXPECT_FALSE(Has(f, "fabric_roce_phy_link_down_events_total"));
}

TEST(RocePhyTest, PerLaneErrorsCarryALaneLabel) {
  RoceEthtoolStats s =
      ParseEthtoolStats({"rx_err_lane_0_phy", "rx_err_lane_1_phy",
                         "rx_err_lane_3_phy", "rx_corrected_bits_phy"},
                        {7, 8, 9, 123456789012ULL});
  Families f = Emit(s);
  EXPECT_EQ(Value(f, "fabric_roce_phy_lane_errors_total",
                  With(kBase, {{"lane", "0"}})),
            7);
  EXPECT_EQ(Value(f, "fabric_roce_phy_lane_errors_total",
                  With(kBase, {{"lane", "1"}})),
            8);
  EXPECT_FALSE(Value(f, "fabric_roce_phy_lane_errors_total",
                     With(kBase, {{"lane", "2"}})));
  EXPECT_EQ(Value(f, "fabric_roce_phy_lane_errors_total",
                  With(kBase, {{"lane", "3"}})),
            9);
  EXPECT_EQ(Value(f, "fabric_roce_phy_corrected_bit_errors_total", kBase),
            123456789012.0);
}

EthtoolFec FourLaneRs() {
  EthtoolFec fec;
  fec.active_mode = "rs";
  fec.corrected_blocks = FecCounter{100, {10, 20, 30, 40}};
  fec.uncorrectable_blocks = FecCounter{2, {}};
  return fec;
}

TEST(RocePhyTest, FecStatisticsPerPortAndLane) {
  MetricSink sink;
  EmitFecMetrics(FourLaneRs(), {"mlx5_0", "1", "eth2"}, sink);
  Families f = sink.Take();
  EXPECT_EQ(
      Value(f, "fabric_roce_fec_mode_info", With(kBase, {{"mode", "rs"}})), 1);
  EXPECT_EQ(Value(f, "fabric_roce_fec_corrected_blocks_total", kBase), 100);
  EXPECT_EQ(Value(f, "fabric_roce_fec_lane_corrected_blocks_total",
                  With(kBase, {{"lane", "3"}})),
            40);
  EXPECT_EQ(Value(f, "fabric_roce_fec_uncorrectable_blocks_total", kBase), 2);
  // Counted for the port only: no lane series.
  EXPECT_FALSE(Has(f, "fabric_roce_fec_lane_uncorrectable_blocks_total"));
  EXPECT_FALSE(Has(f, "fabric_roce_fec_corrected_bit_errors_total"));
}

struct Outcome {
  Families families;
  std::uint64_t skipped;
  std::vector<std::string> fec_calls;
};

Outcome Collect(std::unique_ptr<testing::FakeFec> fec) {
  auto fs = std::make_shared<testing::FakeSysfs>();
  fs->File("class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
  fs->File("class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "eth2\n");
  fs->File("class/net/eth2/address", "0c:42:a1:00:00:01\n");
  fs->File("class/infiniband/mlx5_0/ports/2/link_layer", "Ethernet\n");
  fs->File("class/infiniband/mlx5_0/ports/2/gid_attrs/ndevs/0", "eth3\n");
  fs->File("class/net/eth3/address", "0c:42:a1:00:00:02\n");
  auto ethtool = std::make_unique<testing::FakeEthtool>();
  ethtool->results.insert_or_assign(
      "eth2", EthtoolStats{.driver = "mlx5_core",
                           .names = {"rx_corrected_bits_phy"},
                           .values = {5}});
  ethtool->results.insert_or_assign("eth3",
                                    EthtoolStats{.driver = "mlx5_core"});
  auto calls = fec->calls;
  CollectorEnv env;
  env.sysfs = fs;
  auto c = MakeRoceCollector(env, {}, std::move(ethtool), nullptr, nullptr,
                             std::move(fec));
  MetricSink sink;
  EXPECT_TRUE(c->Collect(sink));
  std::uint64_t skipped = sink.skipped();
  return {sink.Take(), skipped, *calls};
}

TEST(RocePhyTest, CollectorReadsFecOfEveryNetdevAndAbsentIsQuiet) {
  auto fec = std::make_unique<testing::FakeFec>();
  fec->results.insert_or_assign("eth2", FourLaneRs());
  // eth3: EOPNOTSUPP (no FEC op): absent, not a skip.
  Outcome r = Collect(std::move(fec));
  EXPECT_EQ(r.fec_calls, (std::vector<std::string>{"eth2", "eth3"}));
  EXPECT_EQ(r.skipped, 0u);
  EXPECT_EQ(Value(r.families, "fabric_roce_fec_corrected_blocks_total", kBase),
            100);
  EXPECT_EQ(
      Value(r.families, "fabric_roce_phy_corrected_bit_errors_total", kBase),
      5);
  EXPECT_FALSE(
      Value(r.families, "fabric_roce_fec_corrected_blocks_total",
            {{"device", "mlx5_0"}, {"port", "2"}, {"netdev", "eth3"}}));
}

TEST(RocePhyTest, MalformedFecReplyIsASkipNotAFailure) {
  auto fec = std::make_unique<testing::FakeFec>();
  fec->results.insert_or_assign("eth2", std::errc::bad_message);
  fec->results.insert_or_assign("eth3", std::errc::no_such_device);
  Outcome r = Collect(std::move(fec));
  EXPECT_EQ(r.skipped, 1u);  // EBADMSG; ENODEV is a vanished netdev
  EXPECT_FALSE(Has(r.families, "fabric_roce_fec_mode_info"));
  EXPECT_EQ(
      Value(r.families, "fabric_roce_phy_corrected_bit_errors_total", kBase),
      5);
}

TEST(RocePhyTest, EveryPhyAndFecFamilyIsInMetricsDoc) {
  const auto documented = DocumentedFamilies("roce");
  RoceEthtoolStats s = ParseEthtoolStats(
      {"rx_err_lane_0_phy", "rx_corrected_bits_phy", "rx_pcs_symbol_err_phy",
       "rx_symbol_err_phy", "rx_crc_errors_phy", "link_down_events_phy"},
      {1, 2, 3, 4, 5, 6});
  MetricSink sink;
  EmitEthtoolMetrics(s, {"d", "1", "n"}, sink);
  EthtoolFec fec = FourLaneRs();
  fec.uncorrectable_blocks->lanes = {1, 1};
  fec.corrected_bits = FecCounter{9, {4, 5}};
  EmitFecMetrics(fec, {"d", "1", "n"}, sink);
  Families f = sink.Take();
  ASSERT_GE(f.size(), 12u);
  for (const auto& fam : f) {
    EXPECT_THAT(documented, ::testing::Contains(fam.name))
        << fam.name << " is not in the ## roce table of docs/metrics.md";
  }
}

}  // namespace
}  // namespace fabric
