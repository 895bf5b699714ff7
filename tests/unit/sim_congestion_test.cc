// Congestion trees in the simulator (issue 42): credit backpressure spreads
// a blocked egress port's wait upstream along the LFT routes, hop by hop,
// and stops at it; the root's data rate tells its cause (low for a slow
// receiver, line rate for an oversubscribed or unbalanced link). Driven by
// a stepped clock: counters compared over whole windows.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "simulator/cluster_routes.h"
#include "simulator/model.h"

namespace fabric::sim {
namespace {

using std::chrono::seconds;

constexpr int kHosts = 4;

Event At(Scenario s, int host, const char* device, Duration start = {},
         Duration duration = {}) {
  Event e;
  e.scenario = s;
  e.host = host;
  e.device = device;
  e.start = start;
  e.duration = duration;
  return e;
}

// Ring traffic at 10 %: with the scenarios' own load no HCA exceeds its
// line rate, so every wait comes from the tree.
SimConfig Config(std::vector<Event> events, int uplinks = 1) {
  SimConfig c;
  c.hosts = kHosts;
  c.timeline.events = std::move(events);
  c.timeline.uplinks = uplinks;
  c.timeline.traffic.load = 0.1;
  return c;
}

void Advance(Cluster& c, Duration d) {
  const Duration end = c.now() + d;
  while (c.now() < end) c.Step();
}

int SwitchPort(const Cluster& c, const std::string& sw, int num) {
  for (std::size_t i = 0; i < c.ports().size(); ++i) {
    const Port& p = c.ports()[i];
    if (p.host < 0 && p.device == sw && p.port_num == num) {
      return static_cast<int>(i);
    }
  }
  ADD_FAILURE() << sw << " port " << num;
  return 0;
}

int HostPort(const Cluster& c, int host, const char* device) {
  const Port* p = c.FindPort(host, device);
  EXPECT_NE(p, nullptr);
  return p ? static_cast<int>(p - c.ports().data()) : 0;
}

// Counter deltas of every port over one window.
class Window {
 public:
  explicit Window(const Cluster& c) : c_(c) { Mark(); }
  void Mark() {
    before_.clear();
    for (const Port& p : c_.ports()) before_.push_back(p.counters);
  }
  // The share of the window port i waited.
  double Wait(int i, Duration window) const {
    return Delta(i, Ctr::kPortXmitWait) /
           c_.ports()[i].XmitWaitTicksPerSecond() /
           std::chrono::duration<double>(window).count();
  }
  // Port i's data rate as a share of its line rate.
  double Utilisation(int i, Duration window) const {
    return Delta(i, Ctr::kPortXmitData) * 4.0 /
           std::chrono::duration<double>(window).count() /
           c_.ports()[i].RateBytesPerSecond();
  }
  double Delta(int i, Ctr ctr) const {
    return static_cast<double>(c_.ports()[i].counters.Get(ctr) -
                               before_[i].Get(ctr));
  }

