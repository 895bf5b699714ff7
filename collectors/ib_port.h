// ib_port collector: per-port PortCounters/PortCountersExtended values and
// port/device attributes from /sys/class/infiniband/<dev>/... for every RDMA
// device the DeviceFilter allows (mlx4, mlx5, bonds, hfi1, iWARP alike).
// See docs/metrics.md "## ib_port" for every metric it emits.
//
// Also hosts the device/port walk that the hw_counters collector shares.
//
// Thread-safety: a collector instance runs one Collect() at a time (see
// collector.h); the free functions are pure apart from reads through Sysfs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.h"

namespace fabric {

std::unique_ptr<Collector> MakeIbPortCollector(const CollectorEnv& env,
                                               const CollectorConfig& config);
// The registry row: no settings of its own.
CollectorSpec IbPortCollectorSpec();

// Result of listing class/infiniband.
struct IbDeviceList {
  bool ok = true;  // false only if class/infiniband exists but can't be listed
  std::vector<std::string> devices;  // allowed by the filter, sorted
};

// Lists RDMA devices. An absent class/infiniband is ok with no devices
// (the host simply has no RDMA stack loaded).
IbDeviceList ListIbDevices(const Sysfs& sysfs, const DeviceFilter& filter,
                           MetricSink& sink);
// The same through a collector's reader (within its collection).
IbDeviceList ListIbDevices(SysfsReader& reader, const DeviceFilter& filter,
                           MetricSink& sink);

// Port numbers (directory names under ports/, numeric only, sorted
// numerically) of `device`; empty optional when ports/ cannot be listed,
// e.g. because the device vanished after the listing.
std::optional<std::vector<std::string>> ListIbPorts(const Sysfs& sysfs,
                                                    const std::string& device);
std::optional<std::vector<std::string>> ListIbPorts(SysfsReader& reader,
                                                    const std::string& device);

// "class/infiniband/<device>"
std::string IbDevicePath(const std::string& device);

}  // namespace fabric
