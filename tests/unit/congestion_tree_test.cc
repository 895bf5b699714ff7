// Congestion trees (congestion/tree.h): roots, victims and causes on small
// hand-built fabrics with exact tables, and bad input (missing tables,
// counters that went backwards, a switch that stopped answering) giving a
// partial answer and never a wrong root.
#include <gtest/gtest.h>

#include "congestion/tree.h"
#include "congestion/xmit_wait.h"

namespace fabric::congestion {
namespace {

// Two leaves (L0, L1), one spine (S), hosts H0, H1 on L0 and H2, H3 on L1.
// LIDs: H0..H3 = 1..4, L0 = 10, L1 = 11, S = 12.
// L0: 1 -> H0, 2 -> H1, 3 -> S (and 4 -> S, a parallel link, when built).
// L1: 1 -> H2, 2 -> H3, 3 -> S.  S: 1 -> L0 port 3, 2 -> L1 port 3,
// 3 -> L0 port 4 (parallel).
constexpr std::uint64_t kL0 = 0x100, kL1 = 0x101, kS = 0x200;
constexpr std::uint64_t kH[4] = {0x10, 0x11, 0x12, 0x13};
constexpr double kRate = 50e9;

struct Fabric {
  SweepInput in;
  bool parallel = false;

  explicit Fabric(bool with_parallel = false) : parallel(with_parallel) {
    in.interval_seconds = 1;
    Add(kL0, 1, {kH[0], 1}, true);
    Add(kL0, 2, {kH[1], 1}, true);
    Add(kL0, 3, {kS, 1}, false);
    if (parallel) Add(kL0, 4, {kS, 3}, false);
    Add(kL1, 1, {kH[2], 1}, true);
    Add(kL1, 2, {kH[3], 1}, true);
    Add(kL1, 3, {kS, 2}, false);
    Add(kS, 1, {kL0, 3}, false);
    Add(kS, 2, {kL1, 3}, false);
    if (parallel) Add(kS, 3, {kL0, 4}, false);
    auto table = [](std::vector<std::uint8_t> t) { return t; };
    // index = LID 0..12
    in.lfts[kL0] = table({255, 1, 2, 3, 3, 255, 255, 255, 255, 255, 0, 3, 3});
    if (parallel) in.lfts[kL0][4] = 4;  // H3 over the parallel link
    in.lfts[kL1] = table({255, 3, 3, 1, 2, 255, 255, 255, 255, 255, 3, 0, 3});
    in.lfts[kS] = table({255, 1, 1, 2, 2, 255, 255, 255, 255, 255, 1, 2, 0});
  }
  void Add(std::uint64_t g, int p, PortRef remote, bool hca) {
    PortSample s;
    s.ref = {g, p};
    s.device_id = 54002;
    s.lanes = 4;
    s.rate_bytes_per_second = kRate;
    s.xmit_wait_ticks = 0;
    s.xmit_bytes = 0.1 * kRate;
    s.rcv_bytes = 0.1 * kRate;
    s.remote = remote;
    s.remote_is_hca = hca;
    in.ports.push_back(s);
  }
  PortSample& At(std::uint64_t g, int p) {
    for (PortSample& s : in.ports) {
      if (s.ref == PortRef{g, p}) return s;
    }
    throw std::runtime_error("no port");
  }
  // Wait fraction w over the 1 s interval (Quantum-2: 8 bytes per tick).
  void Wait(std::uint64_t g, int p, double w, double util = 0.1) {
    At(g, p).xmit_wait_ticks = w * kRate / 8;
    At(g, p).xmit_bytes = util * kRate;
  }
};

const PortVerdict* Find(const Classification& c, PortRef ref) {
  for (const PortVerdict& v : c.ports) {
    if (v.ref == ref) return &v;
  }
  return nullptr;
}

// H0 and H1 send to H2, which drains slowly: L1:1 waits (root), S:2 and
// L0:3 wait behind it (victims).
Fabric SlowReceiver() {
  Fabric f;
  f.Wait(kL1, 1, 0.6, 0.3);
  f.Wait(kS, 2, 0.5);
  f.Wait(kL0, 3, 0.4);
  return f;
}

TEST(XmitWaitTest, TicksPerAsicAndAssumedTickForUnknownDevices) {
  // Quantum-2: 8 bytes per tick; 4x NDR = 50 GB/s: 1e9 ticks = 0.16 s.
  WaitTick q2 = WaitTickFor(54002, 256e-9);
  EXPECT_TRUE(q2.known);
  EXPECT_DOUBLE_EQ(WaitSeconds(1e9, q2, 4, 50e9), 0.16);
  // Switch-IB 2: 32 bytes per lane per tick: x4 lanes at 12.5 GB/s (EDR).
  WaitTick sib2 = WaitTickFor(53000, 256e-9);
  EXPECT_DOUBLE_EQ(WaitSeconds(1e6, sib2, 4, 12.5e9), 1e6 * 128 / 12.5e9);
  // A ConnectX-7 (4129): the assumed fixed tick.
  WaitTick cx7 = WaitTickFor(4129, 256e-9);
  EXPECT_FALSE(cx7.known);
  EXPECT_DOUBLE_EQ(WaitSeconds(1e6, cx7, 4, 50e9), 0.256);
  // A byte tick without the port's rate is unknown, not a guess.
  EXPECT_LT(WaitSeconds(1e6, q2, 4, 0), 0);
  EXPECT_LT(WaitSeconds(1e6, sib2, 0, 12.5e9), 0);
}

TEST(CongestionTreeTest, SlowReceiverIsTheRootAndItsVictimsNameIt) {
  Fabric f = SlowReceiver();
  Classification c = Classify(f.in, Thresholds{});
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].ref, (PortRef{kL1, 1}));
  EXPECT_EQ(c.roots[0].cause, Cause::kSlowReceiver);
  EXPECT_EQ(c.roots[0].victims, 2);
  EXPECT_NEAR(c.roots[0].tree_lost_bytes_per_second, (0.6 + 0.5 + 0.4) * kRate,
              1e3);
  for (PortRef v : {PortRef{kS, 2}, PortRef{kL0, 3}}) {
    const PortVerdict* p = Find(c, v);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->role, Role::kVictim);
    EXPECT_EQ(p->root, (PortRef{kL1, 1}));
  }
  EXPECT_TRUE(c.partial.empty());
}

