#include "tests/support/fake_ethtool.h"

#include <algorithm>

namespace fabric::testing {

void FakeEthtool::Set(const std::string& netdev,
                      const std::map<std::string, std::uint64_t>& counters) {
  EthtoolStats stats;
  stats.driver = "mlx5_core";
  for (const auto& [name, value] : counters) {
    stats.names.push_back(name);
    stats.values.push_back(value);
  }
  results.insert_or_assign(netdev, std::move(stats));
}

void FakeEthtool::SetCounter(const std::string& netdev, const std::string& name,
                             std::uint64_t value) {
  auto it = results.find(netdev);
  if (it == results.end() || !it->second.ok()) {
    Set(netdev, {{name, value}});
    return;
  }
  EthtoolStats& stats = *it->second;
  auto pos = std::find(stats.names.begin(), stats.names.end(), name);
  if (pos == stats.names.end()) {
    stats.names.push_back(name);
    stats.values.push_back(value);
  } else {
    stats.values[pos - stats.names.begin()] = value;
  }
}

int FakeEthtool::CallsFor(const std::string& netdev) const {
  return static_cast<int>(std::count(calls->begin(), calls->end(), netdev));
}

EthtoolResult FakeEthtool::Stats(const std::string& netdev) {
  calls->push_back(netdev);
  auto it = results.find(netdev);
  if (it != results.end()) return it->second;
  return missing;
}

}  // namespace fabric::testing
