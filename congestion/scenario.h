// Randomised congestion trees on the simulator's routed fat tree, for the
// classifier's tests and its accuracy benchmark (issue 42): flows routed
// along the fat tree's forwarding tables (FatTree::Walk), a root port that
// cannot drain (an HCA draining below line rate, an incast beyond line
// rate, or an over-full switch uplink), and credit backpressure spread
// upstream along every flow that crosses the root (each egress port before
// the root waits a share of the root's wait), then one hop further along
// flows that share those victims (head-of-line blocking). Other ports carry
// background traffic and small waits (noise below the alert threshold).
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
#include <random>
#include <set>
#include <vector>

#include "congestion/tree.h"
#include "simulator/fat_tree.h"

namespace fabric::congestion {

// Every switch's forwarding table, as the fat tree's routing has it.
Lfts LftsOf(const sim::FatTree& tree);

struct ScenarioSpec {
  int roots = 1;            // 1 or 2
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
Scenario MakeScenario(const sim::FatTree& tree, const Lfts& lfts,
                      const ScenarioSpec& spec, std::mt19937& rng,
                      const std::set<PortRef>& avoid = {});

}  // namespace fabric::congestion
