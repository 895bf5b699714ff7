// What a broker session knows about where directed routes go, learnt from
// the fabric's own answers: each DR NodeInfo answer for a route P+[e] whose
// P already resolves to a node X teaches the cable "X, exit port e -> node
// G" (G: the answer's NodeGUID). With it a directed route resolves to the
// node it really ends at, however it gets there, so the per-destination
// in-flight limit counts nodes, not spellings of routes (distinct routes to
// one switch share its 16), and a route that passes the same node twice
// (bouncing between two switches: no discovery or sweep ever sends one, as
// they follow shortest routes) is refused once its cables are known. A
// route through a cable not learnt yet is counted against that first
// unknown cable ("via X port e"), so a flood of unknown routes shares the
// limit of the one cable it must cross.
//
// Bounded: at most kMaxEdges cables are kept (a fabric of 50,000 nodes has
// fewer switch cables than that times the few a route crosses; past it,
// routes are counted by their first unknown cable, which is still a bound).
//
// Thread-safety: none; the broker session calls it under its mutex.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "sources/mad/codec.h"

namespace fabric::mad::broker {

class RouteBook {
 public:
  static constexpr std::size_t kMaxEdges = 1 << 18;

  struct Resolved {
    bool loop = false;  // the route passes a node twice: refuse it
    std::string key;    // per-destination key: "N<guid>" or "V<node>:<port>"
  };
  Resolved Resolve(const DrPath& path) const;
  // A DR NodeInfo answer for `path` (the response MAD).
  void Learn(const DrPath& path, const Mad& answer);
  std::size_t edges() const { return edges_.size(); }

 private:
  // The local node is 0 until a NodeInfo of the empty route names it.
  std::uint64_t Node(std::uint64_t guid) const {
    return guid == local_ ? 0 : guid;
  }
  std::uint64_t local_ = 0;
  std::map<std::pair<std::uint64_t, std::uint8_t>, std::uint64_t> edges_;
};

}  // namespace fabric::mad::broker
