// ib_port collector: per-port PortCounters/PortCountersExtended values and
// port/device attributes from /sys/class/infiniband/<dev>/... for every RDMA
// device the DeviceFilter allows (mlx4, mlx5, bonds, hfi1, iWARP alike).
// See docs/metrics.md "## ib_port" for every metric it emits. The devices
// and ports come from the shared walk (sources/ib_walk.h).
//
// Thread-safety: a collector instance runs one Collect() at a time (see
// collector.h).
#pragma once

#include <memory>

#include "collectors/collector.h"

namespace fabric {

std::unique_ptr<Collector> MakeIbPortCollector(const CollectorEnv& env,
                                               const CollectorConfig& config);
// The registry row: no settings of its own.
CollectorSpec IbPortCollectorSpec();

}  // namespace fabric
