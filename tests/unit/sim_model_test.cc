// The simulator's engine, driven by a stepped clock: conservation, the
// 4-byte word unit, congestion, faults and scenario timing.
#include <gtest/gtest.h>

#include <string>

#include "simulator/model.h"

namespace fabric::sim {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

SimConfig Config(Timeline timeline, int hosts = 4) {
  SimConfig c;
  c.hosts = hosts;
  c.tick = milliseconds(100);
  c.timeline = std::move(timeline);
  return c;
}

Timeline With(Scenario s, Duration start = Duration(0),
              Duration duration = Duration(0)) {
  Timeline t;
  Event e;
  e.scenario = s;
  e.start = start;
  e.duration = duration;
  t.events.push_back(e);
  return t;
}

void Advance(Cluster& c, Duration d) {
  const Duration end = c.now() + d;
  while (c.now() < end) c.Step();
}

std::uint64_t Get(const Cluster& c, int host, const char* dev, Ctr ctr) {
  const Port* p = c.FindPort(host, dev);
  EXPECT_NE(p, nullptr) << dev;
  return p ? p->counters.Get(ctr) : 0;
}

// Every link: what one end sent, the other end received (words and
// packets), whatever the scenario does to the traffic.
class SimConservation : public ::testing::TestWithParam<Scenario> {};

TEST_P(SimConservation, BytesSentEqualBytesReceived) {
  Cluster c(Config(With(GetParam())));
  Advance(c, seconds(12));
  int links = 0;
  std::uint64_t total = 0;
  for (const Port& p : c.ports()) {
    if (p.peer < 0) continue;
    const Port& q = c.ports()[p.peer];
    EXPECT_EQ(p.counters.Get(Ctr::kPortXmitData),
              q.counters.Get(Ctr::kPortRcvData))
        << p.node << " " << p.device << "/" << p.port_num;
    EXPECT_EQ(p.counters.Get(Ctr::kPortXmitPackets),
              q.counters.Get(Ctr::kPortRcvPackets))
        << p.node << " " << p.device << "/" << p.port_num;
    EXPECT_EQ(p.tx_bytes, q.rx_bytes);
    total += p.counters.Get(Ctr::kPortXmitData);
    ++links;
  }
  EXPECT_GT(links, 0);
  EXPECT_GT(total, 0u);
}

INSTANTIATE_TEST_SUITE_P(AllTrafficScenarios, SimConservation,
                         ::testing::Values(Scenario::kSteady,
                                           Scenario::kCongestionHotspot,
                                           Scenario::kPfcStorm,
                                           Scenario::kLinkFlap,
                                           Scenario::kLinkDegraded),
                         [](const auto& info) {
                           std::string name(ScenarioName(info.param));
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

TEST(SimModel, DataCountersAreFourByteWords) {
  Cluster c(Config(SingleScenario(Scenario::kSteady)));
  Advance(c, seconds(1));  // one full all-reduce period
  const Port* p = c.FindPort(0, "mlx5_0");
  ASSERT_NE(p, nullptr);
  // 0.8 × 400 Gb/s for half a second = 20 GB = 5e9 words.
  EXPECT_EQ(p->tx_bytes, 20'000'000'000u);
  EXPECT_EQ(p->counters.Get(Ctr::kPortXmitData), 5'000'000'000u);
  EXPECT_EQ(p->counters.Get(Ctr::kPortXmitData) * 4, p->tx_bytes);
  EXPECT_EQ(p->counters.Get(Ctr::kPortXmitPackets),
            20'000'000'000u / kBytesPerPacket);
  EXPECT_EQ(p->counters.Get(Ctr::kUnicastXmitPackets),
            p->counters.Get(Ctr::kPortXmitPackets));
  const Port* roce = c.FindPort(0, "mlx5_bond_0");
  ASSERT_NE(roce, nullptr);
  EXPECT_EQ(roce->RateString(), "200 Gb/sec (2X NDR)");
  EXPECT_EQ(roce->counters.Get(Ctr::kPortXmitData) * 4, 10'000'000'000u);
}

TEST(SimModel, AverageRateMatchesOfferedLoad) {
  Timeline t = SingleScenario(Scenario::kSteady);
  t.traffic.period = milliseconds(400);
  t.traffic.duty_cycle = 0.25;
  t.traffic.load = 0.6;
  Cluster c(Config(t));
  Advance(c, seconds(20));
  for (const Port& p : c.ports()) {
    if (p.host < 0) continue;
    const double rate = p.tx_bytes / 20.0;
    EXPECT_NEAR(rate, c.AverageOfferedBytesPerSecond(p), rate * 1e-6)
        << p.node << " " << p.device;
  }
  EXPECT_DOUBLE_EQ(c.AverageOfferedBytesPerSecond(*c.FindPort(0, "mlx5_0")),
                   0.6 * 50e9 * 0.25);
}

TEST(SimModel, SizeOverridesLoad) {
  Timeline t = SingleScenario(Scenario::kSteady);
  t.traffic.size_bytes = 5e9;  // per port per 1 s period, in 0.5 s bursts
  Cluster c(Config(t));
  Advance(c, seconds(3));
  EXPECT_EQ(c.FindPort(2, "mlx5_7")->tx_bytes, 15'000'000'000u);
}

TEST(SimModel, HotspotSlowsOnlyTheVictim) {
  Cluster c(Config(With(Scenario::kCongestionHotspot)));
  Advance(c, seconds(5));
  const Port* victim = c.FindPort(0, "mlx5_0");
  EXPECT_GT(victim->counters.Get(Ctr::kPortXmitWait), 0u);
  for (const Port& p : c.ports()) {
    if (p.host < 0 || &p == victim) continue;
    EXPECT_EQ(p.counters.Get(Ctr::kPortXmitWait), 0u)
        << p.node << " " << p.device;
  }
  // Shares the hot egress port with the external flow: less data got out.
  EXPECT_LT(victim->tx_bytes, c.FindPort(1, "mlx5_0")->tx_bytes);
  // Nothing exceeds line rate on the hot egress port (host1 mlx5_0 rcv).
  const Port* sink = c.FindPort(1, "mlx5_0");
  EXPECT_LE(sink->rx_bytes, 5 * 50e9);
}

TEST(SimModel, XmitWaitTicksFollowBlockedTime) {
  // Degraded to 2X: the HCA offers 320 Gb/s into 200 Gb/s, blocked 37.5% of
  // each burst tick; 5 burst ticks in 1 s of 256 ns ticks.
  Cluster c(Config(With(Scenario::kLinkDegraded)));
  Advance(c, seconds(1));
  const Port* p = c.FindPort(0, "mlx5_5");
  EXPECT_EQ(p->RateString(), "200 Gb/sec (2X NDR)");
  const double expected = 5 * 0.375 * 0.1 / kXmitWaitTickSeconds;
  EXPECT_NEAR(static_cast<double>(p->counters.Get(Ctr::kPortXmitWait)),
              expected, 2);
  EXPECT_EQ(c.FindPort(0, "mlx5_4")->counters.Get(Ctr::kPortXmitWait), 0u);
}

TEST(SimModel, LinkDegradedOnlyInsideItsWindow) {
  Cluster c(Config(With(Scenario::kLinkDegraded, seconds(2), seconds(3))));
  Advance(c, seconds(1));
  EXPECT_EQ(c.FindPort(0, "mlx5_5")->RateString(), "400 Gb/sec (4X NDR)");
  Advance(c, seconds(2));  // t = 3 s
  EXPECT_EQ(c.FindPort(0, "mlx5_5")->RateString(), "200 Gb/sec (2X NDR)");
  Advance(c, seconds(3));  // t = 6 s
  EXPECT_EQ(c.FindPort(0, "mlx5_5")->RateString(), "400 Gb/sec (4X NDR)");
}

TEST(SimModel, LinkFlapCountsDownedOnBothEnds) {
  Cluster c(Config(With(Scenario::kLinkFlap)));
  c.Step();  // t = 0.1 s: inside the first down second
  const Port* p = c.FindPort(0, "mlx5_1");
  EXPECT_FALSE(p->up);
  EXPECT_FALSE(c.ports()[p->peer].up);
  Advance(c, milliseconds(1500));  // t = 1.6 s: back up
  EXPECT_TRUE(p->up);
  Advance(c, seconds(11));  // t = 12.6 s: third down phase began at 12 s
  EXPECT_EQ(p->counters.Get(Ctr::kLinkDowned), 3u);
  EXPECT_EQ(c.ports()[p->peer].counters.Get(Ctr::kLinkDowned), 3u);
  EXPECT_EQ(Get(c, 0, "mlx5_0", Ctr::kLinkDowned), 0u);
}

TEST(SimModel, SymbolErrorsAtTheirRateAndOnlyInTheirWindow) {
  Cluster c(Config(With(Scenario::kSymbolErrors, seconds(1), seconds(2))));
  Advance(c, seconds(5));
  EXPECT_EQ(Get(c, 0, "mlx5_4", Ctr::kSymbolError), 400u);  // 200/s × 2 s
  EXPECT_EQ(Get(c, 0, "mlx5_4", Ctr::kPortRcvErrors), 20u);
  EXPECT_EQ(Get(c, 0, "mlx5_0", Ctr::kSymbolError), 0u);
}

TEST(SimModel, CounterSaturationSaturatesAndWraps) {
  Cluster c(Config(With(Scenario::kCounterSaturation)));
  Advance(c, seconds(2));
  const Port* p = c.FindPort(0, "mlx5_6");
  EXPECT_EQ(p->counters.Get(Ctr::kSymbolError), 65535u);
  EXPECT_EQ(p->counters.Get(Ctr::kLinkDowned), 255u);
  EXPECT_EQ(p->counters.Get(Ctr::kLinkErrorRecovery), 255u);
  EXPECT_EQ(p->counters.Get(Ctr::kLocalLinkIntegrityErrors), 15u);
  EXPECT_EQ(p->counters.Get(Ctr::kExcessiveBufferOverrunErrors), 15u);
  // 32-bit Q-counters wrapped past 2^32.
  EXPECT_LT(p->hw_counters.at("out_of_sequence"), 100u);
  EXPECT_LT(p->hw_counters.at("rx_write_requests"), 1'000'000u);
  EXPECT_GT(p->hw_counters.at("rx_write_requests"), 0u);
}

TEST(SimModel, DeviceRemovedAndBackWithFreshCounters) {
  Cluster c(Config(With(Scenario::kDeviceRemoved, seconds(2), seconds(2))));
  Advance(c, seconds(2));
  const Port* p = c.FindPort(0, "mlx5_9");
  const auto before = p->counters.Get(Ctr::kPortXmitData);
  EXPECT_GT(before, 0u);
  EXPECT_FALSE(c.devices()[p->device_index].present);
  Advance(c, seconds(2));  // t = 4 s: back
  EXPECT_TRUE(c.devices()[p->device_index].present);
  EXPECT_LT(p->counters.Get(Ctr::kPortXmitData), before);
}

TEST(SimModel, SmFailoverMovesTheMaster) {
  Cluster c(Config(With(Scenario::kSmFailover, seconds(1))));
  Advance(c, seconds(1));
  EXPECT_EQ(c.master_sm().lid, 1);
  Advance(c, seconds(1));  // dead master, standby not yet in charge
  EXPECT_EQ(c.master_sm().lid, 1);
  EXPECT_FALSE(c.master_sm().alive);
  Advance(c, seconds(2));  // t = 4 s > 1 s + 2 s takeover
  EXPECT_EQ(c.master_sm().lid, 2);
  EXPECT_EQ(c.master_sm().state, 3);
  const auto count = c.master_sm().act_count;
  Advance(c, seconds(1));
  EXPECT_GT(c.master_sm().act_count, count);
}

TEST(SimModel, SmHungFreezesActivityCount) {
  Cluster c(Config(With(Scenario::kSmHung, seconds(1))));
  Advance(c, seconds(1));
  const auto count = c.master_sm().act_count;
  Advance(c, seconds(3));
  EXPECT_EQ(c.master_sm().act_count, count);
  EXPECT_TRUE(c.master_sm().alive);
  EXPECT_EQ(c.master_sm().state, 3);
}

// probe-loss drops only the target pair's probes (host 0 -> host 1 by
// default; `host:` moves it), only while the event is on.
TEST(SimModel, ProbeLossOnOnePairWhileOn) {
  Timeline t = With(Scenario::kProbeLoss, seconds(1), seconds(2));
  Event moved = t.events[0];
  moved.host = 3;  // 3 -> 0: the ring wraps
  t.events.push_back(moved);
  Cluster c(Config(t));
  EXPECT_EQ(c.ProbeLoss(0, 1), 0);
  Advance(c, seconds(2));
  EXPECT_EQ(c.ProbeLoss(0, 1), kProbeLossFraction);
  EXPECT_EQ(c.ProbeLoss(3, 0), kProbeLossFraction);
  EXPECT_EQ(c.ProbeLoss(1, 0), 0);
  EXPECT_EQ(c.ProbeLoss(0, 2), 0);
  Advance(c, seconds(2));  // t = 4 s: over
  EXPECT_EQ(c.ProbeLoss(0, 1), 0);
}

TEST(SimModel, PfcStormPausesTheSenderAndMarksEcn) {
  Cluster c(Config(With(Scenario::kPfcStorm)));
  Advance(c, seconds(3));
  const Port* storming = c.FindPort(0, "mlx5_bond_0");
  const Port* sender = c.FindPort(3, "mlx5_bond_0");          // ring: 3 -> 0
  EXPECT_EQ(storming->ethtool.at("tx_prio3_pause"), 30000u);  // 100 µs
  EXPECT_EQ(storming->ethtool.at("tx_prio3_pause_duration"), 3'000'000u);
  EXPECT_EQ(storming->ethtool.at("tx_pause_storm_warning_events"), 1u);
  EXPECT_EQ(storming->ethtool.at("tx_pause_storm_error_events"), 0u);
  EXPECT_GT(sender->ethtool.at("rx_prio3_pause"), 0u);
  EXPECT_GT(sender->ethtool.at("rx_prio3_pause_duration"), 0u);
  EXPECT_GT(sender->counters.Get(Ctr::kPortXmitWait), 0u);
  EXPECT_GT(storming->hw_counters.at("np_ecn_marked_roce_packets"), 0u);
  EXPECT_GT(storming->hw_counters.at("np_cnp_sent"), 0u);
  EXPECT_EQ(sender->hw_counters.at("rp_cnp_handled"),
            storming->hw_counters.at("np_cnp_sent"));
  // Unaffected RoCE pair.
  EXPECT_EQ(c.FindPort(1, "mlx5_bond_0")->ethtool.at("rx_prio3_pause"), 0u);
  // After 8 s the NIC gives up pausing: one error event, traffic resumes.
  Advance(c, seconds(6));
  EXPECT_EQ(storming->ethtool.at("tx_pause_storm_error_events"), 1u);
  const auto paused = storming->ethtool.at("tx_prio3_pause");
  Advance(c, seconds(1));
  EXPECT_EQ(storming->ethtool.at("tx_prio3_pause"), paused);
}

TEST(SimModel, HotspotBurstsFollowTheirSchedule) {
  Timeline t = With(Scenario::kCongestionHotspot);
  t.events[0].burst_length = milliseconds(300);
  t.events[0].burst_period = seconds(10);
  Cluster c(Config(t));
  // All-reduce bursts: t in (0, 0.5]. Hotspot: (0, 0.3). Ticks ending at
  // 0.1 and 0.2 s see the hotspot during a burst; 0.3 s does not.
  Advance(c, milliseconds(200));
  const auto wait = Get(c, 0, "mlx5_0", Ctr::kPortXmitWait);
  EXPECT_GT(wait, 0u);
  Advance(c, seconds(9));  // t = 9.2 s: no hotspot since 0.3 s
  EXPECT_EQ(Get(c, 0, "mlx5_0", Ctr::kPortXmitWait), wait);
  Advance(c, milliseconds(1000));  // t = 10.2 s: second burst
  EXPECT_GT(Get(c, 0, "mlx5_0", Ctr::kPortXmitWait), wait);
}

TEST(SimModel, DeterministicAcrossRuns) {
  Timeline t = With(Scenario::kCongestionHotspot);
  t.events.push_back(With(Scenario::kPfcStorm, seconds(1)).events[0]);
  Cluster a(Config(t)), b(Config(t));
  Advance(a, seconds(7));
  Advance(b, seconds(7));
  for (size_t i = 0; i < a.ports().size(); ++i) {
    for (int k = 0; k < static_cast<int>(Ctr::kCount); ++k) {
      EXPECT_EQ(a.ports()[i].counters.Get(static_cast<Ctr>(k)),
                b.ports()[i].counters.Get(static_cast<Ctr>(k)));
    }
    EXPECT_EQ(a.ports()[i].ethtool, b.ports()[i].ethtool);
  }
}

TEST(SimModel, OneHostLoopsThroughItsLeaf) {
  Cluster steady(Config(With(Scenario::kSteady), 1));
  Advance(steady, seconds(2));
  const Port* p = steady.FindPort(0, "mlx5_0");
  EXPECT_GT(p->tx_bytes, 0u);
  EXPECT_EQ(p->tx_bytes, p->rx_bytes);  // a ring of one: back to itself

  Cluster hot(Config(With(Scenario::kCongestionHotspot), 1));
  Advance(hot, seconds(2));
  EXPECT_GT(hot.FindPort(0, "mlx5_0")->counters.Get(Ctr::kPortXmitWait), 0u);
}

}  // namespace
}  // namespace fabric::sim
