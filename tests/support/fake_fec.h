// FakeFec: the one fake FecSource (sources/ethtool_netlink.h) of the unit
// tests. A netdev answers the result set for it; any other answers
// EOPNOTSUPP, as the kernel answers a netdev whose driver has no FEC op
// (a veth). Every call is logged.
//
// Thread-safety: none; one test thread sets it up and the collector that
// owns it calls it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sources/ethtool_netlink.h"

namespace fabric::testing {

class FakeFec final : public FecSource {
 public:
  std::map<std::string, EthtoolFecResult> results;
  // The netdevs asked for, in order; shared, so a test can look at it after
  // the collector that owns the fake is gone.
  std::shared_ptr<std::vector<std::string>> calls =
      std::make_shared<std::vector<std::string>>();

  EthtoolFecResult Fec(const std::string& netdev) override {
    calls->push_back(netdev);
    auto it = results.find(netdev);
    if (it != results.end()) return it->second;
    return std::errc::operation_not_supported;
  }
};

}  // namespace fabric::testing
