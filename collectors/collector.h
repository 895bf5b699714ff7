// Collector: the tiny interface every data source implements. One collector
// per file pair (collectors/<name>.{h,cc}); its parsing lives in pure
// functions (<name>_parse.{h,cc}) that are tested on strings.
//
// Contract: Collect() never throws and never writes to the fabric or resets
// a counter. It writes whatever it could read into the sink, counts what it
// had to skip with MetricSink::Skip, and returns false only when the source
// as a whole failed (e.g. /sys/class/infiniband unreadable for a reason other
// than "absent"). A missing subsystem is success with no samples.
//
// Thread-safety: one Collect() at a time per instance (the scheduler
// guarantees this); different instances may run concurrently.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/metric_sink.h"
#include "core/sysfs.h"

namespace fabric {

class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view Name() const = 0;
  virtual bool Collect(MetricSink& sink) noexcept = 0;
};

// Which RDMA devices a collector looks at. Empty include = all devices.
// Entries are exact device names or ECMAScript regexes anchored at both ends.
struct DeviceFilter {
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  bool Allows(std::string_view device) const;
};

// Settings only the congestion collector reads (config
// `collectors.congestion.window` and `.xmit_wait_tick_ns`; see
// docs/congestion.md for what the tick is and why it is an assumption).
struct CongestionSettings {
  // Sliding window the exported peaks cover.
  double window_seconds = 60.0;
  // Duration of one port_xmit_wait tick.
  double xmit_wait_tick_seconds = 256e-9;
  bool operator==(const CongestionSettings&) const = default;
};

// What a collector may touch, all injectable.
struct CollectorEnv {
  std::shared_ptr<const Sysfs> sysfs;
  DeviceFilter devices;
  // Extra netdevs the roce collector reads besides those backing RDMA ports
  // (for config `collectors.roce.netdevs`; empty = discovery only).
  std::vector<std::string> netdevs;
  // Config `ethtool_dir`: when set, the roce and congestion collectors read
  // ethtool statistics from `ethtool -S` dumps `<ethtool_dir>/<netdev>`
  // (collectors/ethtool_file.h) instead of the kernel's ioctl; empty = the
  // kernel.
  std::string ethtool_dir;
  CongestionSettings congestion;
};

}  // namespace fabric
