// EthtoolSource: where the roce collector gets a netdev's driver statistics
// (what `ethtool -S <netdev>` prints) and link settings (`ethtool <netdev>`).
// The real implementation (sources/ethtool_ioctl.h) uses the SIOCETHTOOL ioctl;
// the file-backed one (sources/ethtool_file.h) reads `ethtool -S` text dumps;
// the simulator and the tests provide their own. The collector only ever sees
// this interface, so a fabric without NICs can still drive every code path
// above it.
//
// Contract for implementations:
//   - Stats() never throws. A netdev that does not exist or cannot be
//     queried returns an error (its errno); a driver that offers no
//     statistics returns ok() with empty `names`/`values` (not an error).
//   - On success names.size() == values.size(), and values[i] is the value
//     of the statistic named names[i] (driver order, duplicates possible).
//   - Read only: never resets or changes anything on the device.
//
// Thread-safety: an instance may keep per-netdev caches (the real one caches
// the string table), so callers make one call at a time per instance; the
// collector owns its source. Different instances are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "core/result.h"
#include "sources/ethtool_link.h"

namespace fabric {

struct EthtoolStats {
  std::string driver;              // ETHTOOL_GDRVINFO driver, e.g. "mlx5_core"
  std::vector<std::string> names;  // ETH_SS_STATS strings, driver order
  std::vector<std::uint64_t> values;  // ETHTOOL_GSTATS, same order as names
  // Current Ethernet address as sysfs prints it ("0c:42:a1:..."), or empty
  // when unknown. The collector compares it with class/net/<if>/address of
  // the tree it monitors so a recorded tree never gets a same-named host
  // interface's counters. Simulated sources may leave it empty.
  std::string hw_address;
  // Input entries the source had to skip as malformed (the file source's
  // unparsable lines); the collectors count them as skipped inputs.
  std::size_t skipped_lines = 0;
};

// The statistics, or e.g. ENODEV for an unknown netdev.
using EthtoolResult = Result<EthtoolStats>;
using EthtoolLinkResult = Result<EthtoolLink>;

class EthtoolSource {
 public:
  virtual ~EthtoolSource() = default;
  virtual EthtoolResult Stats(const std::string& netdev) = 0;
  // The link's active speed and link modes (sources/ethtool_link.h), what
  // `ethtool <netdev>` prints. operation_not_supported from a source that
  // has none (the default: fakes, and drivers without link settings); same
  // errors as Stats() otherwise.
  virtual EthtoolLinkResult Link(const std::string& /*netdev*/) {
    return std::errc::operation_not_supported;
  }
};

}  // namespace fabric
