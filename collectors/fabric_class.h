// fabric_class collector: the fabric class of every rail (RDMA port) and the
// fabric it is on, as fabric_port_fabric_class{device,port,class,reason,
// fabric,model,fw_ver,node_guid,cc,adaptive_retransmission} = 1. The rules
// are collectors/fabric_class_rules.h (docs/fabric-class.md); the facts come
// from sysfs: ports/<n>/link_layer, the device's model (nic_identity's
// IdentifyDevice), hw_counters/roce_adp_retrans, and the ECN enable flags of
// the lossless priority on the port's netdev (or, for a bond, its slaves).
//
// The fabric: `ib_fabric` / `roce_fabric` when configured; else an IB port's
// subnet prefix (gids/0) as "ib:<prefix>", a RoCE port's network as
// "roce:<network>" from its first RoCE v2 GID (IPv4-mapped GIDs preferred,
// cut to `roce_prefix_length`); "ib:unknown" / "roce:unknown" when the tree
// has no GIDs.
//
// Thread-safety: one Collect() at a time per instance (collector.h); the
// reader is the instance's own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/fabric_class_rules.h"

namespace fabric {

// `collectors.fabric_class` keys of its own.
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

// The rails of the tree `env.sysfs` as the collector (default settings)
// classifies them, for fabricmon-bench's agents. Never throws: a tree that
// cannot be read has no rails.
std::vector<RailSummary> ReadRailClasses(const CollectorEnv& env);

std::unique_ptr<Collector> MakeFabricClassCollector(
    const CollectorEnv& env, const CollectorConfig& config);
CollectorSpec FabricClassCollectorSpec();

}  // namespace fabric
