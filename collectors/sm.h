// sm collector: the subnet manager as every node sees it. It asks each
// master SM the active local IB ports (from libibumad, not sysfs, so it
// works under umad2sim too) name for SMInfo once per collection, not once
// per port: a port is skipped when the SM it reached last time (same SM
// LID, same SM GUID) already answered another port this time, so eight
// rails of one subnet cost one SMInfo and eight subnets eight.
// NodeDescription is asked once per SM GUID, not every time. At the
// default interval (60 s) a fleet of 2,000 nodes sends the master about 33
// SMInfo/s (docs/sizing.md, "Subnet manager load"). Get only, through the
// MAD transport. It exports fabric_sm_info,
// fabric_sm_state, fabric_sm_priority, fabric_sm_activity_total,
// fabric_sm_activity_stalled (a master whose ActCount did not move for
// `stall_after`: a hung SM) and fabric_sm_master_changes_total.
// With the fabric collector in the same process it also queries every SM
// that collector's discovery found (sources/mad/sm_directory.h), standbys
// included, and exports fabric_sm_masters; without it there is no such
// list and fabric_sm_masters is absent.
//
// The ports are chosen again at every collection (sources/mad/live_ports.h): a
// port the SM brings up after the daemon started is used from then on.
// No IB port, or none ACTIVE yet: success with no samples. A port that
// cannot be opened: success 0 and one warning (per failure streak).
//
// Thread-safety: one Collect() at a time (the daemon's rule); the
// ActCount history is the collector's own.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/mad_settings.h"
#include "sources/mad/live_ports.h"

namespace fabric {

struct SmSettings {
  MadSettings mad;  // mad_timeout, mad_retries
  std::chrono::microseconds stall_after = std::chrono::seconds(60);
  bool operator==(const SmSettings&) const = default;
};

// The local ports to look at; injectable for tests (null: the env's lister,
// else mad::LocalIbPorts; collectors/mad_ports.h).
using LocalPortLister = mad::LocalPortLister;

std::unique_ptr<Collector> MakeSmCollector(const CollectorEnv& env,
                                           const CollectorConfig& config,
                                           LocalPortLister ports = nullptr);
CollectorSpec SmCollectorSpec();

}  // namespace fabric
