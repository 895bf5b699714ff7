// The fabric sweep's PortExtendedSpeedsCounters state machine
// (sources/mad/sweep.h) against FakeMadTransport: a switch PMA that has
// PESC, one that refuses it (a MAD status), one that never answers 0x1F,
// and one whose ClassPortInfo is lost. What is asked, what is exported, what
// is counted, and that a PMA marked unsupported is not asked again until
// the caller clears the cache (rediscovery). Plus the codec's link width
// and speed helpers the switch-port rate metrics are built on.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <map>
#include <memory>

#include "sources/mad/codec.h"
#include "sources/mad/discovery.h"
#include "sources/mad/sweep.h"
#include "tests/support/fake_mad_transport.h"

namespace fabric::mad {
namespace {

using testing::FakeMadTransport;
using testing::FakePortState;

constexpr std::uint16_t kSwitchLid = 10;

// How the switch's PMA treats 0x1F.
enum class Pma { kHasPesc, kRefusesPesc, kSilentOnPesc, kLosesClassPortInfo };

// A GetResp to `request` (same TID and attribute) with `status`.
Mad Answer(const Mad& request, std::uint32_t status = 0) {
  Mad m = request;
  std::uint32_t v = 1;
  mad_encode_field(m.data(), IB_MAD_RESPONSE_F, &v);
  v = IB_MAD_METHOD_GET;  // libibmad: the R bit above + Get = GetResp
  mad_encode_field(m.data(), IB_MAD_METHOD_F, &v);
  mad_encode_field(m.data(), IB_MAD_STATUS_F, &status);
  return m;
}

struct Rig {
  explicit Rig(Pma pma) : pma(pma) {
    topology = testing::LocalCaAndOneSwitch(kSwitchLid, 3);
    FabricNode& sw = topology.nodes[1];
    sw.description = "sw";
    // IsExtendedSpeedsSupported on port 0 only, as switches report it.
    sw.ports[0] = {.num = 0,
                   .state = 4,
                   .phys_state = 5,
                   .capability_mask = kCapabilityHasExtendedSpeeds};
    sw.ports[1] = {.num = 1, .state = 4, .phys_state = 5};
    sw.ports[2] = {.num = 2, .state = 4, .phys_state = 5};
    sw.ports[3] = {.num = 3, .state = 1, .phys_state = 2};  // no cable
    port->state = 4;
    port->lid = 1;
    transport = std::make_unique<FakeMadTransport>(
        port, [this](std::uint16_t dlid, const Mad& mad) -> MadResult {
          const auto attr = static_cast<std::uint16_t>(mad_get_field(
              const_cast<std::uint8_t*>(mad.data()), 0, IB_MAD_ATTRID_F));
          ++asked[attr];
          if (dlid != kSwitchLid) return std::errc::timed_out;
          if (attr == CLASS_PORT_INFO) {
            if (this->pma == Pma::kLosesClassPortInfo) {
              return std::errc::timed_out;
            }
            Mad m = Answer(mad);
            std::uint32_t cap = 0x0300;  // no RS-FEC counters: no
            mad_encode_field(m.data() + IB_PC_DATA_OFFS, IB_CPI_CAPMASK_F,
                             &cap);  // PortInfoExtended needed
            return m;
          }
          if (attr == kAttrPortExtendedSpeedsCounters) {
            if (this->pma == Pma::kSilentOnPesc) return std::errc::timed_out;
            if (this->pma == Pma::kRefusesPesc) {
              return Answer(mad, 0x0c);  // unsupported method/attribute
            }
            Mad m = Answer(mad);
            // SyncHeaderErrorCounter = the port, to tell the ports apart.
            std::uint32_t port = mad_get_field(m.data() + IB_PC_DATA_OFFS, 0,
                                               IB_PESC_PORT_SELECT_F);
            mad_encode_field(m.data() + IB_PC_DATA_OFFS,
                             IB_PESC_SYNC_HDR_ERR_CTR_F, &port);
            return m;
          }
          return Answer(mad);  // PortCounters, PortCountersExtended
        });
  }

