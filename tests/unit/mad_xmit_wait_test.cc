// The 64-bit PortXmitWait (issue 42): PortCountersExtended's PortXmitWait
// decoded from MADs that libibmad's mad_encode_field builds (the
// independent oracle of the IBA layout), the sweep taking it only where the
// switch PMA's ClassPortInfo advertises IsAddlPortCountersExtendedSupported
// (CapabilityMask2 bit 1, as perfquery -x decides) and the 32-bit
// PortCounters one elsewhere, and the simulator's PMA advertising and
// answering it: a wait beyond 2^32 ticks neither saturates nor wraps, and
// the congestion trees (collectors/fabric_tree.h) keep counting it.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <algorithm>
#include <memory>

#include "collectors/fabric_tree.h"
#include "simulator/mad.h"
#include "simulator/model.h"
#include "sources/mad/codec.h"
#include "sources/mad/discovery.h"
#include "sources/mad/sweep.h"
#include "tests/support/fake_mad_transport.h"

namespace fabric::mad {
namespace {

constexpr std::uint64_t kTwo32 = std::uint64_t{1} << 32;
constexpr std::uint16_t kSwitchLid = 10;

// A GetResp of PerfMgt `attr`, header and all through libibmad's fields.
Mad PerfResponse(std::uint16_t attr) {
  Mad m{};
  std::uint32_t v = 1;
  mad_encode_field(m.data(), IB_MAD_BASEVER_F, &v);
  mad_encode_field(m.data(), IB_MAD_CLASSVER_F, &v);
  mad_encode_field(m.data(), IB_MAD_RESPONSE_F, &v);
  v = IB_PERFORMANCE_CLASS;
  mad_encode_field(m.data(), IB_MAD_MGMTCLASS_F, &v);
  v = IB_MAD_METHOD_GET;
  mad_encode_field(m.data(), IB_MAD_METHOD_F, &v);
  v = attr;
  mad_encode_field(m.data(), IB_MAD_ATTRID_F, &v);
  return m;
}

void Put64(Mad& m, MAD_FIELDS f, std::uint64_t value) {
  mad_encode_field(m.data() + IB_PC_DATA_OFFS, f, &value);
}

TEST(XmitWaitCodec, ReadsTheExtendedPortXmitWaitWhereLibibmadPutsIt) {
  Mad m = PerfResponse(IB_GSI_PORT_COUNTERS_EXT);
  const std::uint64_t wait = 0x0000000123456789ULL;  // beyond 2^32
  Put64(m, IB_PC_EXT_XMT_BYTES_F, 11);
  Put64(m, IB_PC_EXT_XMT_WAIT_F, wait);
  // Its neighbours, so an off-by-one field would read the wrong value.
  Put64(m, IB_PC_EXT_VL15_DROPPED_F, 7);
  Put64(m, IB_PC_EXT_QP1_DROP_F, 9);
  std::string error;
  auto e = DecodePortCountersExtended(m, &error, /*additional=*/true);
  ASSERT_TRUE(e) << error;
  ASSERT_TRUE(e->xmit_wait);
  EXPECT_EQ(*e->xmit_wait, wait);
  EXPECT_EQ(e->xmit_data, 11u);
  // Not advertised: those bytes are reserved and not read.
  e = DecodePortCountersExtended(m, &error);
  ASSERT_TRUE(e) << error;
  EXPECT_FALSE(e->xmit_wait);
  // All 64 bits.
  Put64(m, IB_PC_EXT_XMT_WAIT_F, ~std::uint64_t{0});
  e = DecodePortCountersExtended(m, &error, true);
  ASSERT_TRUE(e && e->xmit_wait);
  EXPECT_EQ(*e->xmit_wait, ~std::uint64_t{0});
}

TEST(XmitWaitCodec, TheCapabilityIsCapabilityMask2Bit1AsPerfqueryReadsIt) {
  Mad m = PerfResponse(CLASS_PORT_INFO);
  std::uint32_t cap2 = 0x2;  // IsAddlPortCountersExtendedSupported
  mad_encode_field(m.data() + IB_PC_DATA_OFFS, IB_CPI_CAPMASK2_F, &cap2);
  std::string error;
  auto c = DecodePmaClassPortInfo(m, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_TRUE(c->AddlPortCountersExtendedSupported());
  // Bit 0 (IsPMKeySupported) alone, or the 16-bit CapabilityMask's bit 1:
  // not it.
  cap2 = 0x1;
  mad_encode_field(m.data() + IB_PC_DATA_OFFS, IB_CPI_CAPMASK2_F, &cap2);
  std::uint32_t cap = 0x0202;
  mad_encode_field(m.data() + IB_PC_DATA_OFFS, IB_CPI_CAPMASK_F, &cap);
  c = DecodePmaClassPortInfo(m, &error);
  ASSERT_TRUE(c) << error;
  EXPECT_FALSE(c->AddlPortCountersExtendedSupported());
}

TEST(XmitWaitChoice, WideWhenAdvertisedElseThe32BitOne) {
  SwitchPortSample p;
  p.counters = PortCounters{};
  p.counters->xmit_wait = 0xffffffff;
  p.counters->saturated = {"symbol_error", "port_xmit_wait"};
  p.extended = PortCountersExtended{};
  p.extended->xmit_wait = 5 * kTwo32;

  SwitchPortSample narrow = p;
  ChooseXmitWait(narrow, false);
  ASSERT_TRUE(narrow.xmit_wait);
  EXPECT_EQ(narrow.xmit_wait->ticks, 0xffffffffu);
  EXPECT_FALSE(narrow.xmit_wait->wide);
  EXPECT_TRUE(narrow.xmit_wait->saturated);
  EXPECT_FALSE(narrow.extended->xmit_wait);  // reserved bytes: dropped
  EXPECT_EQ(narrow.counters->saturated.size(), 2u);

  SwitchPortSample wide = p;
  ChooseXmitWait(wide, true);
  ASSERT_TRUE(wide.xmit_wait);
  EXPECT_EQ(wide.xmit_wait->ticks, 5 * kTwo32);
  EXPECT_TRUE(wide.xmit_wait->wide);
  EXPECT_FALSE(wide.xmit_wait->saturated);
  // The exported PortXmitWait does not saturate; other fields still do.
  EXPECT_EQ(wide.counters->saturated, std::vector<std::string>{"symbol_error"});

  // Advertised but PortCountersExtended unanswered: none this sweep, not a
  // 32-bit value that would look like a counter reset.
  SwitchPortSample lost = p;
  lost.extended.reset();
  ChooseXmitWait(lost, true);
  EXPECT_FALSE(lost.xmit_wait);
}

// One switch (LID 10, two linked ports) whose PMA answers ClassPortInfo
// with `cap2` as CapabilityMask2, PortCounters with PortXmitWait saturated
// and PortCountersExtended with a wait beyond 2^32.
struct Rig {
  explicit Rig(std::uint32_t cap2, bool sm_here = false) : cap2(cap2) {
    topology = testing::LocalCaAndOneSwitch(kSwitchLid, 2);
    FabricNode& sw = topology.nodes[1];
    sw.ports[0] = {.num = 0,
                   .state = 4,
                   .phys_state = 5,
                   .lid = kSwitchLid,
                   .capability_mask = sm_here ? kCapabilityIsSm : 0u};
    sw.ports[1] = {.num = 1, .state = 4, .phys_state = 5};
    sw.ports[2] = {.num = 2, .state = 4, .phys_state = 5};
    port->state = 4;
    port->lid = 1;
    transport = std::make_unique<testing::FakeMadTransport>(
        port, [this](std::uint16_t dlid, const Mad& mad) -> MadResult {
          const auto attr = static_cast<std::uint16_t>(mad_get_field(
              const_cast<std::uint8_t*>(mad.data()), 0, IB_MAD_ATTRID_F));
          ++asked[attr];
          if (dlid != kSwitchLid) return std::errc::timed_out;
          Mad m = mad;
          std::uint32_t v = 1;
          mad_encode_field(m.data(), IB_MAD_RESPONSE_F, &v);
          std::uint8_t* d = m.data() + IB_PC_DATA_OFFS;
          if (attr == CLASS_PORT_INFO) {
            mad_encode_field(d, IB_CPI_CAPMASK2_F, &this->cap2);
          } else if (attr == IB_GSI_PORT_COUNTERS) {
            std::uint32_t sat = 0xffffffff;
            mad_encode_field(d, IB_PC_XMT_WAIT_F, &sat);
          } else if (attr == IB_GSI_PORT_COUNTERS_EXT) {
            if (lose_extended) return std::errc::timed_out;
            std::uint64_t wait = 3 * kTwo32 + 5;
            mad_encode_field(d, IB_PC_EXT_XMT_WAIT_F, &wait);
          } else {
            mad_set_field(m.data(), 0, IB_MAD_STATUS_F, 0x0c);
          }
          return m;
        });
  }
  SweepResult Sweep() {
    asked.clear();
    MadOptions options;
    options.timeout = std::chrono::milliseconds(1);
    options.retries = 0;
    return mad::Sweep(*transport, topology, Shard{}, options, &cache);
  }
  std::uint32_t cap2;
  bool lose_extended = false;
  Topology topology;
  std::shared_ptr<testing::FakePortState> port =
      std::make_shared<testing::FakePortState>();
  std::unique_ptr<testing::FakeMadTransport> transport;
  PescCache cache;
  std::map<std::uint16_t, int> asked;
};

TEST(XmitWaitSweep, AdvertisingPmaGivesThe64BitWaitFromTheFirstSweep) {
  Rig rig(0x2);
  SweepResult r = rig.Sweep();
  ASSERT_EQ(r.switches.size(), 1u);
  for (const SwitchPortSample& p : r.switches[0].ports) {
    ASSERT_TRUE(p.xmit_wait) << p.num;
    EXPECT_TRUE(p.xmit_wait->wide);
    EXPECT_EQ(p.xmit_wait->ticks, 3 * kTwo32 + 5);
    EXPECT_FALSE(p.xmit_wait->saturated);
    ASSERT_TRUE(p.counters);
    EXPECT_TRUE(p.counters->saturated.empty());
  }
  // The cached ClassPortInfo decides the next sweeps: no MAD more than
  // before (no ClassPortInfo again, one PortCountersExtended per port).
  r = rig.Sweep();
  EXPECT_EQ(rig.asked[CLASS_PORT_INFO], 0);
  EXPECT_EQ(rig.asked[IB_GSI_PORT_COUNTERS_EXT], 2);
  EXPECT_TRUE(r.switches[0].ports[0].xmit_wait->wide);

  // PortCountersExtended lost: no wait this sweep rather than the 32-bit.
  rig.lose_extended = true;
  r = rig.Sweep();
  EXPECT_FALSE(r.switches[0].ports[0].xmit_wait);
}

TEST(XmitWaitSweep, PmaWithoutTheBitKeepsThe32BitWait) {
  // ibsim's ClassPortInfo echoes the Get (all zero); a PMA with only
  // IsPMKeySupported likewise.
  for (std::uint32_t cap2 : {0x0u, 0x1u}) {
    Rig rig(cap2);
    const SweepResult r = rig.Sweep();
    for (const SwitchPortSample& p : r.switches[0].ports) {
      ASSERT_TRUE(p.xmit_wait) << p.num;
      EXPECT_FALSE(p.xmit_wait->wide);
      EXPECT_EQ(p.xmit_wait->ticks, 0xffffffffu);
      EXPECT_TRUE(p.xmit_wait->saturated);
      EXPECT_FALSE(p.extended->xmit_wait);
    }
  }
}

TEST(XmitWaitSweep, NoClassPortInfoAskedMeansThe32BitWait) {
  // No PESC cache (pesc: false): no ClassPortInfo is sent, so nothing
  // advertises the wide one.
  Rig rig(0x2);
  MadOptions options;
  options.timeout = std::chrono::milliseconds(1);
  const SweepResult r = Sweep(*rig.transport, rig.topology, Shard{}, options);
  EXPECT_EQ(rig.asked[CLASS_PORT_INFO], 0);
  EXPECT_FALSE(r.switches[0].ports[0].xmit_wait->wide);
}

TEST(XmitWaitSweep, PescOffStillAsksTheClassPortInfoAloneOnce) {
  // collectors.fabric.pesc: false, and the shard-edge reads of the trees.
  Rig rig(0x2);
  MadOptions options;
  options.timeout = std::chrono::milliseconds(1);
  options.retries = 0;
  for (int sweep = 0; sweep < 2; ++sweep) {
    rig.asked.clear();
    const SweepResult r = Sweep(*rig.transport, rig.topology, Shard{}, options,
                                &rig.cache, {}, /*pesc_mads=*/false);
    EXPECT_EQ(rig.asked[CLASS_PORT_INFO], sweep == 0 ? 1 : 0);
    EXPECT_EQ(rig.asked[kAttrPortExtendedSpeedsCounters], 0);
    EXPECT_EQ(r.pesc_unsupported, 0);
    ASSERT_TRUE(r.switches[0].ports[0].xmit_wait);
    EXPECT_TRUE(r.switches[0].ports[0].xmit_wait->wide);
  }
}

TEST(XmitWaitSweep, AnSmsSwitchGetsTheClassPortInfoButNoPesc) {
  Rig sm(0x2, /*sm_here=*/true);
  SweepResult r = sm.Sweep();
  EXPECT_TRUE(r.switches[0].hosts_sm);
  EXPECT_EQ(sm.asked[CLASS_PORT_INFO], 1);
  EXPECT_EQ(sm.asked[kAttrPortExtendedSpeedsCounters], 0);
  ASSERT_TRUE(r.switches[0].ports[0].xmit_wait);
  EXPECT_TRUE(r.switches[0].ports[0].xmit_wait->wide);
  EXPECT_EQ(r.switches[0].ports[0].xmit_wait->ticks, 3 * kTwo32 + 5);
  // Answered: not asked again; still no PESC.
  r = sm.Sweep();
  EXPECT_EQ(sm.asked[CLASS_PORT_INFO], 0);
  EXPECT_EQ(sm.asked[kAttrPortExtendedSpeedsCounters], 0);
  EXPECT_TRUE(r.switches[0].ports[1].xmit_wait->wide);
}

MadOptions Fast() {
  MadOptions o;
  o.timeout = std::chrono::milliseconds(50);
  o.retries = 2;
  o.max_outstanding = 256;
  return o;
}

void Step(sim::Cluster& c, sim::Duration d) {
  const sim::Duration end = c.now() + d;
  while (c.now() < end) c.Step();
}

const SwitchPortSample* Find(const SweepResult& r, std::uint64_t guid,
                             int port) {
  for (const SwitchSample& s : r.switches) {
    if (s.guid != guid) continue;
    for (const SwitchPortSample& p : s.ports) {
      if (p.num == port) return &p;
    }
  }
  return nullptr;
}

double Value(std::vector<prometheus::MetricFamily>& families,
             const std::string& name, std::uint64_t guid, int port) {
  for (const auto& f : families) {
    if (f.name != name) continue;
    for (const auto& m : f.metric) {
      bool g = false, p = false;
      for (const auto& l : m.label) {
        g |= l.name == "switch_guid" && l.value == GuidString(guid);
        p |= l.name == "port" && l.value == std::to_string(port);
      }
      if (g && p) return m.counter.value;
    }
  }
  return -1;
}

// The simulator's Quantum-2 switch port facing a slow receiver waits 6.25e9
// ticks per second at NDR (8 bytes a tick): past 2^32 within a second.
TEST(XmitWaitSim, AWaitBeyond2To32NeitherSaturatesNorWraps) {
  sim::SimConfig config;
  config.hosts = 3;
  config.timeline.traffic.load = 0.1;
  sim::Event slow;
  slow.scenario = sim::Scenario::kSlowReceiver;
  slow.host = 0;
  slow.device = "mlx5_0";
  config.timeline.events = {slow};
  ASSERT_TRUE(config.timeline.quantum_switches);
  sim::Cluster c(config);
  const sim::Port* root = nullptr;
  for (const sim::Port& p : c.ports()) {
    if (p.host < 0 && p.device == "ib-leaf0" && p.port_num == 1) root = &p;
  }
  ASSERT_NE(root, nullptr);
  for (int i = 0;
       i < 100 && root->counters.Get(sim::Ctr::kPortXmitWait) <= 2 * kTwo32;
       ++i) {
    Step(c, std::chrono::seconds(1));
  }
  ASSERT_GT(root->counters.Get(sim::Ctr::kPortXmitWait), 2 * kTwo32);

  const sim::Port* local = c.FindPort(0, "mlx5_1");
  ASSERT_NE(local, nullptr);
  auto transport = sim::MakeSimMadTransport(
      c, {.local_port = static_cast<int>(local - c.ports().data())});
  const Topology topo = Discover(*transport, Fast());
  PescCache cache;
  const SweepResult first = Sweep(*transport, topo, Shard{}, Fast(), &cache);
  const SwitchPortSample* p = Find(first, root->guid, 1);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->xmit_wait);
  EXPECT_TRUE(p->xmit_wait->wide);
  EXPECT_EQ(p->xmit_wait->ticks, root->counters.Get(sim::Ctr::kPortXmitWait));
  ASSERT_TRUE(p->counters);
  EXPECT_EQ(p->counters->xmit_wait, 0xffffffffu);  // the 32-bit one is stuck

  // The trees' per-port wait keeps counting beyond 2^32: a second of
  // waiting at the root between two sweeps.
  FabricTrees trees;
  MetricSink sink;
  auto name = [](std::uint64_t, const std::string& f) { return f; };
  trees.Update(*transport, Fast(), topo, Shard{}, first, 10, 1e9, name, sink);
  const std::uint64_t before = root->counters.Get(sim::Ctr::kPortXmitWait);
  Step(c, std::chrono::seconds(1));
  const SweepResult second = Sweep(*transport, topo, Shard{}, Fast(), &cache);
  p = Find(second, root->guid, 1);
  ASSERT_TRUE(p && p->xmit_wait);
  EXPECT_GT(p->xmit_wait->ticks, before);
  MetricSink sink2;
  trees.Update(*transport, Fast(), topo, Shard{}, second, 11, 1e9 + 1, name,
               sink2);
  auto families = sink2.Take();
  const double secs =
      Value(families, "fabric_switch_port_transmit_wait_seconds_total",
            root->guid, 1);
  // Ticks x 8 bytes / 50 GB/s: most of that second (the slow receiver
  // drains a tenth of line rate).
  EXPECT_GT(secs, 0.5);
  EXPECT_LE(secs, 1.0 + 1e-9);
}

}  // namespace
}  // namespace fabric::mad
