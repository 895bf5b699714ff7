// hw_counters collector: every file under
// /sys/class/infiniband/<dev>/ports/<n>/hw_counters/ and the device-level
// <dev>/hw_counters/ (driver-specific counters; mlx5 Q-counters and
// congestion counters), exported generically by name plus a few named RoCE
// metrics. See docs/metrics.md "## hw_counters".
//
// mlx5 Q-counters are read by the kernel as 32-bit values and wrap at 2^32
// (drivers/infiniband/hw/mlx5/counters.c). Because fabricmon polls far more
// often than such a counter can wrap, the collector keeps the last raw value
// per (device, port, counter) and exports a 64-bit value that keeps rising
// across wraps, so PromQL rate() stays correct.
//
// Thread-safety: one Collect() at a time per instance (collector.h); the
// unwrap state is owned by the instance. Q32Unwrapper is not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "collectors/collector.h"

namespace fabric {

std::unique_ptr<Collector> MakeHwCountersCollector(
    const CollectorEnv& env, const CollectorConfig& config);
// The registry row: no settings of its own.
CollectorSpec HwCountersCollectorSpec();

// True for the mlx5 hw_counters that are 32-bit Q-counters (list from
// counters-and-probes.md B.1c / kernel mlx5 counters.c).
bool IsQCounter32(std::string_view counter);
// Those counters' names.
std::span<const std::string_view> QCounter32Names();

// Turns successive raw 32-bit samples into a monotonically increasing 64-bit
// value.
//   - first sample of a key: exported as read;
//   - raw < last and the increase a wrap would imply (2^32 - last + raw) is
//     below 2^31: a wrap, add 2^32 (at mlx5 rates a counter cannot advance
//     2^31 within a poll: at the default 5 s interval that is 429 M events
//     a second on one Q-counter, above a ConnectX-7's message rate; a
//     longer `interval` lowers that bound in proportion);
//   - raw < last otherwise: a genuine reset (firmware reset); start over from
//     raw, and Prometheus sees an ordinary counter reset;
//   - raw above 2^32-1: the kernel reports it as 64-bit after all; pass it
//     through unchanged.
// Forget() drops a device's state when it disappears, so a device that comes
// back starts from its fresh raw values (a reset) instead of inheriting the
// old offset.
class Q32Unwrapper {
 public:
  std::uint64_t Update(const std::string& device, const std::string& key,
                       std::uint64_t raw);
  // Drops the state of every device not in `present`.
  void Retain(const std::set<std::string>& present);
  std::size_t size() const;

 private:
  struct State {
    std::uint64_t last = 0;
    std::uint64_t offset = 0;
  };
  std::map<std::string, std::map<std::string, State>> devices_;
};

}  // namespace fabric