  SweepResult Sweep() {
    asked.clear();
    MadOptions options;
    options.timeout = std::chrono::milliseconds(1);
    options.retries = 1;
    return mad::Sweep(*transport, topology, Shard{}, options, &cache);
  }
  // A PMA marked unsupported: the next sweep asks it nothing about PESC
  // (and still counts it once); after the cache is cleared, as the
  // collector does on rediscovery, ClassPortInfo and the probe again.
  void ExpectQuietUntilRediscovery(int probe_sends) {
    SweepResult r = Sweep();
    EXPECT_EQ(Asked(CLASS_PORT_INFO), 0);
    EXPECT_EQ(Asked(kAttrPortExtendedSpeedsCounters), 0);
    EXPECT_EQ(r.pesc_unsupported, 1);
    EXPECT_EQ(r.pesc_unanswered, 0u);
    cache.clear();
    r = Sweep();
    EXPECT_EQ(Asked(CLASS_PORT_INFO), 1);
    EXPECT_EQ(Asked(kAttrPortExtendedSpeedsCounters), probe_sends);
  }
  int Asked(std::uint16_t attr) const {
    auto it = asked.find(attr);
    return it == asked.end() ? 0 : it->second;
  }

  Pma pma;
  Topology topology;
  std::shared_ptr<FakePortState> port = std::make_shared<FakePortState>();
  std::unique_ptr<FakeMadTransport> transport;
  PescCache cache;
  std::map<std::uint16_t, int> asked;  // LID-routed MADs by attribute
};

TEST(SweepPesc, SupportedPmaIsProbedOnceThenReadWithTheSweep) {
  Rig rig(Pma::kHasPesc);
  SweepResult r = rig.Sweep();
  ASSERT_EQ(r.switches.size(), 1u);
  const SwitchSample& s = r.switches[0];
  // ClassPortInfo, the probe (port 1), then port 2; port 3 has no link.
  EXPECT_EQ(rig.Asked(CLASS_PORT_INFO), 1);
  EXPECT_EQ(rig.Asked(kAttrPortExtendedSpeedsCounters), 2);
  ASSERT_TRUE(s.ports[0].pesc);
  ASSERT_TRUE(s.ports[1].pesc);
  EXPECT_FALSE(s.ports[2].pesc);
  EXPECT_EQ(s.ports[0].pesc->sync_header_errors, 1u);
  EXPECT_EQ(s.ports[1].pesc->sync_header_errors, 2u);
  EXPECT_EQ(s.ports[0].pesc->layout, PescLayout::kErrorDetection);
  EXPECT_FALSE(s.pesc_unsupported);
  EXPECT_EQ(r.pesc_unsupported, 0);
  EXPECT_EQ(r.pesc_unanswered, 0u);
  EXPECT_EQ(rig.cache.at(0x20).support, PescSwitchState::Support::kSupported);

  // Decided: the next sweep sends both PESCs with its other MADs and asks
  // no ClassPortInfo.
  r = rig.Sweep();
  EXPECT_EQ(rig.Asked(CLASS_PORT_INFO), 0);
  EXPECT_EQ(rig.Asked(kAttrPortExtendedSpeedsCounters), 2);
  EXPECT_TRUE(r.switches[0].ports[0].pesc);
  EXPECT_TRUE(r.switches[0].ports[1].pesc);
  EXPECT_FALSE(r.switches[0].ports[2].pesc);
}

TEST(SweepPesc, RefusingPmaIsMarkedUnsupportedUntilRediscovery) {
  Rig rig(Pma::kRefusesPesc);
  SweepResult r = rig.Sweep();
  EXPECT_EQ(rig.Asked(CLASS_PORT_INFO), 1);
  EXPECT_EQ(rig.Asked(kAttrPortExtendedSpeedsCounters), 1);  // the probe only
  EXPECT_TRUE(r.switches[0].pesc_unsupported);
  EXPECT_EQ(r.pesc_unsupported, 1);
  EXPECT_EQ(r.pesc_unanswered, 0u);  // answered, with a status
  for (const auto& p : r.switches[0].ports) EXPECT_FALSE(p.pesc) << p.num;
  // The rest of the sweep is untouched.
  EXPECT_TRUE(r.switches[0].ports[0].counters);
  EXPECT_EQ(r.switches[0].failed_mads, 0);

  rig.ExpectQuietUntilRediscovery(/*probe_sends=*/1);
}

TEST(SweepPesc, SilentPmaCostsOneProbeNotTimeoutsPerPort) {
  Rig rig(Pma::kSilentOnPesc);
  SweepResult r = rig.Sweep();
  // The probe went out with its retry; no other port's PESC was sent.
  EXPECT_EQ(rig.Asked(kAttrPortExtendedSpeedsCounters), 2);
  EXPECT_TRUE(r.switches[0].pesc_unsupported);
  EXPECT_EQ(r.pesc_unsupported, 1);
  // Counted as the PMA's answer, not as lost MADs: no timeout, no retry,
  // no failed MAD for the switch (which answered everything else).
  EXPECT_EQ(r.pesc_unanswered, 2u);
  EXPECT_EQ(r.stats.timeouts, 0u);
  EXPECT_EQ(r.stats.retries, 0u);
  EXPECT_EQ(r.switches[0].failed_mads, 0);
  EXPECT_TRUE(r.switches[0].reachable);

  rig.ExpectQuietUntilRediscovery(/*probe_sends=*/2);  // with its retry
}

TEST(SweepPesc, LostClassPortInfoMeansUnsupportedAndIsALostMad) {
  Rig rig(Pma::kLosesClassPortInfo);
  SweepResult r = rig.Sweep();
  EXPECT_EQ(rig.Asked(kAttrPortExtendedSpeedsCounters), 0);
  EXPECT_TRUE(r.switches[0].pesc_unsupported);
  // Unlike the probe, a lost ClassPortInfo is a lost MAD.
  EXPECT_EQ(r.switches[0].failed_mads, 1);
  EXPECT_EQ(r.stats.timeouts, 1u);
  r = rig.Sweep();
  EXPECT_EQ(rig.Asked(CLASS_PORT_INFO), 0);
}

TEST(SweepPesc, NoCacheMeansNoPescMads) {
  Rig rig(Pma::kHasPesc);
  MadOptions options;
  options.timeout = std::chrono::milliseconds(1);
  const SweepResult r =
      Sweep(*rig.transport, rig.topology, Shard{}, options, nullptr);
  EXPECT_EQ(rig.Asked(CLASS_PORT_INFO), 0);
  EXPECT_EQ(rig.Asked(kAttrPortExtendedSpeedsCounters), 0);
  EXPECT_EQ(r.pesc_unsupported, 0);
  EXPECT_TRUE(r.switches[0].ports[0].counters);
}

TEST(CodecLink, WidthLanesNamesOneWidthOnly) {
  EXPECT_EQ(WidthLanes(1), 1);
  EXPECT_EQ(WidthLanes(2), 4);
  EXPECT_EQ(WidthLanes(4), 8);
  EXPECT_EQ(WidthLanes(8), 12);
  EXPECT_EQ(WidthLanes(16), 2);
  EXPECT_EQ(WidthLanes(0), 0);
  EXPECT_EQ(WidthLanes(3), 0);  // a mask, not an active width
}

TEST(CodecLink, LaneGbpsPrefersTheExtendedSpeed) {
  EXPECT_EQ(LaneGbps(1, 0), 2.5);
  EXPECT_EQ(LaneGbps(2, 0), 5);
  EXPECT_EQ(LaneGbps(4, 0), 10);
  EXPECT_EQ(LaneGbps(4, 1), 14);   // FDR
  EXPECT_EQ(LaneGbps(4, 2), 25);   // EDR
  EXPECT_EQ(LaneGbps(4, 4), 50);   // HDR
  EXPECT_EQ(LaneGbps(4, 8), 100);  // NDR
  EXPECT_EQ(LaneGbps(3, 0), 0);    // a mask: no one speed
}

TEST(CodecLink, CapableIsTheBestOfSupportedAndEnabled) {
  PortInfo p;
  p.link_width_supported = 1 | 2 | 8;  // 1x, 4x, 12x
  p.link_width_enabled = 1 | 2;
  EXPECT_EQ(CapableLanes(p), 4);
  p.link_width_enabled = 0;  // not filled in: as supported
  EXPECT_EQ(CapableLanes(p), 12);
  p.link_width_enabled = 16;  // nothing in common: as supported
  EXPECT_EQ(CapableLanes(p), 12);

  // ibsim's link_health test: Supported SDR|DDR|QDR, Enabled SDR|DDR.
  p.link_speed_supported = 7;
  p.link_speed_enabled = 3;
  EXPECT_EQ(CapableLaneGbps(p), 5);
  // Extended speeds count only where supported AND enabled.
  p.link_speed_ext_enabled = 4 | 2;
  EXPECT_EQ(CapableLaneGbps(p), 5);
  p.link_speed_ext_supported = 1 | 2;
  EXPECT_EQ(CapableLaneGbps(p), 25);
  PortInfo none;
  EXPECT_EQ(CapableLanes(none), 0);
  EXPECT_EQ(CapableLaneGbps(none), 0);
}

}  // namespace
}  // namespace fabric::mad
