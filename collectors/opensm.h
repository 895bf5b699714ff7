// The `opensm` collector: receives the datagrams libfabricmon_osm.so (the
// OpenSM event plugin, osm/) sends from inside OpenSM and exports
//   fabric_opensm_events_total{event}, fabric_opensm_events_dropped_total,
//   fabric_opensm_heavy_sweep_duration_seconds,
//   fabric_opensm_traps_total{trap},
//   fabric_opensm_datagrams_rejected_total,
//   fabric_opensm_port_events_unclassified_total,
//   fabric_opensm_port_events_over_cap_total, fabric_opensm_switch_ports,
// and PerfMgr's per-port deltas accumulated into the fabric sweep's
// fabric_switch_port_* counters (switch ports only; labels switch_guid,
// switch, port; `error` values as on hosts). See docs/opensm.md.
//
// Event-driven: Start(io) binds the Unix datagram socket `socket` (mode
// 0600: only the daemon's user and root, as which OpenSM runs, may send)
// and receives on `io`; Collect() emits the totals and returns whether the
// socket is bound (re-binding it when not). Stop() closes and removes it.
// Counters start at zero when the daemon starts (PerfMgr sends deltas), as
// any Prometheus counter may.
//
// Thread-safety: the receive handler (io thread) and Collect() (poll
// thread) share the totals under a mutex; Start/Stop on the io thread.
#pragma once

#include <memory>
#include <string>

#include "collectors/collector.h"
#include "collectors/opensm_parse.h"

namespace fabric {

inline constexpr char kDefaultOsmSocket[] = "/run/fabricmon/osm-events.sock";
// The largest `max_switch_ports` accepted: 17 M series.
inline constexpr long long kMaxSwitchPortsLimit = 1'000'000;

// `collectors.opensm` keys of its own.
struct OpensmSettings {
  // `socket`: the path the plugin sends to (opensm.conf
  // event_plugin_options).
  std::string socket = kDefaultOsmSocket;
  // `node_name_map`: a node-name-map file (`<guid> "<name>"` lines, as
  // OpenSM and infiniband-diags read) whose names replace OpenSM's node
  // descriptions in the `switch` label. Empty = none.
  std::string node_name_map;
  // `switch_ports`: export PerfMgr's readings as fabric_switch_port_*.
  // Set false on a daemon that also runs the `fabric` sweep: the sweep's
  // absolute readings win, and each switch port must be exported once.
  bool switch_ports = true;
  // `max_switch_ports`: switch ports tracked at most; PerfMgr events for
  // more are counted (fabric_opensm_port_events_over_cap_total), not
  // exported. Lowering it on reload restarts the collector, which frees
  // what the old one held.
  int max_switch_ports = kDefaultMaxSwitchPorts;
  bool operator==(const OpensmSettings&) const = default;
};

std::unique_ptr<Collector> MakeOpensmCollector(const CollectorEnv& env,
                                               const CollectorConfig& config);
// The registry row: disabled by default.
CollectorSpec OpensmCollectorSpec();

}  // namespace fabric