TEST(CongestionTreeTest, AFullLinkIntoTheHostIsOversubscribed) {
  Fabric f = SlowReceiver();
  f.Wait(kL1, 1, 0.6, 0.97);
  Classification c = Classify(f.in, Thresholds{});
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].cause, Cause::kOversubscribed);
}

TEST(CongestionTreeTest, ASwitchUplinkWhoseNextHopsDoNotWaitIsTheRoot) {
  // L0:3 waits at line rate, S's ports to L1 do not: the uplink is full.
  Fabric f;
  f.Wait(kL0, 3, 0.5, 0.99);
  Classification c = Classify(f.in, Thresholds{});
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].ref, (PortRef{kL0, 3}));
  EXPECT_EQ(c.roots[0].cause, Cause::kOversubscribed);
}

TEST(CongestionTreeTest, ParallelLinksWithSkewedLoadAreUnbalanced) {
  Fabric f(true);
  f.Wait(kL0, 3, 0.4, 0.95);  // carries almost all
  f.At(kL0, 4).xmit_bytes = 0.05 * kRate;
  Classification c = Classify(f.in, Thresholds{});
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].ref, (PortRef{kL0, 3}));
  EXPECT_EQ(c.roots[0].cause, Cause::kUnbalanced);
  // Even load on both: the same wait is plain oversubscription.
  f.At(kL0, 4).xmit_bytes = 0.95 * kRate;
  c = Classify(f.in, Thresholds{});
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].cause, Cause::kOversubscribed);
}

