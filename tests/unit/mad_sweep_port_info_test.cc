// The fabric sweep's PortInfo memory (sources/mad/sweep.h PortInfoMemory)
// against FakeMadTransport: the sweep after a discovery asks no PortInfo;
// quiet ACTIVE ports are asked once every `every` sweeps (and reported from
// the memory in between); a link that goes down shows within `every`
// sweeps where the counters do not count it, at the next sweep where
// LinkDownedCounter moves, and a port that went down is watched every sweep
// until it is back; saturated link counters mean every sweep; without a
// memory, every port every sweep.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

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
constexpr int kPorts = 3;
constexpr int kEvery = 4;

// A GetResp to `request` (same TID and attribute).
Mad Answer(const Mad& request) {
  Mad m = request;
  std::uint32_t v = 1;
  mad_encode_field(m.data(), IB_MAD_RESPONSE_F, &v);
  v = IB_MAD_METHOD_GET;
  mad_encode_field(m.data(), IB_MAD_METHOD_F, &v);
  return m;
}

// One switch of three ACTIVE ports. The fake answers every directed-route
// PortInfo from `port` (so all three ports share one state) and counts
// them; PortCounters carry `link_downed`.
struct Rig {
  Rig() {
    topology = testing::LocalCaAndOneSwitch(kSwitchLid, kPorts);
    FabricNode& sw = topology.nodes[1];
    for (int p = 0; p <= kPorts; ++p) {
      PortInfo info;
      info.state = 4;
      info.phys_state = 5;
      info.link_width_active = 2;  // 4x
      sw.ports[p] = {.num = p, .state = 4, .phys_state = 5, .info = info};
    }
    port->state = 4;
    port->phys_state = 5;
    port->lid = 1;
    transport = std::make_unique<FakeMadTransport>(
        port, [this](std::uint16_t dlid, const Mad& mad) -> MadResult {
          if (dlid != kSwitchLid) return std::errc::timed_out;
          Mad m = Answer(mad);
          const auto attr = mad_get_field(const_cast<std::uint8_t*>(mad.data()),
                                          0, IB_MAD_ATTRID_F);
          if (attr == kAttrPortCounters) {
            mad_encode_field(m.data() + IB_PC_DATA_OFFS, IB_PC_LINK_DOWNED_F,
                             &link_downed);
          }
          return m;
        });
    memory.every = kEvery;
  }

  // One sweep; the PortInfo Gets it sent.
  int Sweep(SweepResult* out = nullptr, bool with_memory = true) {
    const int before = port->portinfo_asks;
    MadOptions options;
    options.timeout = std::chrono::milliseconds(1);
    options.retries = 0;
    SweepResult r = mad::Sweep(*transport, topology, Shard{}, options, nullptr,
                               {}, true, with_memory ? &memory : nullptr);
    if (out) *out = r;
    return port->portinfo_asks - before;
  }

  // Every port of the switch reported, with this PortInfo state.
  static bool AllReport(const SweepResult& r, int state) {
    if (r.switches.size() != 1) return false;
    for (const SwitchPortSample& p : r.switches[0].ports) {
      if (!p.info || p.info->state != state) return false;
    }
    return r.switches[0].ports.size() == kPorts;
  }

  Topology topology;
  std::shared_ptr<FakePortState> port = std::make_shared<FakePortState>();
  std::unique_ptr<FakeMadTransport> transport;
  PortInfoMemory memory;
  std::uint32_t link_downed = 0;
};

TEST(SweepPortInfo, WithoutMemoryEveryPortEverySweep) {
  Rig rig;
  for (int i = 0; i < 3; ++i) {
    SweepResult r;
    EXPECT_EQ(rig.Sweep(&r, /*with_memory=*/false), kPorts);
    EXPECT_TRUE(Rig::AllReport(r, 4));
  }
}

TEST(SweepPortInfo, SweepAfterDiscoveryTakesDiscoverysPortInfo) {
  Rig rig;
  rig.memory.Seed(rig.topology);
  SweepResult r;
  EXPECT_EQ(rig.Sweep(&r), 0);
  EXPECT_TRUE(Rig::AllReport(r, 4));
  EXPECT_EQ(r.port_info_asked, 0);
  EXPECT_EQ(r.port_info_remembered, kPorts);
  // The width came from discovery's PortInfo, whole.
  EXPECT_EQ(r.switches[0].ports[0].info->link_width_active, 2);
}

TEST(SweepPortInfo, QuietPortsOnceEveryNSweepsReportedEverySweep) {
  Rig rig;
  rig.memory.Seed(rig.topology);
  rig.Sweep();
  int asked = 0;
  for (int i = 0; i < kEvery; ++i) {
    SweepResult r;
    asked += rig.Sweep(&r);
    EXPECT_TRUE(Rig::AllReport(r, 4)) << "sweep " << i;
  }
  EXPECT_EQ(asked, kPorts);  // each port once in `every` sweeps
}

TEST(SweepPortInfo, LinkDownShowsWithinNSweepsWhereCountersDoNotCount) {
  Rig rig;
  rig.memory.Seed(rig.topology);
  rig.Sweep();
  // ibsim's Unlink: the port goes down, LinkDownedCounter stays 0.
  rig.port->state = 1;
  rig.port->phys_state = 2;
  SweepResult r;
  for (int i = 0; i < kEvery; ++i) rig.Sweep(&r);
  EXPECT_TRUE(Rig::AllReport(r, 1));
  // Gone down under watch: asked every sweep until it is back, so its
  // return shows at the next sweep.
  EXPECT_EQ(rig.Sweep(&r), kPorts);
  rig.port->state = 4;
  rig.port->phys_state = 5;
  EXPECT_EQ(rig.Sweep(&r), kPorts);
  EXPECT_TRUE(Rig::AllReport(r, 4));
  // Back to once every `every` sweeps.
  int asked = 0;
  for (int i = 0; i < kEvery; ++i) asked += rig.Sweep();
  EXPECT_EQ(asked, kPorts);
}

TEST(SweepPortInfo, LinkDownedCounterMovingAsksAtTheNextSweep) {
  Rig rig;
  rig.memory.Seed(rig.topology);
  rig.Sweep();
  rig.Sweep();  // the counters' baseline
  rig.port->state = 1;
  rig.port->phys_state = 2;
  rig.link_downed = 1;
  SweepResult r;
  EXPECT_EQ(rig.Sweep(&r), kPorts);
  EXPECT_TRUE(Rig::AllReport(r, 1));
}

TEST(SweepPortInfo, SaturatedLinkDownedCounterMeansEverySweep) {
  Rig rig;
  rig.link_downed = 255;  // an 8-bit counter at its maximum
  rig.memory.Seed(rig.topology);
  rig.Sweep();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rig.Sweep(), kPorts);
}

TEST(SweepPortInfo, UnansweredPortInfoIsNotReportedFromMemory) {
  Rig rig;
  rig.memory.Seed(rig.topology);
  rig.Sweep();
  rig.port->answers = false;
  // The turn of every port comes within `every` sweeps; an asked port
  // whose PortInfo got no answer is absent, as without a memory.
  bool absent = false;
  for (int i = 0; i < kEvery; ++i) {
    SweepResult r;
    rig.Sweep(&r);
    for (const SwitchPortSample& p : r.switches[0].ports) {
      absent = absent || !p.info;
    }
  }
  EXPECT_TRUE(absent);
}

}  // namespace
}  // namespace fabric::mad
