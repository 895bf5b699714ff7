// fabric collector (off by default; on a few designated nodes): discovers
// the fabric by directed-route SMPs every `discovery_interval` and, every
// `interval`, sweeps the switches of its shard (mad/sweep.h): PortInfo
// state of every switch port, PortCounters + PortCountersExtended of every
// port but 0. Get MADs only; counters are never cleared. Exports
// fabric_switch_info, fabric_switch_port_{state,physical_state},
// fabric_switch_port_link_info, fabric_switch_port_{transmit,receive}_
// {bytes,packets}_total (PortCountersExtended, data x4),
// fabric_switch_port_transmit_wait_total and fabric_switch_port_errors_total
// (PortCounters), and the sweep's health: fabric_sweep_mads_total{result}
// and fabric_sweep_unreachable_nodes.
//
// Names: the switch's NodeDescription, or `node_name_map`'s name for its
// GUID (infiniband-diags format). A sweep that loses MADs shows it in
// fabric_sweep_mads_total, never as wrong values: an unanswered attribute
// is simply not exported this round.
//
// Thread-safety: one Collect() at a time (the daemon's rule); the topology
// and the transport are the collector's own.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "collectors/collector.h"
#include "collectors/mad_settings.h"

namespace fabric {

struct FabricSettings {
  std::chrono::microseconds discovery_interval = std::chrono::minutes(10);
  std::string ca;  // "" = the first active IB port
  int ca_port = 0;
  std::string shard = "1/1";
  int max_outstanding = 64;
  MadSettings mad;            // mad_timeout, mad_retries
  std::string node_name_map;  // file path; "" = none
  bool operator==(const FabricSettings&) const = default;
};

std::unique_ptr<Collector> MakeFabricCollector(const CollectorEnv& env,
                                               const CollectorConfig& config);
CollectorSpec FabricCollectorSpec();

}  // namespace fabric
