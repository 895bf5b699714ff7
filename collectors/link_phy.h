// The link-health samples of one InfiniBand port read by MADs, shared by
// the two collectors that read them: `fabric` (every switch port of the
// sweep, families fabric_switch_port_*) and `ib_link` (the node's own
// ports, families fabric_port_*). One emitter, so a switch port and a host
// port export the same quantities under the same suffixes and units.
//
//  - From PortInfo: the width and lane rate the link runs at (link up
//    only: the active fields mean nothing otherwise) and the best the port
//    supports and has enabled (always).
//  - From PortExtendedSpeedsCounters (PESC, PMA 0x1F, either layout): the
//    FEC and PHY error counters, per port and per lane.
//
// Not a collector: helpers of the two collectors' Emit().
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include "core/metric_sink.h"
#include "sources/mad/codec.h"

namespace fabric {

struct LinkPhyFamilies {
  // Family prefix: "fabric_switch_port" or "fabric_port".
  const char* prefix;
  // The port as the HELP texts name it: "Switch port" or "Port".
  const char* subject;
  // Whether to export <prefix>_link_width_lanes and
  // <prefix>_rate_bytes_per_second: hosts already have both from sysfs
  // (collector ib_port), a second source would duplicate the series.
  bool active_width_and_rate;
};

inline constexpr LinkPhyFamilies kSwitchPortFamilies = {"fabric_switch_port",
                                                        "Switch port", true};
inline constexpr LinkPhyFamilies kHostPortFamilies = {"fabric_port", "Port",
                                                      false};

// Width and lane rate from PortInfo: capable always, active when the
// physical link is up (PortPhysicalState LinkUp).
void EmitLinkSpeed(MetricSink& sink, const LinkPhyFamilies& f,
                   const Labels& labels, const mad::PortInfo& info);

// PESC: port totals, and per lane the lanes the link uses (`lanes`, 0 =
// unknown: every lane with a non-zero count).
void EmitPesc(MetricSink& sink, const LinkPhyFamilies& f, const Labels& labels,
              const mad::PortExtendedSpeedsCounters& c, int lanes);

// The lanes PESC's per-lane counters cover: the active width while the
// physical link is up, else 0 (unknown).
int PescLanes(const mad::PortInfo* info);

}  // namespace fabric
