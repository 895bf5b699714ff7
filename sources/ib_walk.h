// The one walk over class/infiniband/<device>/ports/<n> that every collector
// reading per-device or per-port sysfs shares (ib_port, hw_counters,
// congestion, roce, nic_identity), so they agree on which devices and ports
// exist: the DeviceFilter applied to class/infiniband's entries, the numeric
// entries of ports/ in numeric order, an absent class/infiniband meaning "no
// RDMA stack loaded" rather than an error.
//
// Thread-safety: the functions are pure apart from reads through the
// caller's SysfsReader, which belongs to one collector (not shared).
#pragma once

#include <string>
#include <system_error>
#include <vector>

#include "core/device_filter.h"
#include "core/metric_sink.h"
#include "sources/sysfs.h"

namespace fabric {

// "class/infiniband/<device>"
std::string IbDevicePath(const std::string& device);

// Result of listing class/infiniband.
struct IbDeviceList {
  // False only if class/infiniband exists but can't be listed; an absent
  // one (ENOENT, ENOTDIR) is ok with no devices.
  bool ok = true;
  // Why class/infiniband could not be listed (empty when it was): callers
  // with their own rule for what fails a collection look at it.
  std::error_code error;
  std::vector<std::string> devices;  // allowed by the filter, sorted
};

// Lists the RDMA devices the filter allows. `skips`, when not null, gets a
// skipped input for a class/infiniband that exists but cannot be listed.
IbDeviceList ListIbDevices(SysfsReader& reader, const DeviceFilter& filter,
                           MetricSink* skips = nullptr);

// One device of the walk and its ports.
struct IbDevicePorts {
  std::string device;
  std::string dir;  // "class/infiniband/<device>"
  // Directory names under ports/ that are port numbers, sorted numerically.
  std::vector<std::string> ports;
};

// Result of the walk.
struct IbPortList {
  bool ok = true;         // as IbDeviceList::ok
  std::error_code error;  // as IbDeviceList::error
  // Allowed devices in name order. A device whose ports/ cannot be listed
  // (it vanished after the class/infiniband listing: hot unplug, driver
  // reload) is left out.
  std::vector<IbDevicePorts> devices;
};

// The walk: ListIbDevices, then ports/ of each device. `skips`, when not
// null, also gets a skipped input for each device left out.
IbPortList ListIbPorts(SysfsReader& reader, const DeviceFilter& filter,
                       MetricSink* skips = nullptr);
// The same into `out`, reusing its strings and vectors: a collector polled
// every 100 ms (congestion) keeps one IbPortList and walks without
// allocating once the devices stay the same.
void ListIbPorts(SysfsReader& reader, const DeviceFilter& filter,
                 MetricSink* skips, IbPortList& out);

}  // namespace fabric
