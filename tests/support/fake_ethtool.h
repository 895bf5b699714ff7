// FakeEthtool: the one fake EthtoolSource (sources/ethtool_source.h) of the
// unit tests. A netdev answers the result set for it (statistics or an
// errno); any other answers `missing` (ENODEV unless a test changes it), as
// the ioctl answers an interface that does not exist. Every call is logged.
//
// Thread-safety: none; one test thread sets it up and the collector that
// owns it calls it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "sources/ethtool_source.h"

namespace fabric::testing {

class FakeEthtool final : public EthtoolSource {
 public:
  // What a netdev without a result fails with.
  std::errc missing = std::errc::no_such_device;
  std::map<std::string, EthtoolResult> results;
  // The netdevs asked for, in order. Shared, so a test can look at it after
  // the collector that owns the fake is gone.
  std::shared_ptr<std::vector<std::string>> calls =
      std::make_shared<std::vector<std::string>>();

  // `netdev`'s statistics are `counters` (in name order), driver mlx5_core.
  void Set(const std::string& netdev,
           const std::map<std::string, std::uint64_t>& counters);
  // Sets one statistic of `netdev` (added after the others if new; the
  // netdev gets statistics if it had none or an error).
  void SetCounter(const std::string& netdev, const std::string& name,
                  std::uint64_t value);
  // How often `netdev` was asked for.
  int CallsFor(const std::string& netdev) const;

  EthtoolResult Stats(const std::string& netdev) override;
};

}  // namespace fabric::testing