TEST(CongestionTreeTest, TwoRootsEachKeepTheirOwnVictims) {
  Fabric f = SlowReceiver();
  // And H2/H3 flood H0 from L1: L0:1 root, S:1 and L1:3 victims.
  f.Wait(kL0, 1, 0.7, 0.99);
  f.Wait(kS, 1, 0.6);
  f.Wait(kL1, 3, 0.5);
  Classification c = Classify(f.in, Thresholds{});
  ASSERT_EQ(c.roots.size(), 2u);
  EXPECT_EQ(Find(c, {kS, 1})->root, (PortRef{kL0, 1}));
  EXPECT_EQ(Find(c, {kL1, 3})->root, (PortRef{kL0, 1}));
  EXPECT_EQ(Find(c, {kS, 2})->root, (PortRef{kL1, 1}));
  EXPECT_EQ(Find(c, {kL0, 3})->root, (PortRef{kL1, 1}));
}

TEST(CongestionTreeTest, ANoiseWaitDownstreamDoesNotMakeTheRootAVictim) {
  Fabric f;
  f.Wait(kL0, 3, 0.5, 0.99);
  f.Wait(kS, 2, 0.03);  // a sliver, below the report threshold
  Classification c = Classify(f.in, Thresholds{});
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].ref, (PortRef{kL0, 3}));
}

TEST(CongestionTreeBadInputTest, MissingTableOfTheSpineStillFindsTheRoot) {
  Fabric f = SlowReceiver();
  f.in.lfts.erase(kS);
  Classification c = Classify(f.in, Thresholds{});
  // L0:3's next hops are guessed (every port of S but 1): S:2 waits, so a
  // victim; the root is still L1:1; the answer says what was missing.
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].ref, (PortRef{kL1, 1}));
  EXPECT_EQ(Find(c, {kL0, 3})->role, Role::kVictim);
  ASSERT_FALSE(c.partial.empty());
  EXPECT_NE(c.partial[0].find("no forwarding table"), std::string::npos);
}

TEST(CongestionTreeBadInputTest, NoTablesAtAllNeverNamesAWrongRoot) {
  Fabric f = SlowReceiver();
  f.in.lfts.clear();
  Classification c = Classify(f.in, Thresholds{});
  for (const RootSummary& r : c.roots) EXPECT_EQ(r.ref, (PortRef{kL1, 1}));
}

TEST(CongestionTreeBadInputTest, CountersGoneBackwardsOnTheRootGiveUnknown) {
  // The root's PortXmitWait went backwards (delta unknown): its victims
  // cannot be decided; none of them is named a root.
  Fabric f = SlowReceiver();
  f.At(kL1, 1).xmit_wait_ticks.reset();
  Classification c = Classify(f.in, Thresholds{});
  EXPECT_TRUE(c.roots.empty());
  EXPECT_EQ(Find(c, {kS, 2})->role, Role::kUnknown);
  EXPECT_NE(Find(c, {kS, 2})->why.find("no counters"), std::string::npos);
  // L0:3's next hop S:2 waits: still a victim, its root not followed.
  EXPECT_EQ(Find(c, {kL0, 3})->role, Role::kVictim);
  EXPECT_EQ(Find(c, {kL0, 3})->root, PortRef{});
  EXPECT_FALSE(c.partial.empty());
}

TEST(CongestionTreeBadInputTest, ASwitchThatStopsAnsweringGivesAPartialAnswer) {
  // L1 answered nothing this sweep (mid-sweep): its ports are absent.
  Fabric f = SlowReceiver();
  std::erase_if(f.in.ports,
                [](const PortSample& s) { return s.ref.guid == kL1; });
  Classification c = Classify(f.in, Thresholds{});
  EXPECT_TRUE(c.roots.empty());
  EXPECT_EQ(Find(c, {kS, 2})->role, Role::kUnknown);
}

TEST(CongestionTreeBadInputTest, StaleTableWithNothingRoutedOutIsNotARoot) {
  Fabric f;
  f.Wait(kL0, 3, 0.5, 0.99);
  for (auto& e : f.in.lfts[kL0]) {
    if (e == 3) e = 255;
  }
  Classification c = Classify(f.in, Thresholds{});
  EXPECT_TRUE(c.roots.empty());
  EXPECT_EQ(Find(c, {kL0, 3})->role, Role::kUnknown);
}

