// The simulator's physical layer (issue 28), read the way fabricmon reads a
// real fabric: switch PMAs answer ClassPortInfo, PortInfoExtended and
// PortExtendedSpeedsCounters (requests built and answers decoded by
// sources/mad/codec.h, whose libibmad-based decoders are the oracle for
// the simulator's hand-placed RS-FEC offsets), PortInfo carries width and
// speed, each RoCE netdev has a transceiver image the file-backed
// ModuleEepromSource serves to the SFF-8636 parser, and dying-cable
// degrades exactly its two links in the documented order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "simulator/mad.h"
#include "simulator/model.h"
#include "simulator/transceiver.h"
#include "sources/mad/codec.h"
#include "sources/module_eeprom.h"
#include "sources/transceiver_parse.h"
#include "tests/support/temp_dir.h"

namespace fabric::sim {
namespace {

namespace fs = std::filesystem;

Cluster Simulate(Scenario scenario, double seconds, int hosts = 2) {
  SimConfig config;
  config.hosts = hosts;
  config.tick = std::chrono::milliseconds(100);
  config.timeline = SingleScenario(scenario);
  Cluster c(config);
  for (int i = 0; i < static_cast<int>(seconds * 10); ++i) c.Step();
  return c;
}

const Port& SwitchPort(const Cluster& c, const std::string& name, int num) {
  for (const Port& p : c.ports()) {
    if (p.host < 0 && p.device == name && p.port_num == num) return p;
  }
  ADD_FAILURE() << name << " port " << num;
  return c.ports().front();
}

// ib-leaf0's LID (model.cc: spine 1, leaves 2..9).
constexpr std::uint16_t kLeaf0Lid = 2;

TEST(SimPhy, SwitchPmaAnswersPescInTheRsFecLayout) {
  const Cluster c = Simulate(Scenario::kSteady, 5);
  std::string error;
  auto cpi = mad::DecodePmaClassPortInfo(
      *AnswerMad(c, kLeaf0Lid, mad::PmaClassPortInfoGet()), &error);
  ASSERT_TRUE(cpi) << error;
  EXPECT_TRUE(cpi->RsFecCountersSupported());

  const Port& port = SwitchPort(c, "ib-leaf0", 1);
  ASSERT_GT(port.fec_corrected_bits, 0u) << "healthy links correct some bits";
  const auto answer = AnswerMad(c, kLeaf0Lid, mad::PescGet(1));
  ASSERT_TRUE(answer.ok());
  auto pesc = mad::DecodePortExtendedSpeedsCounters(
      *answer, mad::PescLayout::kRsFec, &error);
  ASSERT_TRUE(pesc) << error;
  EXPECT_EQ(pesc->port_select, 1);
  EXPECT_EQ(pesc->port_fec_corrected_symbols, port.fec_corrected_bits);
  EXPECT_EQ(pesc->port_fec_correctable_blocks, port.fec_corrected_bits / 10);
  EXPECT_EQ(pesc->port_fec_uncorrectable_blocks, 0u);
  std::uint64_t lanes = 0;
  for (int l = 0; l < mad::kPescLanes; ++l) {
    EXPECT_EQ(pesc->fec_corrected_symbols[l], port.lane_corrected_bits[l]) << l;
    lanes += pesc->fec_corrected_symbols[l];
  }
  EXPECT_EQ(lanes, port.fec_corrected_bits);
  // A port the switch does not have: a status, which the decoder refuses.
  EXPECT_FALSE(mad::DecodePortExtendedSpeedsCounters(
      *AnswerMad(c, kLeaf0Lid, mad::PescGet(99)), mad::PescLayout::kRsFec,
      &error));
}

TEST(SimPhy, PortInfoCarriesWidthSpeedAndPescCapability) {
  const Cluster c = Simulate(Scenario::kLinkDegraded, 1);
  // The degraded host link's switch end (host0 mlx5_5 is rail 3: ib-leaf3
  // port 1) runs 2x of its 4x; NDR on both.
  const Port& degraded = SwitchPort(c, "ib-leaf3", 1);
  std::string error;
  auto pi = mad::DecodePortInfo(
      *AnswerMad(c, degraded.lid, mad::SmpGet(mad::kAttrPortInfo, 1)), &error);
  ASSERT_TRUE(pi) << error;
  EXPECT_EQ(mad::WidthLanes(pi->link_width_active), 2);
  EXPECT_EQ(mad::CapableLanes(*pi), 4);
  EXPECT_EQ(mad::LaneGbps(pi->link_speed_active, pi->link_speed_ext_active),
            100);
  EXPECT_EQ(mad::CapableLaneGbps(*pi), 100);
  EXPECT_TRUE(pi->capability_mask & mad::kCapabilityHasExtendedSpeeds);
  auto pie = mad::DecodePortInfoExtended(
      *AnswerMad(c, degraded.lid, mad::SmpGet(mad::kAttrPortInfoExtended, 1)),
      &error);
  ASSERT_TRUE(pie) << error;
  EXPECT_EQ(pie->fec_mode_active, 2);  // RS-FEC
  auto cap2 = mad::DecodePortInfoCapabilityMask2(
      *AnswerMad(c, degraded.lid, mad::SmpGet(mad::kAttrPortInfo, 1)), &error);
  ASSERT_TRUE(cap2) << error;
  EXPECT_TRUE(*cap2 & mad::kCapability2PortInfoExtended);
}

TEST(SimPhy, TransceiverImageParsesThroughTheFileSource) {
  const Cluster c = Simulate(Scenario::kSteady, 1);
  const auto text = SimModuleEepromText(c, 0, "bond0");
  ASSERT_TRUE(text);
  EXPECT_FALSE(SimModuleEepromText(c, 0, "ib0"));
  EXPECT_FALSE(SimModuleEepromText(c, 7, "bond0"));
  const testing::TempDir tmp("sim_phy_test");
  ASSERT_FALSE(tmp.path().empty());
  const fs::path dir = tmp.path();
  std::ofstream(dir / "bond0") << *text;
  std::ofstream(dir / "bad0") << "lower zz\n";
  auto source = MakeFileModuleEepromSource(dir.string());
  ModulePages pages;
  auto lower = source->Read("bond0", {.page = 0, .offset = 0, .length = 128});
  ASSERT_TRUE(lower.ok());
  pages.lower = *lower;
  for (int page : ModulePagesToRead(pages.lower)) {
    auto upper = source->Read(
        "bond0", {.page = static_cast<std::uint8_t>(page), .offset = 128});
    ASSERT_TRUE(upper.ok()) << page;
    pages.upper[page] = *upper;
  }
  const ModuleParse parsed = ParseModuleEeprom(pages);
  ASSERT_TRUE(parsed.reading) << parsed.skip;
  EXPECT_DOUBLE_EQ(*parsed.reading->temperature_celsius,
                   kModuleTemperatureCelsius);
  EXPECT_DOUBLE_EQ(*parsed.reading->temperature_thresholds->high_warning,
                   kModuleTempHighWarningCelsius);
  EXPECT_EQ(parsed.reading->vendor, "NVIDIA");
  // No module, a page it lacks, garbage: errors, no crash.
  EXPECT_EQ(source->Read("eth9", {}).error(),
            std::errc::operation_not_supported);
  EXPECT_EQ(source->Read("bond0", {.page = 0x11, .offset = 128}).error(),
            std::errc::invalid_argument);
  EXPECT_EQ(source->Read("../bond0", {}).error(), std::errc::invalid_argument);
  EXPECT_EQ(source->Read("bad0", {}).error(), std::errc::io_error);
}

TEST(SimPhy, DyingCableDegradesItsTwoLinksInOrder) {
  // BER first (past 1e-6 at 30 s), the module past its warning at 50 s,
  // flapping from 60 s, down from 90 s.
  const Cluster at40 = Simulate(Scenario::kDyingCable, 40);
  const Port* roce = at40.FindPort(0, "mlx5_bond_0");
  const Port& uplink = SwitchPort(at40, "ib-leaf0", 3);
  ASSERT_NE(roce, nullptr);
  for (const Port* p : {roce, &uplink, &at40.ports()[uplink.peer]}) {
    EXPECT_GT(p->pre_fec_ber, 1e-6) << p->device;
    EXPECT_TRUE(p->up) << p->device;
    EXPECT_EQ(p->counters.Get(Ctr::kLinkDowned), 0u) << p->device;
    // The errors ride lane 1.
    EXPECT_EQ(p->lane_corrected_bits[1], p->fec_corrected_bits) << p->device;
  }
  EXPECT_LT(roce->module_temperature_celsius, kModuleTempHighWarningCelsius);
  for (const Port& p : at40.ports()) {
    if (&p == roce || &p == &uplink || p.peer == roce - &at40.ports()[0] ||
        p.peer == &uplink - &at40.ports()[0]) {
      continue;
    }
    EXPECT_EQ(p.pre_fec_ber, kHealthyPreFecBer) << p.node << " " << p.device;
  }
  const Cluster at80 = Simulate(Scenario::kDyingCable, 80);
  EXPECT_GE(at80.FindPort(0, "mlx5_bond_0")->counters.Get(Ctr::kLinkDowned),
            3u);
  EXPECT_GE(SwitchPort(at80, "ib-leaf0", 3).counters.Get(Ctr::kLinkDowned), 3u);
  EXPECT_GE(at80.FindPort(0, "mlx5_bond_0")->module_temperature_celsius,
            kModuleTempHighWarningCelsius);
  const Cluster at100 = Simulate(Scenario::kDyingCable, 100);
  EXPECT_FALSE(at100.FindPort(0, "mlx5_bond_0")->up);
  EXPECT_FALSE(SwitchPort(at100, "ib-leaf0", 3).up);
  EXPECT_TRUE(SwitchPort(at100, "ib-leaf1", 3).up);
}

}  // namespace
}  // namespace fabric::sim
