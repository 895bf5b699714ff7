// The forwarding tables the simulator's fabrics answer LinearForwardingTable
// Gets from (issue 29): min-hop routing computed deterministically from the
// switch graph, as an SM's min-hop engine would program it. A destination
// LID owned by a switch port 0 (the switch itself) or by a CA behind a
// switch port leaves each switch by a port one hop closer to the owning
// switch; among equally close ports the (LID mod count)-th, so the LIDs of
// one leaf spread over the uplinks (on a fat tree this is up/down routing).
// LIDs nobody owns, and switches that cannot reach the owner, get 255.
//
// Thread-safety: built once, then const; OutPort fills a distance cache
// under a mutex, so concurrent readers are safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/thread_annotations.h"

namespace fabric::sim {

class MinHopRouting {
 public:
  // Switch i's port p leads to switch peers[i][p] (-1: no switch there;
  // index 0 unused). owners: LID -> (switch, port; 0 = the switch itself).
  MinHopRouting(std::vector<std::vector<int>> peers,
                std::map<std::uint16_t, std::pair<int, int>> owners);

  // The out port at switch `sw` for `lid`; 255 when not routed.
  std::uint8_t OutPort(int sw, std::uint16_t lid) const;
  // The LFT block (64 LIDs from block * 64) of switch `sw`.
  std::array<std::uint8_t, 64> Block(int sw, std::uint32_t block) const;
  // The highest LID with an owner (SwitchInfo LinearFDBTop).
  std::uint16_t top() const;

 private:
  const std::vector<std::uint16_t>& Distances(int to) const;

  std::vector<std::vector<int>> peers_;
  std::map<std::uint16_t, std::pair<int, int>> owners_;
  mutable Mutex mu_;
  // Node-based: a returned vector stays put while others are added.
  mutable std::unordered_map<int, std::vector<std::uint16_t>> distances_
      GUARDED_BY(mu_);
};

// The SMP data of a switch's answer from `routing`: SwitchInfo (IBA
// 14.2.5.4: 48K linear entries, LinearFDBTop = routing.top()) or the
// LinearForwardingTable block `block`. `data` is the SMP's 64-byte data.
void FillSwitchInfo(const MinHopRouting& routing, std::uint8_t* data);
void FillLftBlock(const MinHopRouting& routing, int sw, std::uint32_t block,
                  std::uint8_t* data);

}  // namespace fabric::sim
