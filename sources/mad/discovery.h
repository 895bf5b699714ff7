// Fabric discovery by directed-route SMPs from the local port: a
// breadth-first walk sending NodeInfo, NodeDescription and PortInfo to
// every node, and NodeInfo through every switch port that has a link to
// find the remote end. Many SMPs in flight through the MadTransport engine.
// A node that does not answer (after retries) is counted unreachable and
// not walked past; a malformed answer is an error, never a crash.
//
// Thread-safety: Discover() is a pure function of its transport's answers;
// one call at a time per transport.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sources/mad/codec.h"
#include "sources/mad/mad_transport.h"

namespace fabric::mad {

struct FabricPort {
  int num = 0;
  int state = 0;       // PortInfo PortState (1 down .. 4 active)
  int phys_state = 0;  // PortInfo PortPhysicalState
  std::uint16_t lid = 0;
  int lmc = 0;  // LIDs lid .. lid + 2^lmc - 1
  std::uint32_t capability_mask = 0;
  // The remote end, when the link was followed (remote_guid != 0).
  std::uint64_t remote_guid = 0;  // remote NODE GUID
  int remote_port = 0;
  // The whole PortInfo as discovery read it (widths, speeds): the sweep
  // right after a discovery takes it instead of asking again
  // (PortInfoMemory::Seed, sweep.h).
  std::optional<PortInfo> info = std::nullopt;
};

struct FabricNode {
  std::uint64_t guid = 0;  // node GUID
  std::uint64_t port_guid = 0;
  int type = 0;  // 1 CA, 2 switch, 3 router
  int num_ports = 0;
  std::uint16_t device_id = 0;  // NodeInfo DeviceID
  std::string description;
  std::uint16_t lid = 0;            // switch: port 0's; CA: the reached port's
  DrPath path;                      // directed route from the local port
  int reached_port = 0;             // the port the walk came in by
  std::map<int, FabricPort> ports;  // switch: 1..N (and 0); CA: reached port
};

struct Topology {
  std::vector<FabricNode> nodes;  // nodes[0] is the local node
  std::map<std::uint64_t, std::size_t> by_guid;
  int unreachable = 0;              // nodes that did not answer NodeInfo
  std::vector<std::string> errors;  // malformed answers (first few)
  MadStats stats;
  // TopologyGeneration (routes.h) of this topology as Discover() returned
  // it, so that per-sweep users need not hash 100,000 ports again; 0: not
  // stamped (built by hand), compute it. Whoever changes a stamped
  // topology sets it to 0.
  std::uint64_t generation = 0;

  const FabricNode* Find(std::uint64_t guid) const {
    auto it = by_guid.find(guid);
    return it == by_guid.end() ? nullptr : &nodes[it->second];
  }
  // LIDs of every port whose PortInfo CapabilityMask has IsSM.
  std::vector<std::uint16_t> SmLids() const;
};

Topology Discover(MadTransport& transport, const MadOptions& options);

}  // namespace fabric::mad
