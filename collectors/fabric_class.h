// fabric_class collector: the fabric class of every rail (RDMA port) and the
// fabric it is on, as fabric_port_fabric_class{device,port,class,reason,
// fabric,model,fw_ver,node_guid,cc,adaptive_retransmission} = 1. The
// classification is sources/rail_class.h's ClassifyRails (rules in
// docs/fabric-class.md); the facts come from sysfs: ports/<n>/link_layer,
// the device's model (sources/nic_model.h), hw_counters/roce_adp_retrans,
// and the ECN enable flags of the lossless priority on the port's netdevs
// (the port map's, sources/port_map.h: a bond's slaves included).
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
#include "sources/rail_class.h"

namespace fabric {

std::unique_ptr<Collector> MakeFabricClassCollector(
    const CollectorEnv& env, const CollectorConfig& config);
CollectorSpec FabricClassCollectorSpec();

}  // namespace fabric
