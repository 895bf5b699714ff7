// Rail classification: which kind of network a rail (one RDMA port) is on —
// `infiniband`, `roce_spectrum_x` or `roce` — and which fabric it belongs to,
// decided from facts the host reports (docs/fabric-class.md gives every rule
// and why). The rules are pure functions on the facts and on sysfs text;
// ClassifyRails reads the facts of every rail (the port map's netdevs,
// sources/port_map.h; the model, sources/nic_model.h) and applies them. The
// fabric_class collector (collectors/fabric_class.h) exports the result and
// fabricmon-bench's agents report it (ReadRailSummaries), without running a
// collector.
//
// Thread-safety: pure functions and value types; ClassifyRails reads
// through the caller's SysfsReader (one owner at a time).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/device_filter.h"
#include "core/metric_sink.h"
#include "sources/sysfs.h"

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
// (ReadRailSummaries).
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

// `collectors.fabric_class` keys.
struct FabricClassSettings {
  // `lossless_priority`: the PFC priority RoCE traffic runs on, whose
  // congestion control decides Spectrum-X (NVIDIA's reference: 3).
  int lossless_priority = 3;
  // `ib_fabric`, `roce_fabric`: fabric names replacing the derived ones.
  std::string ib_fabric;
  std::string roce_fabric;
  // `roce_prefix_length`: the IPv4 prefix length of the RoCE network.
  int roce_prefix_length = 24;
  bool operator==(const FabricClassSettings&) const = default;
};

// One classified rail and the facts behind it.
struct Rail {
  std::string device, port;
  RailFacts facts;
  RailClass rail_class;
  // `ib_fabric` / `roce_fabric` when configured; else an IB port's subnet
  // prefix (gids/0) as "ib:<prefix>", a RoCE port's network as
  // "roce:<network>" from its first RoCE v2 GID (IPv4-mapped GIDs
  // preferred, cut to `roce_prefix_length`); "ib:unknown" /
  // "roce:unknown" when the tree has no GIDs.
  std::string fabric;
  std::string fw_ver;     // the device's, trimmed
  std::string node_guid;  // "0x..." or empty
};

struct RailList {
  // Why class/infiniband could not be listed (sources/ib_walk.h); ENOENT
  // means no RDMA stack: no rails and no error.
  std::error_code error;
  std::vector<Rail> rails;
};

// Every rail of the devices `devices` allows, classified. A rail whose
// link layer is neither InfiniBand nor Ethernet is left out and named in
// `skips` (when not null), as are devices the walk leaves out.
RailList ClassifyRails(SysfsReader& reader, const DeviceFilter& devices,
                       const FabricClassSettings& settings, MetricSink* skips);

// The rails of the tree `sysfs` with default settings, for fabricmon-bench's
// agents. Never throws: a tree that cannot be read has no rails.
std::vector<RailSummary> ReadRailSummaries(const Sysfs& sysfs);

}  // namespace fabric