TEST(CongestionTrackerTest, SinceHoldsWhileTheRootStaysAndMovesWithIt) {
  Tracker tracker;
  Fabric f = SlowReceiver();
  Classification c = tracker.Run(f.in, Thresholds{}, 100);
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].since_seconds, 100);
  c = tracker.Run(f.in, Thresholds{}, 130);
  EXPECT_EQ(c.roots[0].since_seconds, 100);
  // Hysteresis: the root eases to 0.04 (below the 0.05 report threshold):
  // still the root, same since.
  f.Wait(kL1, 1, 0.04, 0.3);
  f.Wait(kS, 2, 0.03);
  f.Wait(kL0, 3, 0.0);
  c = tracker.Run(f.in, Thresholds{}, 160);
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].since_seconds, 100);
  // A fresh tracker does not report a 0.04 port.
  Tracker fresh;
  EXPECT_TRUE(fresh.Run(f.in, Thresholds{}, 160).roots.empty());
  // The root moves to L0:1 (within one sweep): new root, new since.
  Fabric g;
  g.Wait(kL0, 1, 0.6, 0.3);
  g.Wait(kS, 1, 0.5);
  c = tracker.Run(g.in, Thresholds{}, 190);
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].ref, (PortRef{kL0, 1}));
  EXPECT_EQ(c.roots[0].since_seconds, 190);
  // It comes back: a new since, not the old one.
  c = tracker.Run(SlowReceiver().in, Thresholds{}, 220);
  EXPECT_EQ(c.roots[0].since_seconds, 220);
}

TEST(CongestionTrackerTest, OneUnansweredSweepKeepsTheSince) {
  Tracker tracker;
  Fabric f = SlowReceiver();
  tracker.Run(f.in, Thresholds{}, 100);
  Fabric lost = SlowReceiver();
  std::erase_if(lost.in.ports,
                [](const PortSample& s) { return s.ref.guid == kL1; });
  EXPECT_TRUE(tracker.Run(lost.in, Thresholds{}, 130).roots.empty());
  Classification c = tracker.Run(f.in, Thresholds{}, 160);
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].since_seconds, 100);
}

TEST(CongestionPfcTest, TheHostThatSendsPausesIsTheOriginOthersItsVictims) {
  SweepInput in;
  in.interval_seconds = 1;
  auto host = [&](std::uint64_t g, double tx, double rx) {
    HostPause h;
    h.ref = {g, 1};
    h.name = "host" + std::to_string(g);
    h.tx_pause_seconds = tx;
    h.rx_pause_seconds = rx;
    h.tx_pause_frames = tx * 1e5;
    h.rx_pause_frames = rx * 1e5;
    h.rate_bytes_per_second = 25e9;
    in.pauses.push_back(h);
  };
  host(1, 0.4, 0.0);   // its receive side is full: sends pauses
  host(2, 0.0, 0.3);   // paused
  host(3, 0.01, 0.2);  // relays a little, paused more: a victim
  host(4, 0.0, 0.0);   // quiet
  Classification c = Classify(in, Thresholds{});
  ASSERT_EQ(c.roots.size(), 1u);
  EXPECT_EQ(c.roots[0].ref, (PortRef{1, 1}));
  EXPECT_EQ(c.roots[0].cause, Cause::kPfcOrigin);
  EXPECT_EQ(c.roots[0].victims, 2);
  EXPECT_EQ(Find(c, {3, 1})->root, (PortRef{1, 1}));
  EXPECT_EQ(Find(c, {4, 1}), nullptr);
  // Nobody sends more than it receives: paused hosts are unknown, no root.
  in.pauses.erase(in.pauses.begin());
  c = Classify(in, Thresholds{});
  EXPECT_TRUE(c.roots.empty());
  EXPECT_EQ(Find(c, {2, 1})->role, Role::kUnknown);
}

}  // namespace
}  // namespace fabric::congestion
