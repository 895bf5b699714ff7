// FakeRdmaStats: the one fake RdmaStatSource (sources/roce_rdma_netlink.h)
// of the unit tests. A port answers the counters set for its device, node
// GUID and port number; any other answers ENODEV, as the real source answers
// a device this host does not have (or has under another GUID).
//
// Thread-safety: none; one test thread sets it up and the collector that
// owns it calls it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "sources/roce_rdma_netlink.h"

namespace fabric::testing {

class FakeRdmaStats final : public RdmaStatSource {
 public:
  using Port = std::tuple<std::string, std::uint64_t, std::uint32_t>;
  std::map<Port, RdmaStatResult> results;  // (device, node GUID, port)

  RdmaStatResult PortCounters(const std::string& device,
                              std::uint64_t node_guid,
                              std::uint32_t port) override {
    auto it = results.find({device, node_guid, port});
    if (it != results.end()) return it->second;
    return std::errc::no_such_device;
  }
};

}  // namespace fabric::testing
