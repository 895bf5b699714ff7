// Tests for the ethtool text parser and the mlx5 name -> RoCE stats parser,
// on every recorded dump in tests/fixtures/real/ethtool and on synthetic
// dumps (PFC on priority 3, malformed and truncated input).
#include "sources/ethtool_parse.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/paths.h"

namespace fabric {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RoceEthtoolStats ParseFixture(const std::string& relative,
                              std::size_t* bad = nullptr,
                              std::size_t* count = nullptr) {
  std::string text = ReadFile(testing::Fixture(relative));
  EXPECT_FALSE(text.empty()) << relative;
  EthtoolText parsed = ParseEthtoolText(text);
  if (bad) *bad = parsed.bad_lines;
  if (count) *count = parsed.stats.names.size();
  return ParseEthtoolStats(parsed.stats.names, parsed.stats.values);
}

TEST(EthtoolTextTest, HeaderIndentationAndPlainLines) {
  EthtoolText t = ParseEthtoolText(
      "NIC statistics:\n     rx_packets: 12\n\ttx_bytes: 7\r\nfoo: 0\n");
  EXPECT_EQ(t.bad_lines, 0u);
  ASSERT_EQ(t.stats.names.size(), 3u);
  EXPECT_EQ(t.stats.names[0], "rx_packets");
  EXPECT_EQ(t.stats.values[0], 12u);
  EXPECT_EQ(t.stats.names[1], "tx_bytes");
  EXPECT_EQ(t.stats.values[1], 7u);
  EXPECT_EQ(t.stats.names[2], "foo");
}

TEST(EthtoolTextTest, MalformedLinesAreCountedAndSkipped) {
  EthtoolText t = ParseEthtoolText(
      "rx_ok: 1\n"
      "no colon here\n"
      ": 5\n"                           // empty name
      "rx_neg: -3\n"                    // negative
      "rx_word: many\n"                 // not a number
      "rx_big: 18446744073709551616\n"  // 2^64
      "rx_max: 18446744073709551615\n"  // 2^64-1 is fine
      "rx_trailing: 12abc\n"
      "rx_empty:\n"
      "rx_prio3_pau");  // truncated mid-name at end of file
  EXPECT_EQ(t.bad_lines, 8u);
  ASSERT_EQ(t.stats.names.size(), 2u);
  EXPECT_EQ(t.stats.names[1], "rx_max");
  EXPECT_EQ(t.stats.values[1], 18446744073709551615ull);
}

TEST(EthtoolTextTest, TruncatedValueAtEndIsStillANumberAndEmptyIsEmpty) {
  EthtoolText t = ParseEthtoolText("rx_prio3_pause: 45");  // no newline
  EXPECT_EQ(t.bad_lines, 0u);
  ASSERT_EQ(t.stats.values.size(), 1u);
  EXPECT_EQ(t.stats.values[0], 45u);
  EXPECT_TRUE(ParseEthtoolText("").stats.names.empty());
  EXPECT_TRUE(ParseEthtoolText("NIC statistics:\n").stats.names.empty());
}

TEST(EthtoolRealDumpTest, Cx4LxEthq) {
  std::size_t bad = 1, count = 0;
  RoceEthtoolStats s =
      ParseFixture("real/ethtool/mlx5_core-cx4lx-ethq-1.txt", &bad, &count);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(count, 751u);
  EXPECT_EQ(s.prio[0].bytes[kRx], 2202570777997u);
  EXPECT_EQ(s.prio[0].packets[kRx], 845715962u);
  EXPECT_EQ(s.prio[0].bytes[kTx], 2662454044895u);
  EXPECT_EQ(s.prio[7].packets[kTx], 0u);
  // PFC was off: no pause counters at all (absent, not zero).
  for (const PriorityStats& p : s.prio) {
    EXPECT_FALSE(p.pause[kRx]);
    EXPECT_FALSE(p.pause[kTx]);
    EXPECT_FALSE(p.pause_duration_us[kRx]);
  }
  EXPECT_EQ(s.global_pause[kRx], 0u);
  EXPECT_EQ(s.global_pause_duration_us[kTx], 0u);
  EXPECT_EQ(s.discards_phy[kRx], 0u);
  EXPECT_EQ(s.rx_out_of_buffer, 0u);
  EXPECT_FALSE(s.pause_storm_warning);
  EXPECT_FALSE(s.rx_ecn_mark);  // this driver has no ECN mark counters
  // Physical-layer error counters: port-wide ones present (and zero), no
  // per-lane raw error counters on this ConnectX-4 Lx driver: absent.
  EXPECT_EQ(s.phy_corrected_bits, 0u);
  EXPECT_EQ(s.phy_pcs_symbol_errors, 0u);
  EXPECT_EQ(s.phy_symbol_errors, 0u);
  EXPECT_EQ(s.phy_crc_errors, 0u);
  EXPECT_EQ(s.phy_link_down_events, 0u);
  for (const OptU64& lane : s.phy_lane_errors) EXPECT_FALSE(lane);
}

TEST(EthtoolRealDumpTest, LegacyEthqUsesOldPauseNames) {
  std::size_t bad = 1, count = 0;
  RoceEthtoolStats s =
      ParseFixture("real/ethtool/mlx5_core-legacy-ethq-2.txt", &bad, &count);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(count, 309u);
  EXPECT_EQ(s.pause_ctrl_phy[kRx], 0u);
  EXPECT_EQ(s.pause_ctrl_phy[kTx], 0u);
  EXPECT_FALSE(s.prio[0].bytes[kRx]);  // no per-priority group in this driver
  // The same PPCNT fields under their early names; the driver has no FEC
  // counters (rx_corrected_bits_phy), and no link-down count.
  EXPECT_EQ(s.phy_symbol_errors, 0u);
  EXPECT_EQ(s.phy_crc_errors, 0u);
  EXPECT_FALSE(s.phy_corrected_bits);
  EXPECT_FALSE(s.phy_pcs_symbol_errors);
  EXPECT_FALSE(s.phy_link_down_events);
  EXPECT_EQ(s.recognized, 4u);
}

TEST(EthtoolRealDumpTest, XdpKernel515) {
  std::size_t bad = 1;
  RoceEthtoolStats s =
      ParseFixture("real/ethtool/mlx5_core-xdp-kernel5.15-lore-3.txt", &bad);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(s.discards_phy[kRx], 58591428329u);
  EXPECT_EQ(s.discards_phy[kTx], 0u);
  EXPECT_EQ(s.rx_out_of_buffer, 990473555u);
  EXPECT_EQ(s.prio[0].discards, 58591314012u);
  EXPECT_EQ(s.global_pause[kTx], 5745042u);
  EXPECT_EQ(s.global_pause_duration_us[kTx], 771103810u);
  EXPECT_EQ(s.pause_ctrl_phy[kTx], 5745055u);
  EXPECT_EQ(s.rx_ecn_mark, 0u);       // rx0_ecn_mark present and zero
  EXPECT_FALSE(s.global_pause[kRx]);  // zero lines were removed by the poster
}

TEST(EthtoolRealDumpTest, XdpKernel65) {
  std::size_t bad = 1;
  RoceEthtoolStats s =
      ParseFixture("real/ethtool/mlx5_core-xdp-kernel6.5-lore-4.txt", &bad);
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(s.discards_phy[kRx], 441063206498u);
  EXPECT_EQ(s.prio[0].bytes[kRx], 46609758231313u);
  EXPECT_EQ(s.prio[0].packets[kTx], 46956452586u);
  EXPECT_EQ(s.global_pause_duration_us[kTx], 5961284324u);
  EXPECT_EQ(s.rx_out_of_buffer, 534918379u);
}

TEST(EthtoolSyntheticTest, PfcOnPriorityThree) {
  std::size_t bad = 1;
  RoceEthtoolStats s = ParseFixture("ethtool/mlx5-pfc-prio3.txt", &bad);
  EXPECT_EQ(bad, 0u);
  const PriorityStats& p3 = s.prio[3];
  EXPECT_EQ(p3.pause[kRx], 4500u);
  EXPECT_EQ(p3.pause[kTx], 120u);
  EXPECT_EQ(p3.pause_duration_us[kRx], 2500000u);
  EXPECT_EQ(p3.pause_duration_us[kTx], 75000u);
  EXPECT_EQ(p3.pause_transition[kRx], 4400u);
  EXPECT_FALSE(p3.pause_transition[kTx]);
  EXPECT_EQ(p3.buf_discard, 3u);
  EXPECT_EQ(p3.cong_discard, 11u);
  EXPECT_EQ(p3.marked, 987654u);
  EXPECT_EQ(p3.bytes[kRx], 3848153362475u);
  for (int p : {0, 1, 2, 4, 5, 6, 7}) {
    EXPECT_FALSE(s.prio[p].pause[kRx]) << p;
    EXPECT_FALSE(s.prio[p].pause_duration_us[kTx]) << p;
  }
  EXPECT_EQ(s.pause_storm_warning, 2u);
  EXPECT_EQ(s.pause_storm_error, 1u);
  EXPECT_EQ(s.rx_ecn_mark, 1234u);  // rx0 + rx1, no aggregate present
  EXPECT_EQ(s.discards_phy[kRx], 2048u);
  EXPECT_EQ(s.rx_buffer_passed_thres_phy, 9u);
}

TEST(EthtoolStatsTest, UnknownNamesIgnoredAndEdgeCases) {
  std::vector<std::string> names = {
      "rx_prio8_pause",   // no priority 8
      "rx_prio33_pause",  // two digits
      "rx_prio3pause",    // missing separator
      "tx_prio3_marked",  // only exists for rx
      "rx_prio3_pause",   // first occurrence wins
      "rx_prio3_pause",
      "rx_ecn_mark",  // aggregate beats per-queue
      "rx7_ecn_mark",
      "rxa_ecn_mark",  // not a queue number
      "vendor_private_counter",
      "rx_prio5_discards"};  // value missing: fewer values than names
  std::vector<std::uint64_t> values = {1, 2, 3, 4, 10, 20, 5, 6, 7, 8};
  RoceEthtoolStats s = ParseEthtoolStats(names, values);
  EXPECT_EQ(s.prio[3].pause[kRx], 10u);
  EXPECT_FALSE(s.prio[3].marked);
  EXPECT_EQ(s.rx_ecn_mark, 5u);
  EXPECT_FALSE(s.prio[5].discards);
  EXPECT_EQ(s.recognized, 2u);
}

TEST(EthtoolStatsTest, PhyCountersPerLaneAndBadLaneNames) {
  // As a ConnectX-6 Dx / ConnectX-7 with RS-FEC reports them (names from the
  // kernel's mlx5 counters.rst; values made up).
  std::vector<std::string> names = {
      "rx_corrected_bits_phy", "rx_err_lane_0_phy",
      "rx_err_lane_1_phy",     "rx_err_lane_3_phy",
      "rx_err_lane_8_phy",   // no lane 8
      "rx_err_lane_10_phy",  // two digits
      "rx_err_lane_2phy",    // missing separator
      "rx_err_lane__phy",      "rx_pcs_symbol_err_phy",
      "rx_symbol_err_phy",     "rx_crc_errors_phy",
      "link_down_events_phy",  "rx_err_lane_0_phy"};  // duplicate: first wins
  std::vector<std::uint64_t> values = {123456789, 11, 12, 14, 99, 99,  99,
                                       99,        3,  4,  5,  6,  1000};
  RoceEthtoolStats s = ParseEthtoolStats(names, values);
  EXPECT_EQ(s.phy_corrected_bits, 123456789u);
  EXPECT_EQ(s.phy_lane_errors[0], 11u);
  EXPECT_EQ(s.phy_lane_errors[1], 12u);
  EXPECT_FALSE(s.phy_lane_errors[2]);
  EXPECT_EQ(s.phy_lane_errors[3], 14u);
  for (int l = 4; l < RoceEthtoolStats::kMaxLanes; ++l) {
    EXPECT_FALSE(s.phy_lane_errors[l]) << l;
  }
  EXPECT_EQ(s.phy_pcs_symbol_errors, 3u);
  EXPECT_EQ(s.phy_symbol_errors, 4u);
  EXPECT_EQ(s.phy_crc_errors, 5u);
  EXPECT_EQ(s.phy_link_down_events, 6u);
  EXPECT_EQ(s.recognized, 8u);
}

TEST(EthtoolStatsTest, EmptyDriverIsEmptyView) {
  RoceEthtoolStats s = ParseEthtoolStats({}, {});
  EXPECT_EQ(s.recognized, 0u);
  EXPECT_FALSE(s.rx_ecn_mark);
}

}  // namespace
}  // namespace fabric
