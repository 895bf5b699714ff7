// `fabricmon-locate --link SWITCH_GUID:PORT` (docs/locate.md): the
// congestion question the other way round. Which destination LIDs leave a
// switch by that port (from its LFT, RouteTracer::LidsOutOf), whose ports
// they are (the discovered topology), and what the window says about them:
// the port's transmitted bytes and transmit wait, each destination host
// port's received bytes (joined by `fabric_port_lid`), and the probe pairs
// toward it whose route crosses the port.
//
// The queries are strings built here and the joins pure functions of
// their answers, so hostile answers are unit-tested; the binary does the
// MADs and the HTTP.
//
// Thread-safety: pure functions on values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "locate/pairs.h"
#include "locate/prometheus.h"

namespace fabric::locate {

struct LinkSpec {
  std::uint64_t guid = 0;  // the switch's node GUID
  int port = 0;
};

// "0x0002c90300000001:7" (the 0x is optional, hex GUID, decimal port
// 1..254). nullopt with *error.
std::optional<LinkSpec> ParseLinkSpec(std::string_view text,
                                      std::string* error);

struct LinkQueries {
  std::string xmit_bytes, xmit_wait;  // the switch port, over the window
  std::string host_lids;              // fabric_port_lid of every host port
  std::string host_rcv_bytes;         // their received bytes, the window
};
LinkQueries MakeLinkQueries(const std::string& window, const LinkSpec& link);

struct LinkDestination {
  std::uint16_t lid = 0;
  std::string name;  // node description; "" when no node has the LID
  std::uint64_t node_guid = 0;
  int port = 0;  // the node's port that owns the LID (a switch: 0)
  int type = 0;  // 1 CA, 2 switch, 3 router, 0 unknown
  // The host port with this LID (instance/device/port) and its received
  // bytes over the window, when the hosts' series have it.
  std::string host_port;
  std::optional<double> rcv_bytes;
  // Probe pairs toward this LID whose route crosses the port.
  int pairs = 0, bad_pairs = 0;
  double sent = 0, lost = 0;
  std::vector<std::string> bad;  // "prober -> peer: reason"
};

struct LinkReport {
  std::string window;
  LinkSpec link;
  std::string switch_name;  // the switch's description
  std::string remote;       // the far end: "name"[port], or ""
  std::optional<double> xmit_bytes, xmit_wait;  // nullopt: no series
  std::vector<LinkDestination> destinations;    // by LID
  bool queried = false;                         // Prometheus was asked
  std::string trace_stats;
};

// Adds each host port's received bytes to the destination with its LID:
// `lids` answers host_lids (value = the LID), `rcv` host_rcv_bytes, joined
// on every label but __name__. Samples with a value that is not a LID are
// skipped.
void JoinHostTraffic(const std::vector<PromSample>& lids,
                     const std::vector<PromSample>& rcv,
                     std::vector<LinkDestination>* destinations);

// Adds `pair` (mapped, its route known to cross the port) to the
// destination with its dst_lid; false when no destination has it.
bool AddCrossingPair(const ProbePair& pair,
                     std::vector<LinkDestination>* destinations);

// The sum of one query's samples; nullopt when it has none.
std::optional<double> SumOf(const std::vector<PromSample>& samples);

std::string FormatLinkTable(const LinkReport& report);
std::string FormatLinkJson(const LinkReport& report);

}  // namespace fabric::locate
