// Randomised congestion trees on the simulator's routed fat tree, for the
// classifier's tests and its accuracy benchmark (issue 42): flows routed
// along the fat tree's forwarding tables (FatTree::Walk), a root port that
// cannot drain (an HCA draining below line rate, an incast beyond line
// rate, or an over-full switch uplink), and credit backpressure spread
// upstream along every flow that crosses the root (each egress port before
// the root waits a share of the root's wait), then one hop further along
// flows that share those victims (head-of-line blocking). A flooded switch
// link that has parallel links to the same neighbour (FatTree's
// `parallel`) is `unbalanced` in the truth when the group's mean load is
// below 0.8 (spread evenly, it would fit), else `oversubscribed`. Other ports
// carry background traffic and small waits (noise below the alert threshold).
// The counters are what a sweep of Quantum-2 ports (DeviceID 54002, 4x
// NDR, 8-byte wait tick) would read over one interval.
//
// Not a packet simulation: it produces the counters' signature of a tree
// and the truth behind it (roots, their causes, every victim's roots).
//
// Thread-safety: pure functions of their arguments (the generator is the
// caller's).
#pragma once

#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "congestion/tree.h"
#include "simulator/fat_tree.h"
#include "sources/mad/mad_transport.h"

namespace fabric::congestion {

// Every switch's forwarding table, as the fat tree's routing has it.
Lfts LftsOf(const sim::FatTree& tree);

struct ScenarioSpec {
  int roots = 1;             // 1 or 2
  double noise_ports = 0.1;  // share of ports with a small wait (< 0.045)
  double interval_seconds = 1.0;
};

struct Truth {
  std::map<PortRef, Cause> roots;
  std::map<PortRef, std::set<PortRef>> victims;  // victim -> its roots
};

struct Scenario {
  SweepInput input;
  Truth truth;
};

// One sweep's counters. `avoid`: ports not to pick as roots (a moving
// root picks a new place).
Scenario MakeScenario(const sim::FatTree& tree, const ScenarioSpec& spec,
                      std::mt19937& rng, const std::set<PortRef>& avoid = {});

// The fat tree over MADs with switch PMAs: discovery, SwitchInfo and LFT
// Gets as FatTree answers them, plus PortCounters / PortCountersExtended
// of every switch port from cumulative counters that Advance() moves by one
// interval of a scenario (scaled to the fat tree's 4x QDR links: the same
// shares of time and of line rate). Silence(guid): that switch's PMA stops
// answering (a switch that stops answering mid-sweep).
class CountingFabric {
 public:
  explicit CountingFabric(std::shared_ptr<const sim::FatTree> tree);
  MadTransport& transport() { return *transport_; }
  const sim::FatTree& tree() const { return *tree_; }
  void Advance(const Scenario& scenario);
  void Silence(std::uint64_t guid) { silent_.insert(guid); }

 private:
  struct Counters {
    std::uint32_t wait = 0;
    std::uint64_t xmit = 0, rcv = 0;
  };
  MadResult Answer(std::uint16_t dlid, const Mad& request, std::uint32_t* node);
  std::shared_ptr<const sim::FatTree> tree_;
  std::map<std::uint16_t, int> by_lid_;
  std::map<PortRef, Counters> counters_;
  std::set<std::uint64_t> silent_;
  std::unique_ptr<MadTransport> transport_;
};

}  // namespace fabric::congestion
