// The cluster model's InfiniBand routes as its forwarding tables have them:
// min-hop routing (routing.h) over the model's IB switches as the links are
// now (a down link carries no route). The MAD view answers SwitchInfo and
// LinearForwardingTable Gets from it, and the congestion scenarios send
// their traffic along it, so the congestion trees the model builds follow
// exactly the routes fabricmon reads back from the LFTs.
//
// Thread-safety: built from a const snapshot of the ports, then const; safe
// to share between readers (MinHopRouting's cache locks).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "simulator/routing.h"

namespace fabric::sim {

struct Port;

class ClusterRoutes {
 public:
  explicit ClusterRoutes(const std::vector<Port>& ports);

  const MinHopRouting& routing() const { return *routing_; }
  // The routing graph's index of switch `device`; -1 when not an IB switch.
  int SwitchIndex(const std::string& device) const;
  // The transmitting port of every link from HCA port `src` to HCA port
  // `dst` (indices into the ports): src first, then each switch's egress
  // port as its LFT has it. Empty when not routed (a down link, a LID the
  // tables do not know, a loop).
  std::vector<int> Route(int src, int dst) const;

 private:
  const std::vector<Port>& ports_;
  std::map<std::string, int> switches_;
  std::map<std::pair<int, int>, int> port_index_;  // (switch, num) -> port
  std::unique_ptr<MinHopRouting> routing_;
};

}  // namespace fabric::sim
