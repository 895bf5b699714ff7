// The simulator's MAD view: a MadTransport (sources/mad/mad_transport.h) that
// answers Get requests from the model, built and decoded with opensm's
// IBA wire structs (<iba/ib_types.h>):
//   SMInfo (SubnLid 0x20)        at an SM's LID: GUID, ActCount, priority,
//                                state; a dead SM times out.
//   NodeInfo (0x11), PortInfo (0x15) at any HCA or switch LID.
//   PortCounters (Perf 0x12)     the 16/8/4-bit fields (saturated) and the
//                                32-bit data/packet/xmit_wait fields
//                                (saturating at 2^32-1, as the PMA does).
//   PortCountersExtended (0x1D)  64-bit data/packet counters, and the
//                                additional ones (errors, PortXmitWait
//                                unsaturated) that the PMA ClassPortInfo
//                                advertises (CapabilityMask2 bit 1).
//   NodeDescription (0x10)       the device's node_desc or the switch name.
//   SwitchInfo (0x12), LinearForwardingTable (0x19) at a switch: min-hop
//                                routes over the IB switches as the model
//                                is now (simulator/routing.h), so routes
//                                and fabricmon-locate work on it.
// NodeInfo, NodeDescription, PortInfo and the switch tables also by
// directed route (SubnDir
// 0x81) from SimMadOptions::local_port, hop by hop over the model's links
// (a down link or a port that does not exist: no answer), as fabric
// discovery and the switch sweep send them; a switch answers PortInfo for
// port 0 (its management port: the switch LID, and IsSM while an SM runs
// there).
// Unknown LID or a dead SM: no answer (the transport's engine times out).
// Set or unknown attribute: answered with a MAD status (unsupported method /
// method-attribute combination).
//
// Service model (for scale benches): each answer is delivered
// `service_time` after its request, and a node with `per_node_limit`
// requests already in flight drops the next one (as an overloaded switch
// management processor does), which shows up as a timeout and a retry.
//
// Thread-safety: one Run() at a time per instance; it reads the model under
// the LiveRunner's lock (or, for a bare Cluster, the caller must not step it
// concurrently).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "simulator/model.h"
#include "sources/mad/mad_transport.h"

namespace fabric::sim {

class LiveRunner;

struct SimMadOptions {
  std::chrono::microseconds service_time{0};
  int per_node_limit = 0;  // 0: unlimited
  // Index into Cluster::ports() of the local HCA port the MADs leave by:
  // directed-route SMPs start there. -1: none (directed route unanswered).
  int local_port = -1;
};

// Answers from a Cluster the caller keeps alive and does not step during
// Run() (tests, single-threaded tools).
std::unique_ptr<MadTransport> MakeSimMadTransport(const Cluster& cluster,
                                                  SimMadOptions options = {});
// Answers from a running LiveRunner (locks it per request).
std::unique_ptr<MadTransport> MakeSimMadTransport(const LiveRunner& runner,
                                                  SimMadOptions options = {});

// A farm of `switches` identical switches of `ports` ports for the sweep's
// scale bench (the cluster model has a handful of switches): switch i has
// LID i+1, GUID Guid(i) and directed route Path(i); it answers PortInfo
// (directed route, every port ACTIVE) and PortCounters /
// PortCountersExtended (at its LID) with values derived from (i, port)
// (XmitData, SymbolErrorCounter = port), through the same service model.
class SwitchFarm {
 public:
  SwitchFarm(int switches, int ports) : switches_(switches), ports_(ports) {}
  int switches() const { return switches_; }
  int ports() const { return ports_; }
  static std::uint16_t Lid(int index);
  static std::vector<std::uint8_t> Path(int index);
  static std::uint64_t Guid(int index);
  static std::uint64_t XmitData(int index, int port);
  // As AnswerMad; *node = the switch index.
  MadResult Answer(std::uint16_t dlid, const Mad& request,
                   std::uint32_t* node) const;

 private:
  int switches_, ports_;
};

std::unique_ptr<MadTransport> MakeSwitchFarmMadTransport(
    std::shared_ptr<const SwitchFarm> farm, SimMadOptions options);

// Any responder through the same service model: `answer` computes the
// response to a MAD at a DLID and names the node serving it (*node, for
// per_node_limit); an error result is a MAD nobody answers.
std::unique_ptr<MadTransport> MakeAnsweringMadTransport(
    std::function<MadResult(std::uint16_t dlid, const Mad& mad,
                            std::uint32_t* node)>
        answer,
    SimMadOptions options);

// The response to `request` at `dlid` computed from `cluster` (exposed for
// tests): invalid_argument for a malformed request, host_unreachable for a
// LID nobody has, timed_out for a dead SM.
MadResult AnswerMad(const Cluster& cluster, std::uint16_t dlid,
                    const Mad& request, int local_port = -1);

}  // namespace fabric::sim
