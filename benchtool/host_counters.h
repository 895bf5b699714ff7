// The fabric counters a bench agent reads around each iteration, through the
// daemon's sysfs door (core/sysfs.h): per host, summed over every RDMA port,
// port_xmit_wait ("xmit_wait", ticks), hw_counters np_cnp_sent ("cnp_sent")
// and rp_cnp_handled ("cnp_handled"). A counter no port provides is absent,
// not zero. (PFC pause frames come from ethtool, which the collectors own;
// not read here yet.)
//
// Thread-safety: the returned source reads only; call it from one thread.
#pragma once

#include <memory>

#include "benchtool/agent.h"
#include "core/sysfs.h"

namespace fabric::bench {

CounterSource SysfsCounterSource(std::shared_ptr<const Sysfs> sysfs);

}  // namespace fabric::bench
