// A k-ary fat tree that answers MADs, for the locator's cost bench and
// tests (issue 29: "1,000 bad pairs on a 2,000-switch fabric"): the
// cluster model (model.h) has a handful of switches, and SwitchFarm
// (mad.h) has no links to walk. k pods of k/2 leaves ("leaf<pod>-<i>") and
// k/2 aggregation switches ("agg<pod>-<i>"), (k/2)^2 cores ("core<i>"):
// 5k^2/4 switches (k = 40: 2,000); every leaf has `hosts_per_leaf`
// one-port HCAs ("host<i>"). Leaf i of a pod: hosts on ports
// 1..hosts_per_leaf, agg j on port hosts_per_leaf+1+j; agg j: leaf i on
// port i+1, core j*k/2+m on port k/2+1+m; core: pod p on port p+1. With
// `parallel` P > 1 every leaf-agg pair has P parallel links (leaf i to agg
// j on ports hosts_per_leaf+1+j*P+c, agg j to leaf i on i*P+c+1, c < P;
// agg up links from k/2*P+1), which min-hop routing spreads destinations
// over by LID, as static routing does.
//
// It answers what discovery and the route tracer send (NodeInfo,
// NodeDescription, PortInfo, SwitchInfo, LinearForwardingTable), by
// directed route from host 0's port and LID-routed; tables from min-hop
// routing (routing.h). Links can be cut (Cut) before MADs are sent, and
// a switch's SwitchInfo and LFT Gets left unanswered (SilenceTables: it
// is discovered, its tables time out).
//
// Thread-safety: configure (Cut, SilenceTables) before sharing; then Answer is
// const and safe from several threads.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "simulator/mad.h"
#include "simulator/routing.h"

namespace fabric::sim {

class FatTree {
 public:
  FatTree(int k, int hosts_per_leaf, int parallel = 1);
  // Not a fat tree: `switches` switches of `ports` ports linked at random
  // (a random spanning tree, then random extra links, never two between
  // one pair), `hosts` one-port HCAs on random free switch ports
  // ("sw<i>", "host<i>"); the same seed, the same fabric. For tests that
  // must not depend on one topology's symmetry.
  static FatTree Random(int switches, int ports, int hosts, std::uint32_t seed);

  int switches() const { return switches_; }
  int hosts() const { return hosts_; }
  // Nodes: hosts 0..hosts()-1, then switches (leaves, aggs, cores).
  struct Node {
    bool is_switch = false;
    std::string name;
    std::uint64_t guid = 0;
    std::uint16_t lid = 0;
    // ports[p] = (node, port) at the other end; node -1: nothing.
    std::vector<std::pair<int, int>> ports;
  };
  const std::vector<Node>& nodes() const { return nodes_; }
  int NodeOfName(const std::string& name) const;  // -1 when none

  // The route from node `from` to `lid` as the tables have it: (node, out
  // port) per hop, the destination not included; empty when not routed.
  // Walked here, not by fabric code: the tests' oracle.
  std::vector<std::pair<int, int>> Walk(int from, std::uint16_t lid) const;

  // Takes the cable at (node, port) out (both ends down), then re-routes.
  void Cut(int node, int port);
  // The switch node's SwitchInfo and LFT Gets go unanswered.
  void SilenceTables(int node) { silent_.insert(node); }

  // As AnswerMad (mad.h); *node = the node that answers.
  MadResult Answer(std::uint16_t dlid, const Mad& request,
                   std::uint32_t* node) const;

 private:
  FatTree() = default;
  // Names, LIDs and GUIDs of hosts_ hosts then switches_ switches.
  void MakeNodes(const std::vector<std::pair<std::string, int>>& switches);
  void Finish();  // the LID index and the routes
  void Route();
  void Connect(int a, int pa, int b, int pb);

  int switches_ = 0, hosts_ = 0;
  std::vector<Node> nodes_;
  std::set<int> silent_;
  std::unique_ptr<MinHopRouting> routing_;
  std::vector<int> lid_node_;  // LID -> node
};

std::unique_ptr<MadTransport> MakeFatTreeMadTransport(
    std::shared_ptr<const FatTree> tree, SimMadOptions options = {});

}  // namespace fabric::sim
