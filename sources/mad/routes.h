// Route tracing over the switches' linear forwarding tables (issue 29): the
// path a packet from a source port to a destination LID takes, hop by hop,
// as the subnet manager programmed it, the way `ibtracert` finds it.
//
// Nodes, links and directed routes come from a discovered Topology
// (discovery.h); the out port at each switch from its LFT, read with SMP
// Gets (SwitchInfo for LinearFDBTop, and the 64-LID LinearForwardingTable
// block that holds the destination) on demand and cached per switch. The
// cache belongs to one topology generation (TopologyGeneration: a
// fingerprint of the nodes, LIDs, port states and links): a topology from
// a re-discovery that differs drops it, and Invalidate() drops it when
// something else says the SM re-routed (OpenSM's heavy sweep), since an SM
// may rewrite LFTs without any link changing.
//
// TraceAll() traces many pairs at once: each round advances every route as
// far as the cached tables go, then reads every missing table in one
// MadTransport run (many in flight), so the rounds are the hops of the
// longest path and no block is read twice. A table that cannot be read
// (timeout, error status, malformed answer) ends the routes that need it
// with that error; it is not cached, so the next call asks again.
//
// Thread-safety: none; one thread per RouteTracer. The Topology given to
// SetTopology must outlive the calls that follow, until the next one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sources/mad/codec.h"
#include "sources/mad/discovery.h"
#include "sources/mad/mad_transport.h"

namespace fabric::mad {

struct RouteHop {
  std::uint64_t node_guid = 0;
  // NodeInfo PortGUID of the port reached (a switch: port 0's).
  std::uint64_t port_guid = 0;
  int type = 0;  // 1 CA, 2 switch, 3 router
  std::string description;
  // The port the route entered by (the source: its own port, 0 for a
  // switch), and the previous node's port it left by (0 for the source).
  int port = 0;
  int out_port = 0;
  std::uint16_t lid = 0;  // a switch: port 0's; 0 when not known
  int lmc = 0;
};

struct Route {
  // hops[0] is the source, back() the destination.
  std::vector<RouteHop> hops;
};

struct TraceResult {
  Route route;        // as far as it got when error is set
  std::string error;  // empty when the destination was reached
  bool ok() const { return error.empty(); }
};

struct RoutePair {
  std::uint16_t src_lid = 0;
  std::uint16_t dst_lid = 0;
};

struct RouteStats {
  std::uint64_t switch_info_reads = 0;  // SwitchInfo Gets sent
  std::uint64_t lft_block_reads = 0;    // LinearForwardingTable Gets sent
  std::uint64_t failed_reads = 0;       // of those, no usable answer
  MadStats mads;                        // the transport's, summed
};

// How the tables are read: along the switch's directed route from the
// local port (works before and whatever the SM routed), or LID-routed to
// the switch's LID (shorter MADs; needs the SM's routes to the switch).
enum class LftAccess { kDirectedRoute, kLidRouted };

// A fingerprint of what routes depend on: node GUIDs, types, LIDs/LMCs,
// port states and links, independent of discovery's answer order.
std::uint64_t TopologyGeneration(const Topology& topology);
// topology.generation when Discover() stamped it, else computed.
std::uint64_t StampedGeneration(const Topology& topology);

class RouteTracer {
 public:
  RouteTracer(MadTransport& transport, MadOptions options,
              LftAccess access = LftAccess::kDirectedRoute);

  // Routes use `topology` from now on; cached tables survive only when its
  // generation is the one they were read under.
  void SetTopology(const Topology* topology);
  // Drops every cached table (the SM re-routed).
  void Invalidate();

  TraceResult Trace(std::uint16_t src_lid, std::uint16_t dst_lid);
  // One result per pair, in order.
  std::vector<TraceResult> TraceAll(const std::vector<RoutePair>& pairs);

  const RouteStats& stats() const { return stats_; }
  std::uint64_t generation() const { return generation_; }
  // Switches and LFT blocks held (for tests and the stats line).
  std::size_t cached_blocks() const;

  // The other way round (`fabricmon-locate --link`): the destination LIDs
  // whose entry in the LFT of switch `switch_guid` is `port`, ascending,
  // from every block up to its LinearFDBTop (each read once, cached as for
  // routes). Empty with *error when the switch is unknown or a table
  // cannot be read: a partial list would blame the wrong hosts.
  std::vector<std::uint16_t> LidsOutOf(std::uint64_t switch_guid, int port,
                                       std::string* error);

  // Whole tables (congestion trees, issue 42): for each switch of
  // `switch_guids`, the out port of every LID up to its LinearFDBTop
  // (entry d = LID d), read in two transport runs (every SwitchInfo, then
  // every block) and cached as for routes. A switch whose table cannot be
  // read (unknown, unanswered, malformed) is left out, with why in
  // *errors: the caller treats it as missing, never as "routes nothing".
  std::map<std::uint64_t, std::vector<std::uint8_t>> Tables(
      const std::vector<std::uint64_t>& switch_guids,
      std::map<std::uint64_t, std::string>* errors);

 private:
  struct SwitchTables {
    bool has_info = false;
    SwitchInfo info;
    std::map<std::uint32_t, LftBlock> blocks;
  };
  struct Walk;
  // What a walk needs to go on: nothing (it ended: arrived or failed), or
  // the tables of *switch_guid (its SwitchInfo and *block).
  enum class Need { kNothing, kTables };
  Need Advance(Walk& walk, std::uint64_t* switch_guid, std::uint32_t* block);
  // (switch GUID, block or SwitchInfo) -> why it could not be read.
  using FailedReads =
      std::map<std::pair<std::uint64_t, std::uint32_t>, std::string>;
  // Reads the tables `want` names that are not cached, all in one run.
  void Fetch(const std::map<std::uint64_t, std::vector<std::uint32_t>>& want,
             FailedReads* failed);
  // The node and port that answer `lid`, or false.
  bool FindLid(std::uint16_t lid, std::size_t* node, int* port) const;
  RouteHop HopAt(std::size_t node, int port, int out_port) const;

  MadTransport& transport_;
  MadOptions options_;
  LftAccess access_;
  const Topology* topology_ = nullptr;
  std::uint64_t generation_ = 0;
  // lid -> (node index, port): every LID of a known port (LMC included).
  std::map<std::uint16_t, std::pair<std::size_t, int>> lids_;
  std::map<std::uint64_t, SwitchTables> tables_;  // by switch node GUID
  RouteStats stats_;
};

// The route as `ibtracert SRC DST` prints it (its default, verbose form):
//   From ca {0x...} portnum 1 lid 1-1 "hca0"
//   [1] -> switch port {0x...}[1] lid 2-2 "leaf0"
//   ...
//   To ca {0x...} portnum 1 lid 8-8 "hca3"
std::string FormatIbtracert(const Route& route);

}  // namespace fabric::mad
