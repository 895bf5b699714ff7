// Fabric class rules: which kind of network a rail (one RDMA port) is on —
// `infiniband`, `roce_spectrum_x` or `roce` — and which fabric it belongs to,
// decided from facts the host reports (docs/fabric-class.md gives every rule
// and why). Pure functions on the facts and on sysfs text; the fabric_class
// collector (collectors/fabric_class.h) reads the facts.
//
// Thread-safety: pure functions and value types.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabric {

// RoCE congestion control (DCQCN: ECN reaction and notification points) on
// the lossless priority, from class/net/<if>/ecn/roce_{np,rp}/enable/<prio>.
enum class CcState { kOn, kOff, kUnknown };

// What the host reports about one rail.
struct RailFacts {
  std::string link_layer;  // ports/<n>/link_layer, trimmed
  std::string model;       // nic_identity's model, empty when unknown
  CcState cc = CcState::kUnknown;
  // hw_counters/roce_adp_retrans exists: mlx5 creates the RoCE
  // acceleration counters (adaptive retransmission, slow restart) only on
  // devices whose firmware has the roce_accl capability.
  bool adaptive_retransmission = false;
};

// One rail's class and fabric, as fabricmon-bench's agents report them
// (collectors/fabric_class.h ReadRailClasses).
struct RailSummary {
  std::string device, port, fabric_class, fabric;
  bool operator==(const RailSummary&) const = default;
};

struct RailClass {
  std::string fabric_class;  // infiniband, roce_spectrum_x, roce
  std::string reason;        // the rule that decided it
};

// The class, or nullopt for a link layer that is neither InfiniBand nor
// Ethernet (no series: such a rail is on no fabric we classify).
std::optional<RailClass> ClassifyRail(const RailFacts& facts);

// True for the SuperNIC-class devices Spectrum-X pairs with: BlueField-3,
// BlueField-4, ConnectX-8.
bool IsSuperNicClass(std::string_view model);

// "on" / "off" / "unknown".
std::string_view CcLabel(CcState cc);

// An IB GID's subnet prefix ("fe80:0000:0000:0000:..." ->
// "fe80:0000:0000:0000"), or nullopt when the text is not a GID.
std::optional<std::string> IbSubnetPrefix(std::string_view gid);

// The RoCE network of a GID: an IPv4-mapped GID
// ("0000:0000:0000:0000:0000:ffff:0a00:0105") -> "10.0.1.0/24" with
// ipv4_prefix_length 24; any other GID -> its /64 ("fe80:0000:0000:0000::/64").
// nullopt for the all-zero GID (an empty slot) or text that is not a GID.
std::optional<std::string> RoceNetwork(std::string_view gid,
                                       int ipv4_prefix_length);

}  // namespace fabric
