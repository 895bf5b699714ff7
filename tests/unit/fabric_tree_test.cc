// The fabric collector's congestion trees end to end over MADs
// (collectors/fabric_tree.h): the simulator's routed fat tree answers
// discovery, SwitchInfo and LFT Gets; its switch PMAs answer PortCounters
// and PortCountersExtended from a randomised congestion tree
// (congestion/scenario.h). Two sweeps: the roots the collector names are
// the scenario's; a sharded pair of collectors (1/2, 2/2), each reading the
// counters past its shard edge, together name the same roots and count the
// same victims as one unsharded sweep.
#include "collectors/fabric_tree.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "congestion/scenario.h"
#include "simulator/fat_tree.h"
#include "sources/mad/discovery.h"
#include "sources/mad/sweep.h"

namespace fabric {
namespace {

using congestion::PortRef;

MadOptions Fast() {
  MadOptions o;
  o.timeout = std::chrono::milliseconds(50);
  o.retries = 2;
  o.max_outstanding = 256;
  return o;
}

struct Fabric {
  std::shared_ptr<sim::FatTree> tree;
  congestion::CountingFabric counting;
  MadTransport* transport;
  Fabric(int k, int hosts_per_leaf, int parallel = 1)
      : tree(std::make_shared<sim::FatTree>(k, hosts_per_leaf, parallel)),
        counting(tree),
        transport(&counting.transport()) {}
  void Advance(const congestion::Scenario& sc) { counting.Advance(sc); }
};

std::string Name(std::uint64_t, const std::string& fallback) {
  return fallback;
}

std::set<PortRef> Roots(const congestion::Classification& c) {
  std::set<PortRef> out;
  for (const auto& r : c.roots) {
    if (r.cause != congestion::Cause::kNone) out.insert(r.ref);
  }
  return out;
}

std::set<PortRef> TruthRoots(const congestion::Scenario& sc) {
  std::set<PortRef> out;
  for (const auto& [r, cause] : sc.truth.roots) out.insert(r);
  return out;
}

// Two sweeps one second apart: a baseline, then the tree.
congestion::Classification TwoSweeps(Fabric& f, const mad::Topology& topo,
                                     const congestion::Scenario& sc,
                                     const mad::Shard& shard,
                                     FabricTrees& trees, MetricSink& sink) {
  const auto first = mad::Sweep(*f.transport, topo, shard, Fast());
  trees.Update(*f.transport, Fast(), topo, shard, first, 10, 1e9, Name, sink);
  f.Advance(sc);
  const auto second = mad::Sweep(*f.transport, topo, shard, Fast());
  trees.Update(*f.transport, Fast(), topo, shard, second, 11, 1e9 + 1, Name,
               sink);
  return trees.last();
}

TEST(FabricTreeTest, TheSweepNamesTheScenariosRootsOverMads) {
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    Fabric f(4, 2);
    const mad::Topology topo = mad::Discover(*f.transport, Fast());
    ASSERT_EQ(topo.unreachable, 0);
    std::mt19937 rng(seed);
    auto sc = congestion::MakeScenario(
        *f.tree, {.roots = 1 + static_cast<int>(seed % 2)}, rng);
    FabricTrees trees;
    MetricSink sink;
    auto c = TwoSweeps(f, topo, sc, mad::Shard{}, trees, sink);
    EXPECT_EQ(Roots(c), TruthRoots(sc)) << "seed " << seed;
    EXPECT_TRUE(c.partial.empty()) << c.partial.front();
    // The exported series; the wait seconds of every switch port swept,
    // once per sweep (the sink holds both sweeps').
    std::set<std::string> names;
    std::size_t swept = 0;
    for (const auto& sw : mad::Sweep(*f.transport, topo, {}, Fast()).switches) {
      swept += sw.ports.size();
    }
    for (const auto& fam : sink.Take()) {
      names.insert(fam.name);
      if (fam.name != "fabric_switch_port_transmit_wait_seconds_total") {
        continue;
      }
      std::set<std::string> ports;
      for (const auto& m : fam.metric) {
        std::string key;
        for (const auto& l : m.label) key += l.value + "/";
        ports.insert(key);
      }
      EXPECT_EQ(fam.metric.size(), 2 * swept);
      EXPECT_EQ(ports.size(), swept);
    }
    for (const char* m :
         {"fabric_congestion_root", "fabric_congestion_root_victims",
          "fabric_congestion_root_since_timestamp_seconds",
          "fabric_congestion_tree_lost_bytes_per_second",
          "fabric_congestion_port_lost_bytes_per_second",
          "fabric_congestion_undecided_ports",
          "fabric_switch_port_transmit_wait_seconds_total"}) {
      EXPECT_TRUE(names.count(m)) << m;
    }
  }
}

TEST(FabricTreeTest, ShardsJoinedAtTheEdgeNameTheSameRootsAndVictims) {
  int compared = 0;
  for (std::uint32_t seed : {11u, 12u, 13u, 14u}) {
    Fabric f(4, 2);
    const mad::Topology topo = mad::Discover(*f.transport, Fast());
    std::mt19937 rng(seed);
    auto sc = congestion::MakeScenario(*f.tree, {.roots = 2}, rng);
    // Unsharded, on its own copy of the counters.
    Fabric whole(4, 2);
    FabricTrees one;
    MetricSink sink;
    auto all = TwoSweeps(whole, topo, sc, mad::Shard{}, one, sink);
    // Two shards on the same fabric: each sweeps its switches, then the
    // counters advance by one interval of the scenario. A foreign port
    // needs a previous read for a delta, so each hop of a chain past the
    // shard edge is decided one sweep later: a few sweeps of the same
    // tree (the fat tree's longest chain is 5 hops) complete it.
    FabricTrees a, b;
    const mad::Shard sa{1, 2}, sb{2, 2};
    constexpr int kSweeps = 7;
    for (int i = 0; i < kSweeps - 1; ++i) {
      if (i > 0) f.Advance(sc);
      for (FabricTrees* t : {&a, &b}) {
        const mad::Shard& s = t == &a ? sa : sb;
        auto sw = mad::Sweep(*f.transport, topo, s, Fast());
        t->Update(*f.transport, Fast(), topo, s, sw, 10 + i, 1e9 + i, Name,
                  sink);
      }
    }
    f.Advance(sc);
    std::set<PortRef> roots;
    std::map<PortRef, int> victims;
    for (FabricTrees* t : {&a, &b}) {
      const mad::Shard& s = t == &a ? sa : sb;
      auto sw = mad::Sweep(*f.transport, topo, s, Fast());
      t->Update(*f.transport, Fast(), topo, s, sw, 10 + kSweeps - 1,
                1e9 + kSweeps - 1, Name, sink);
      EXPECT_TRUE(t->last().partial.empty()) << t->last().partial.front();
      for (const auto& r : t->last().roots) {
        if (r.cause != congestion::Cause::kNone) {
          EXPECT_TRUE(s.Contains(r.ref.guid));
          roots.insert(r.ref);
        }
        victims[r.ref] += r.victims;
      }
    }
    EXPECT_EQ(roots, Roots(all)) << "seed " << seed;
    for (const auto& r : all.roots) {
      EXPECT_EQ(victims[r.ref], r.victims) << congestion::PortRefString(r.ref);
    }
    compared += static_cast<int>(all.roots.size());
  }
  EXPECT_GT(compared, 4);
}

TEST(FabricTreeTest, ASwitchThatStopsAnsweringNeverYieldsAWrongRoot) {
  Fabric f(4, 2);
  const mad::Topology topo = mad::Discover(*f.transport, Fast());
  std::mt19937 rng(5);
  auto sc = congestion::MakeScenario(*f.tree, {.roots = 1}, rng);
  FabricTrees trees;
  MetricSink sink;
  const auto first = mad::Sweep(*f.transport, topo, mad::Shard{}, Fast());
  trees.Update(*f.transport, Fast(), topo, mad::Shard{}, first, 10, 1e9, Name,
               sink);
  f.Advance(sc);
  // The root's switch goes silent before the second sweep.
  const PortRef root = sc.truth.roots.begin()->first;
  f.counting.Silence(root.guid);
  const auto second = mad::Sweep(*f.transport, topo, mad::Shard{}, Fast());
  trees.Update(*f.transport, Fast(), topo, mad::Shard{}, second, 11, 1e9 + 1,
               Name, sink);
  for (const auto& r : trees.last().roots) {
    EXPECT_EQ(r.ref, root) << congestion::PortRefString(r.ref);
  }
}

// Two parallel links between every leaf and aggregation switch, min-hop
// routing spreading destinations over them by LID: a flooded link whose
// parallel sibling has room (congestion/scenario.h's truth) is named the
// root with cause unbalanced, over MADs, as the accuracy bench counts it.
TEST(FabricTreeTest, AFloodedParallelLinkWithRoomBesideItIsUnbalanced) {
  int unbalanced = 0;
  for (std::uint32_t seed = 1; seed <= 40 && unbalanced < 3; ++seed) {
    Fabric f(4, 2, /*parallel=*/2);
    const mad::Topology topo = mad::Discover(*f.transport, Fast());
    ASSERT_EQ(topo.unreachable, 0);
    std::mt19937 rng(seed);
    auto sc = congestion::MakeScenario(*f.tree, {.roots = 1}, rng);
    if (sc.truth.roots.begin()->second != congestion::Cause::kUnbalanced) {
      continue;
    }
    ++unbalanced;
    FabricTrees trees;
    MetricSink sink;
    auto c = TwoSweeps(f, topo, sc, mad::Shard{}, trees, sink);
    ASSERT_FALSE(c.roots.empty()) << "seed " << seed;
    EXPECT_EQ(c.roots.front().ref, sc.truth.roots.begin()->first);
    EXPECT_EQ(c.roots.front().cause, congestion::Cause::kUnbalanced)
        << "seed " << seed;
  }
  EXPECT_EQ(unbalanced, 3);
}

// The compact input (only the switches Classify looks at) must classify
// exactly as every port of the sweep does: roots, causes, victims, waits,
// since and the partial answer, over noisy sweeps, a root that moves, a
// switch that stops answering, sharded and not.
void ExpectSame(const congestion::Classification& a,
                const congestion::Classification& b, const std::string& at) {
  ASSERT_EQ(a.ports.size(), b.ports.size()) << at;
  for (std::size_t i = 0; i < a.ports.size(); ++i) {
    const auto &x = a.ports[i], &y = b.ports[i];
    EXPECT_EQ(x.ref, y.ref) << at;
    EXPECT_EQ(x.role, y.role) << at << congestion::PortRefString(x.ref);
    EXPECT_EQ(x.root, y.root) << at << congestion::PortRefString(x.ref);
    EXPECT_EQ(x.cause, y.cause) << at;
    EXPECT_EQ(x.wait_fraction, y.wait_fraction) << at;
    EXPECT_EQ(x.why, y.why) << at;
  }
  ASSERT_EQ(a.roots.size(), b.roots.size()) << at;
  for (std::size_t i = 0; i < a.roots.size(); ++i) {
    EXPECT_EQ(a.roots[i].ref, b.roots[i].ref) << at;
    EXPECT_EQ(a.roots[i].cause, b.roots[i].cause) << at;
    EXPECT_EQ(a.roots[i].victims, b.roots[i].victims) << at;
    EXPECT_EQ(a.roots[i].since_seconds, b.roots[i].since_seconds) << at;
    EXPECT_EQ(a.roots[i].tree_lost_bytes_per_second,
              b.roots[i].tree_lost_bytes_per_second)
        << at;
  }
  EXPECT_EQ(a.partial, b.partial) << at;
}

TEST(FabricTreeTest, CompactInputClassifiesAsEveryPortDoes) {
  int roots_seen = 0, moved = 0;
  for (std::uint32_t seed : {21u, 22u, 23u, 24u}) {
    const sim::FatTree tree(6, 3);
    std::mt19937 rng(seed);
    const int roots = 1 + static_cast<int>(seed % 2);
    auto first = congestion::MakeScenario(
        tree, {.roots = roots, .noise_ports = 0.3}, rng);
    std::set<PortRef> avoid = TruthRoots(first);
    auto second = congestion::MakeScenario(
        tree, {.roots = roots, .noise_ports = 0.3}, rng, avoid);
    for (const mad::Shard shard : {mad::Shard{}, mad::Shard{1, 2}}) {
      Fabric f(6, 3);  // fresh counters, nothing silenced
      const mad::Topology topo = mad::Discover(*f.transport, Fast());
      FabricTrees compact, full;
      full.set_compact_input(false);
      MetricSink sink;
      // Baseline, the tree, the tree again, the root moved, all calm (the
      // moved root's counters say it is gone), the moved tree back (a new
      // since), then the moved root's switch silent.
      const congestion::Scenario idle;
      const congestion::Scenario* steps[] = {nullptr, &first,  &first, &second,
                                             &idle,   &second, &second};
      for (int i = 0; i < 7; ++i) {
        if (steps[i]) f.Advance(*steps[i]);
        if (i == 6) f.counting.Silence(TruthRoots(second).begin()->guid);
        const auto sweep = mad::Sweep(*f.transport, topo, shard, Fast());
        for (FabricTrees* t : {&compact, &full}) {
          t->Update(*f.transport, Fast(), topo, shard, sweep, 10 + i, 1e9 + i,
                    Name, sink);
        }
        ExpectSame(compact.last(), full.last(),
                   "seed " + std::to_string(seed) + " sweep " +
                       std::to_string(i) + " shards " +
                       std::to_string(shard.count) + ": ");
        roots_seen += static_cast<int>(Roots(full.last()).size());
        if (i == 3 && Roots(full.last()) != avoid) ++moved;
        if (i == 4) EXPECT_TRUE(Roots(full.last()).empty());
      }
      sink.Take();
    }
  }
  EXPECT_GT(roots_seen, 16);
  EXPECT_GT(moved, 4);
}

// A leaf holds a root at a host's port (held over from an earlier tree:
// that host was its slow receiver) and a new root at its uplink, whose
// traffic that host sends: the host is the uplink root's victim, not
// nobody's (the demo tour's slow-receiver then unbalanced-links paged the
// host's hotspot on its own). The other host on the leaf: the root losing
// most.
TEST(FabricTreeTest, AHostIsTheVictimOfARootOtherThanTheOneAtItsOwnPort) {
  constexpr std::uint64_t kLeaf = 0x10, kHostA = 0xa0, kHostB = 0xb0;
  mad::Topology topo;
  auto add = [&](std::uint64_t guid, int type) -> mad::FabricNode& {
    topo.by_guid[guid] = topo.nodes.size();
    topo.nodes.push_back(mad::FabricNode{.guid = guid, .type = type});
    return topo.nodes.back();
  };
  add(kLeaf, 2);
  add(kHostA, 1);
  add(kHostB, 1);
  mad::FabricNode& leaf = topo.nodes[0];
  leaf.ports[1] = {.num = 1, .remote_guid = kHostA, .remote_port = 1};
  leaf.ports[2] = {.num = 2, .remote_guid = kHostB, .remote_port = 1};
  leaf.ports[6] = {.num = 6, .remote_guid = 0x20, .remote_port = 1};
  congestion::Classification c;
  c.ports = {{.ref = {kLeaf, 1}, .role = congestion::Role::kRoot},
             {.ref = {kLeaf, 6}, .role = congestion::Role::kRoot}};
  c.roots = {{.ref = {kLeaf, 1}, .tree_lost_bytes_per_second = 9e9},
             {.ref = {kLeaf, 6}, .tree_lost_bytes_per_second = 5e9}};
  MetricSink sink;
  ExportHostVictims(c, topo, sink);
  std::map<std::string, std::string> root_of;  // host GUID -> root port
  for (const auto& fam : sink.Take()) {
    for (const auto& m : fam.metric) {
      std::map<std::string, std::string> l;
      for (const auto& p : m.label) l[p.name] = p.value;
      root_of[l["node_guid"]] = l["root_port"];
    }
  }
  EXPECT_EQ(root_of, (std::map<std::string, std::string>{
                         {mad::GuidString(kHostA), "6"},
                         {mad::GuidString(kHostB), "1"}}));
}

}  // namespace
}  // namespace fabric
