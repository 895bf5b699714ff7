// The fabric counters a bench agent reads around each iteration, per host,
// summed over every RDMA port: through the daemon's sysfs door
// (sources/sysfs.h) port_xmit_wait ("xmit_wait", ticks), hw_counters
// np_cnp_sent ("cnp_sent") and rp_cnp_handled ("cnp_handled"); and, when an
// ethtool source is given, the PFC pause frames of the netdevs behind the
// RoCE ports (ethtool {rx,tx}_prio<p>_pause summed over priorities:
// "pfc_pause_rx" = the peer paused us, "pfc_pause_tx" = we paused the peer),
// each netdev once however many ports share it. A counter no port provides
// is absent, not zero.
//
// Thread-safety: the returned source reads only; call it from one thread
// (the ethtool source keeps caches).
#pragma once

#include <memory>

#include "benchtool/agent.h"
#include "sources/ethtool_source.h"
#include "sources/sysfs.h"

namespace fabric::bench {

CounterSource HostCounterSource(std::shared_ptr<const Sysfs> sysfs,
                                std::shared_ptr<EthtoolSource> ethtool);

}  // namespace fabric::bench
