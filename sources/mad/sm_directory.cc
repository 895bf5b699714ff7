#include "sources/mad/sm_directory.h"

#include <mutex>

namespace fabric::mad {
namespace {

std::mutex& Mutex() {
  static std::mutex m;
  return m;
}

std::optional<std::vector<std::uint16_t>>& Lids() {
  static std::optional<std::vector<std::uint16_t>> lids;
  return lids;
}

}  // namespace

void PublishSmLids(std::vector<std::uint16_t> lids) {
  std::lock_guard<std::mutex> hold(Mutex());
  Lids() = std::move(lids);
}

std::optional<std::vector<std::uint16_t>> DiscoveredSmLids() {
  std::lock_guard<std::mutex> hold(Mutex());
  return Lids();
}

void ClearSmLids() {
  std::lock_guard<std::mutex> hold(Mutex());
  Lids().reset();
}

}  // namespace fabric::mad
