// ib_link collector: link health of the node's OWN InfiniBand ports, read by
// MADs through the daemon's MAD transport (the MAD broker), for what sysfs
// does not have (issue 28): per ACTIVE local IB port
//  - its PortInfo (a zero-hop directed-route SMP): the lane rate the link
//    runs at and the widest width / fastest lane rate the port supports and
//    has enabled (fabric_port_lane_rate_bytes_per_second,
//    fabric_port_link_width_capable_lanes,
//    fabric_port_lane_rate_capable_bytes_per_second; the active width and
//    rate stay ib_port's, from sysfs);
//  - the same of the port at the other end of its cable (a one-hop
//    directed-route NodeInfo, then PortInfo of the port it came in by:
//    fabric_port_remote_link_width_capable_lanes,
//    fabric_port_remote_lane_rate_capable_bytes_per_second), so the rules
//    know the best both ends support without the fabric sweep;
//  - PortExtendedSpeedsCounters (PMA 0x1F at the port's own LID) in the
//    layout its PMA's ClassPortInfo and the port's PortInfoExtended choose,
//    as `perfquery -T` does (sources/mad/pesc.h, the reader the sweep
//    shares), with the families the sweep has for switch ports
//    (collectors/link_phy.h) under fabric_port_*. Whether the PMA has PESC is
//    decided once per port and LID (one probe): a PMA without it (ibsim's)
//    exports nothing for it and is counted in
//    fabric_ib_link_pesc_unsupported_ports, not logged.
// Get MADs only; counters are never cleared.
//
// No IB port, or none ACTIVE yet: success with no samples; a port that
// cannot be opened: success 0 and one warning per failure streak.
//
// Thread-safety: one Collect() at a time (the daemon's rule); the PESC
// memory is the collector's own.
#pragma once

#include <memory>

#include "collectors/collector.h"
#include "collectors/mad_settings.h"
#include "sources/mad/live_ports.h"

namespace fabric {

struct IbLinkSettings {
  MadSettings mad;  // mad_timeout, mad_retries
  // PortExtendedSpeedsCounters. Off: not one PESC-related MAD.
  bool pesc = true;
  bool operator==(const IbLinkSettings&) const = default;
};

// `ports`: the local port list, injected in tests (null: the env's).
std::unique_ptr<Collector> MakeIbLinkCollector(
    const CollectorEnv& env, const CollectorConfig& config,
    mad::LocalPortLister ports = nullptr);
CollectorSpec IbLinkCollectorSpec();

}  // namespace fabric
