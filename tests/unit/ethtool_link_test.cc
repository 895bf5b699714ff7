// ethtool link settings (sources/ethtool_link.h): mode names to speeds, the
// `ethtool <netdev>` text parser on a fixture and on bad input, mask words
// to names, the file source's `<dir>/<netdev>.link`, and the roce
// collector's link speed samples.
#include "sources/ethtool_link.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "collectors/roce.h"
#include "sources/ethtool_file.h"
#include "tests/support/paths.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/ib_collect_util.h"

namespace fabric {
namespace {

std::string Fixture() {
  std::ifstream in(testing::SourceDir() +
                   "/tests/fixtures/ethtool/mlx5-100g-at-50g.link");
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(EthtoolLink, ModeNamesGiveTheirSpeed) {
  EXPECT_EQ(LinkModeSpeedMbps("100000baseCR4/Full"), 100000u);
  EXPECT_EQ(LinkModeSpeedMbps("800000baseDR8_2/Full"), 800000u);  // 6.4+
  EXPECT_EQ(LinkModeSpeedMbps("10baseT/Half"), 10u);
  for (const char* none : {"Autoneg", "TP", "Pause", "FEC_RS", "baseX", "",
                           "x100baseT", "99999999999999999999999base"}) {
    EXPECT_FALSE(LinkModeSpeedMbps(none)) << none;
  }
  EXPECT_EQ(FastestMbps({"Autoneg", "25000baseCR/Full", "1000baseKX/Full"}),
            25000u);
  EXPECT_FALSE(FastestMbps({"TP", "Pause"}));
}

TEST(EthtoolLink, ParsesEthtoolText) {
  const auto link = ParseEthtoolLinkText(Fixture());
  ASSERT_TRUE(link);
  EXPECT_EQ(link->speed_mbps, 50000u);
  EXPECT_EQ(link->supported.size(), 11u);
  EXPECT_EQ(link->advertised.size(), 11u);
  ASSERT_EQ(link->partner.size(), 3u);
  EXPECT_EQ(link->partner[2], "100000baseCR4/Full");
  EXPECT_EQ(CapableMbps(*link), 100000u);
  EXPECT_EQ(FastestMbps(link->partner), 100000u);
}

TEST(EthtoolLink, VethAndDownLinksAndGarbage) {
  // veth: a speed, no modes; auto-negotiation off: capable from supported.
  auto veth = ParseEthtoolLinkText(
      "Settings for va:\n\tSupported ports: [ ]\n\tSupported link modes:   "
      "Not reported\n\tAdvertised link modes:  Not reported\n\tSpeed: "
      "10000Mb/s\n\tDuplex: Full\n");
  ASSERT_TRUE(veth);
  EXPECT_EQ(veth->speed_mbps, 10000u);
  EXPECT_TRUE(veth->supported.empty());
  EXPECT_FALSE(CapableMbps(*veth));
  auto off = ParseEthtoolLinkText(
      "\tSupported link modes:   25000baseCR/Full\n\tSpeed: Unknown!\n");
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->speed_mbps);
  EXPECT_EQ(CapableMbps(*off), 25000u);
  EXPECT_FALSE(ParseEthtoolLinkText(""));
  EXPECT_FALSE(ParseEthtoolLinkText("rx_packets: 12\n\x01\xff garbage\n"));
  auto bad_speed = ParseEthtoolLinkText("\tSpeed: 12xMb/s\n");
  ASSERT_TRUE(bad_speed);
  EXPECT_FALSE(bad_speed->speed_mbps);
}

TEST(EthtoolLink, MaskWordsToNames) {
  const std::vector<std::string> names = {"10baseT/Half", "10baseT/Full",
                                          "Autoneg"};
  const std::uint32_t words[] = {0x5, 0xffffffff};  // bits past the table
  EXPECT_EQ(LinkModeNames(words, names),
            (std::vector<std::string>{"10baseT/Half", "Autoneg"}));
}

TEST(EthtoolLink, FileSourceReadsDotLink) {
  const testing::TempDir tmp("fm-link");
  ASSERT_FALSE(tmp.path().empty());
  const std::filesystem::path dir = tmp.path();
  std::ofstream(dir / "eth0.link") << Fixture();
  std::ofstream(dir / "eth1.link") << "nothing here\n";
  FileEthtoolSource source(dir.string());
  auto ok = source.Link("eth0");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->speed_mbps, 50000u);
  EXPECT_EQ(source.Link("eth9").error(), std::errc::operation_not_supported);
  EXPECT_EQ(source.Link("eth1").error(), std::errc::bad_message);
  EXPECT_EQ(source.Link("../x").error(), std::errc::no_such_device);
}

TEST(EthtoolLink, RoceSamples) {
  MetricSink sink;
  EmitLinkMetrics(*ParseEthtoolLinkText(Fixture()), {"mlx5_2", "1", "eth0"},
                  sink);
  testing::Collected c;
  c.families = sink.Take();
  const std::map<std::string, std::string> at = {
      {"device", "mlx5_2"}, {"port", "1"}, {"netdev", "eth0"}};
  EXPECT_EQ(c.Value("fabric_roce_link_speed_bytes_per_second", at), 50e9 / 8);
  EXPECT_EQ(c.Value("fabric_roce_link_speed_capable_bytes_per_second", at),
            100e9 / 8);
  EXPECT_EQ(
      c.Value("fabric_roce_link_partner_speed_capable_bytes_per_second", at),
      100e9 / 8);
}

}  // namespace
}  // namespace fabric