 private:
  const Cluster& c_;
  std::vector<PortCounters> before_;
};

// The switch ports that wait over the window.
std::set<int> Waiting(const Cluster& c, const Window& w, Duration d,
                      bool switches_only = true) {
  std::set<int> out;
  for (std::size_t i = 0; i < c.ports().size(); ++i) {
    if (switches_only && c.ports()[i].host >= 0) continue;
    if (w.Wait(static_cast<int>(i), d) > 0.001) out.insert(static_cast<int>(i));
  }
  return out;
}

TEST(SimCongestion, SlowReceiverWaitsSpreadUpTheRoutesAndStopAtTheRoot) {
  Cluster c(Config({At(Scenario::kSlowReceiver, 0, "mlx5_0")}));
  Advance(c, seconds(1));
  Window w(c);
  const Duration d = seconds(10);
  Advance(c, d);
  // The LFT route from every host's mlx5_1 to host0 mlx5_0: its leaf's
  // uplink, the spine's port to ib-leaf0, ib-leaf0's port to host0.
  const ClusterRoutes routes(c.ports());
  const int root = SwitchPort(c, "ib-leaf0", 1);
  const std::vector<int> want = {HostPort(c, 2, "mlx5_1"),
                                 SwitchPort(c, "ib-leaf1", kHosts + 1),
                                 SwitchPort(c, "ib-spine", 1), root};
  EXPECT_EQ(routes.Route(want[0], HostPort(c, 0, "mlx5_0")), want);

  // Exactly the switch ports on the routes wait; the root the most.
  EXPECT_EQ(Waiting(c, w, d), (std::set<int>{want[1], want[2], root}));
  const double root_wait = w.Wait(root, d);
  EXPECT_GT(root_wait, 0.8);
  EXPECT_LT(w.Wait(want[2], d), root_wait);
  EXPECT_LT(w.Wait(want[1], d), w.Wait(want[2], d));  // farther, less
  for (int h = 0; h < kHosts; ++h) {                  // every source waits
    EXPECT_GT(w.Wait(HostPort(c, h, "mlx5_1"), d), 0.5) << h;
    EXPECT_LT(w.Wait(HostPort(c, h, "mlx5_1"), d), w.Wait(want[1], d)) << h;
  }
  // The root drains only what the slow HCA takes: a tenth of line rate.
  EXPECT_NEAR(w.Utilisation(root, d), kSlowReceiverDrain, 0.005);
  // Upstream carries no more than that (lossless: nothing is dropped).
  EXPECT_NEAR(w.Delta(want[2], Ctr::kPortXmitData) +
                  w.Delta(HostPort(c, 3, "mlx5_0"), Ctr::kPortXmitData),
              w.Delta(root, Ctr::kPortXmitData),
              w.Delta(root, Ctr::kPortXmitData) * 1e-6);
  // The receiver's own transmitter is no part of the tree.
  EXPECT_EQ(w.Delta(HostPort(c, 0, "mlx5_0"), Ctr::kPortXmitWait), 0);
}

TEST(SimCongestion,
     OversubscribedUplinkRunsAtLineRateAndDownstreamDoesNotWait) {
  Cluster c(Config({At(Scenario::kOversubscribedUplink, 0, "mlx5_0")}));
  Window w(c);
  const Duration d = seconds(10);
  Advance(c, d);
  const int root = SwitchPort(c, "ib-leaf0", kHosts + 1);
  EXPECT_EQ(Waiting(c, w, d), std::set<int>{root});
  EXPECT_GT(w.Utilisation(root, d), 0.999);
  // 4 hosts offer 0.8 each into one uplink: 1 - 1/3.2 of the time queued.
  EXPECT_NEAR(w.Wait(root, d), 1 - 1 / 3.2, 0.01);
  // Past the root (the spine to ib-leaf1, ib-leaf1 to the hosts): what got
  // through, no wait.
  EXPECT_EQ(w.Delta(SwitchPort(c, "ib-spine", 2), Ctr::kPortXmitWait), 0);
  for (int h = 0; h < kHosts; ++h) {
    EXPECT_EQ(w.Delta(SwitchPort(c, "ib-leaf1", h + 1), Ctr::kPortXmitWait), 0);
    const double source = w.Wait(HostPort(c, h, "mlx5_0"), d);
    EXPECT_GT(source, 0.5);
    EXPECT_LT(source, w.Wait(root, d));
  }
}

TEST(SimCongestion, UnbalancedParallelLinksOneCarriesAndWaitsTheOtherIdles) {
  Cluster c(Config({At(Scenario::kUnbalancedLinks, 0, "mlx5_0")}, 2));
  Window w(c);
  const Duration d = seconds(10);
  Advance(c, d);
  // Two cables ib-leaf0 -- ib-spine; the LFT routes every rail-1 LID (all
  // odd) by the second.
  const int first = SwitchPort(c, "ib-leaf0", kHosts + 1);
  const int second = SwitchPort(c, "ib-leaf0", kHosts + 2);
  EXPECT_EQ(c.ports()[c.ports()[first].peer].device, "ib-spine");
  EXPECT_EQ(c.ports()[c.ports()[second].peer].device, "ib-spine");
  EXPECT_EQ(Waiting(c, w, d), std::set<int>{second});
  EXPECT_GT(w.Utilisation(second, d), 0.999);
  EXPECT_EQ(w.Delta(first, Ctr::kPortXmitData), 0);
  // 1.6 line rates offered: the two cables together would carry it.
  EXPECT_NEAR(w.Wait(second, d), 1 - 1 / kUnbalancedTotalLoad, 0.01);
}

// Under the demo tour's all-reduce (80 % of line rate, half the time) the
// two rails' own rings stop: the cross-rail flows are that job's traffic,
// so no rail-1 HCA takes more than its link carries and the uplink stays
// the one waiting port (before: the four leaf ports facing them waited
// too, four roots more). The other rails' rings still run.
TEST(SimCongestion, UnbalancedLinksUnderTheToursTrafficWaitOnlyAtTheUplink) {
  SimConfig config = Config({At(Scenario::kUnbalancedLinks, 0, "mlx5_0")}, 2);
  config.timeline.traffic.load = 0.8;
  config.timeline.traffic.duty_cycle = 0.5;
  Cluster c(config);
  Window w(c);
  const Duration d = seconds(10);
  Advance(c, d);
  const int second = SwitchPort(c, "ib-leaf0", kHosts + 2);
  EXPECT_EQ(Waiting(c, w, d), std::set<int>{second});
  EXPECT_GT(w.Utilisation(second, d), 0.999);
  for (int h = 0; h < kHosts; ++h) {
    EXPECT_EQ(w.Wait(c.ports()[HostPort(c, h, "mlx5_1")].peer, d), 0) << h;
    EXPECT_GT(w.Utilisation(HostPort(c, h, "mlx5_4"), d), 0.3) << h;
  }
}

TEST(SimCongestion, TwoRootsAtOnceEachWithItsOwnVictims) {
  Cluster c(Config({At(Scenario::kSlowReceiver, 0, "mlx5_0"),
                    At(Scenario::kSlowReceiver, 2, "mlx5_4")}));
  Window w(c);
  const Duration d = seconds(10);
  Advance(c, d);
  // Sources: the next rail (mlx5_1 into ib-leaf0, mlx5_5 into ib-leaf2).
  const int root_a = SwitchPort(c, "ib-leaf0", 1);
  const int root_b = SwitchPort(c, "ib-leaf2", 3);
  EXPECT_EQ(Waiting(c, w, d),
            (std::set<int>{root_a, SwitchPort(c, "ib-spine", 1),
                           SwitchPort(c, "ib-leaf1", kHosts + 1), root_b,
                           SwitchPort(c, "ib-spine", 3),
                           SwitchPort(c, "ib-leaf3", kHosts + 1)}));
  EXPECT_NEAR(w.Utilisation(root_a, d), kSlowReceiverDrain, 0.005);
  EXPECT_NEAR(w.Utilisation(root_b, d), kSlowReceiverDrain, 0.005);
}

TEST(SimCongestion, ARootThatMovesTakesItsTreeAlong) {
  Cluster c(Config({At(Scenario::kSlowReceiver, 0, "mlx5_0", {}, seconds(5)),
                    At(Scenario::kSlowReceiver, 1, "mlx5_0", seconds(5))}));
  // Windows clear of the switch-over tick (a tick (t - 100 ms, t] plays
  // the events active at t).
  const Duration d = seconds(4);
  Window w(c);
  Advance(c, d);
  const int first = SwitchPort(c, "ib-leaf0", 1);
  const int second = SwitchPort(c, "ib-leaf0", 2);
  EXPECT_GT(w.Wait(first, d), 0.8);
  EXPECT_EQ(w.Delta(second, Ctr::kPortXmitWait), 0);
  Advance(c, seconds(2));
  w.Mark();
  Advance(c, d);
  EXPECT_EQ(w.Delta(first, Ctr::kPortXmitWait), 0);
  EXPECT_GT(w.Wait(second, d), 0.8);
  EXPECT_GT(w.Wait(SwitchPort(c, "ib-spine", 1), d), 0.5);  // same victims
}

TEST(SimCongestion, ScenarioFlowsAreLosslessAndEndedEventsLeaveNoWait) {
  Cluster c(Config(
      {At(Scenario::kSlowReceiver, 0, "mlx5_0", {}, seconds(3)),
       At(Scenario::kOversubscribedUplink, 1, "mlx5_6", {}, seconds(3))}));
  Advance(c, seconds(4));
  for (const Port& p : c.ports()) {
    if (p.peer < 0) continue;
    EXPECT_EQ(p.counters.Get(Ctr::kPortXmitData),
              c.ports()[p.peer].counters.Get(Ctr::kPortRcvData));
  }
  Window w(c);
  Advance(c, seconds(3));
  EXPECT_TRUE(Waiting(c, w, seconds(3), false).empty());
}

// A Quantum-2 counts a tick per 8 bytes it could have sent; a switch of
// unknown ASIC (`fabric: switch_asic: generic`) the 256 ns tick HCAs count.
TEST(SimCongestion, SwitchWaitTicksFollowTheAsic) {
  for (const bool quantum : {true, false}) {
    SimConfig config = Config({At(Scenario::kSlowReceiver, 0, "mlx5_0")});
    config.timeline.quantum_switches = quantum;
    Cluster c(config);
    Window w(c);
    Advance(c, seconds(2));
    const int root = SwitchPort(c, "ib-leaf0", 1);
    const double per_second = quantum ? 50e9 / kQuantumXmitWaitBytesPerTick
                                      : 1 / kXmitWaitTickSeconds;
    EXPECT_DOUBLE_EQ(c.ports()[root].XmitWaitTicksPerSecond(), per_second);
    EXPECT_NEAR(w.Delta(root, Ctr::kPortXmitWait) / per_second / 2, 0.95, 0.01)
        << quantum;
    // HCAs count time either way.
    EXPECT_DOUBLE_EQ(c.FindPort(1, "mlx5_1")->XmitWaitTicksPerSecond(),
                     1 / kXmitWaitTickSeconds);
  }
}

TEST(SimCongestion, PfcStormStartsAtOneNicAndIsRelayedWeakerAndLater) {
  SimConfig config = Config({At(Scenario::kPfcStorm, 0, "mlx5_bond_0")});
  config.timeline.traffic.load = 0.8;
  config.timeline.traffic.duty_cycle = 1;
  Cluster c(config);
  auto tx_pause = [&](int h) {
    return c.FindPort(h, "mlx5_bond_0")->ethtool.at("tx_prio3_pause");
  };
  auto rx_pause = [&](int h) {
    return c.FindPort(h, "mlx5_bond_0")->ethtool.at("rx_prio3_pause");
  };
  c.Step();  // the first tick: only the origin pauses
  EXPECT_GT(tx_pause(0), 0u);
  EXPECT_EQ(tx_pause(3), 0u);
  EXPECT_GT(rx_pause(3), 0u);  // ring 3 -> 0: paused by the switch
  Advance(c, seconds(3));
  // host3, paused, relays; host2 (sending into host3) is paused by that
  // and relays less; the origin sends the most and first.
  EXPECT_GT(tx_pause(3), 0u);
  EXPECT_GT(rx_pause(2), 0u);
  EXPECT_GT(tx_pause(2), 0u);
  EXPECT_LT(tx_pause(3), tx_pause(0));
  EXPECT_LT(tx_pause(2), tx_pause(3));
  EXPECT_EQ(rx_pause(0), 0u);  // the origin's own sending is not paused
}

}  // namespace
}  // namespace fabric::sim
