// fabric collector (off by default; on a few designated nodes): discovers
// the fabric by directed-route SMPs every `discovery_interval` and, every
// `interval`, sweeps the switches of its shard (sources/mad/sweep.h):
// PortCounters + PortCountersExtended of every port but 0, PortInfo of
// every switch port when it may have changed (link-event counters moved,
// in transition, or every `port_info_every` sweeps; the sweep after a
// discovery takes discovery's), and PortExtendedSpeedsCounters (PESC,
// FEC/PHY errors) where the switch PMA has them (decided once per switch
// and topology: ClassPortInfo, PortInfoExtended, one probe). Get MADs
// only; counters are never cleared.
// Exports fabric_switch_info, fabric_switch_port_{state,physical_state},
// fabric_switch_port_link_info, fabric_switch_port_{transmit,receive}_
// {bytes,packets}_total (PortCountersExtended, data x4),
// fabric_switch_port_transmit_wait_total and fabric_switch_port_errors_total
// (PortCounters; fabric_switch_port_counters_saturated for a field stuck at
// its maximum); from PortInfo the width and lane rate a port runs at and
// could run at (fabric_switch_port_link_width{,_capable}_lanes,
// fabric_switch_port_lane_rate{,_capable}_bytes_per_second,
// fabric_switch_port_rate_bytes_per_second); from PESC the FEC and PHY
// counters (fabric_switch_port_fec_*_total, _sync_header_errors_total,
// _unknown_blocks_total, per lane where the layout has them); per switch
// fabric_switch_mad_failures_total and fabric_switch_unanswered_sweeps
// (sweeps in a row it answered nothing: FabricSwitchUnresponsive); per port
// fabric_switch_port_link_down_transitions_total (PortState leaving ACTIVE
// between two sweeps: FabricPortFlapping where the switch's firmware does
// not count LinkDowned; a flap shorter than one sweep is missed); and the
// sweep's health: fabric_sweep_mads_total{result},
// fabric_sweep_unreachable_nodes and fabric_sweep_pesc_unsupported_switches
// (a PMA without PESC is counted there once per sweep, never logged per
// port). `pesc: false` leaves PESC out of the sweep (no PESC MADs, no series;
// the PMA ClassPortInfo is still asked once per switch and discovery, for
// the 64-bit PortXmitWait, sources/mad/sweep.h).
//
// With `congestion_trees` (default on) every sweep also names each waiting
// port a congestion root or victim (collectors/fabric_tree.h, docs/
// congestion.md) and exports the trees and the ports' wait in seconds.
//
// Names: the switch's NodeDescription, or `node_name_map`'s name for its
// GUID (infiniband-diags format). A sweep that loses MADs shows it in
// fabric_sweep_mads_total, never as wrong values: an unanswered attribute
// is simply not exported this round.
//
// The port it sweeps from is chosen again at every collection while none is
// held (a node started before the SM starts sweeping once its port goes
// ACTIVE) and dropped when it goes down (sources/mad/live_ports.h). No IB port,
// or none ACTIVE yet: success with no samples; a port that cannot be opened:
// success 0 and one warning per failure streak.
//
// Thread-safety: one Collect() at a time (the daemon's rule); the topology
// and the transport are the collector's own.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "collectors/collector.h"
#include "collectors/mad_settings.h"
#include "sources/mad/live_ports.h"
#include "sources/mad/sweep.h"

namespace fabric {

struct FabricSettings {
  std::chrono::microseconds discovery_interval = std::chrono::minutes(10);
  std::string ca;  // "" = the first active IB port
  int ca_port = 0;
  mad::Shard shard;  // "i/n", checked and parsed once, at config load
  int max_outstanding = 64;
  MadSettings mad;            // mad_timeout, mad_retries
  std::string node_name_map;  // file path; "" = none
  // PortExtendedSpeedsCounters in the sweep. Off: not one PESC-related MAD
  // (no ClassPortInfo, PortInfoExtended or probe), for a fabric whose PMAs
  // mishandle 0x1F or to take its cost out of the sweep (bench).
  bool pesc = true;
  // Congestion trees after each sweep (collectors/fabric_tree.h): reads
  // the forwarding tables of switches with waiting ports (once per
  // topology) and, when sharded, a few counters past the shard edge.
  bool congestion_trees = true;
  // A quiet ACTIVE switch port's PortInfo (state, width, speed) is asked
  // every this many sweeps, and whenever its link-event counters moved, it
  // is in transition, or it went down under watch (sources/mad/sweep.h);
  // in between its last answer is exported. 1: every port every sweep.
  int port_info_every = 4;
  bool operator==(const FabricSettings&) const = default;
};

// `ports`: the local port list, injected in tests (null: the env's).
std::unique_ptr<Collector> MakeFabricCollector(
    const CollectorEnv& env, const CollectorConfig& config,
    mad::LocalPortLister ports = nullptr);
CollectorSpec FabricCollectorSpec();

}  // namespace fabric
