#include "simulator/routing.h"

#include <iba/ib_types.h>

#include <cstring>
#include <deque>
#include <limits>

namespace fabric::sim {

namespace {
constexpr std::uint16_t kFar = std::numeric_limits<std::uint16_t>::max();
}  // namespace

MinHopRouting::MinHopRouting(
    std::vector<std::vector<int>> peers,
    std::map<std::uint16_t, std::pair<int, int>> owners)
    : peers_(std::move(peers)), owners_(std::move(owners)) {}

std::uint16_t MinHopRouting::top() const {
  return owners_.empty() ? 0 : owners_.rbegin()->first;
}

const std::vector<std::uint16_t>& MinHopRouting::Distances(int to) const {
  MutexLock lock(mu_);
  auto [it, fresh] = distances_.try_emplace(to);
  if (!fresh) return it->second;
  // Breadth first from the owning switch: hops to it from every switch.
  std::vector<std::uint16_t>& d = it->second;
  d.assign(peers_.size(), kFar);
  std::deque<int> queue = {to};
  d[to] = 0;
  while (!queue.empty()) {
    const int s = queue.front();
    queue.pop_front();
    for (int q : peers_[s]) {
      if (q >= 0 && d[q] == kFar) {
        d[q] = static_cast<std::uint16_t>(d[s] + 1);
        queue.push_back(q);
      }
    }
  }
  return d;
}

std::uint8_t MinHopRouting::OutPort(int sw, std::uint16_t lid) const {
  const auto owner = owners_.find(lid);
  if (owner == owners_.end() || sw < 0 ||
      sw >= static_cast<int>(peers_.size())) {
    return 255;
  }
  const auto [to, port] = owner->second;
  if (to == sw) return static_cast<std::uint8_t>(port);
  const std::vector<std::uint16_t>& d = Distances(to);
  if (d[sw] == kFar) return 255;
  std::vector<int> closer;
  for (std::size_t p = 1; p < peers_[sw].size(); ++p) {
    const int q = peers_[sw][p];
    if (q >= 0 && d[q] + 1 == d[sw]) closer.push_back(static_cast<int>(p));
  }
  if (closer.empty()) return 255;
  return static_cast<std::uint8_t>(closer[lid % closer.size()]);
}

std::array<std::uint8_t, 64> MinHopRouting::Block(int sw,
                                                  std::uint32_t block) const {
  std::array<std::uint8_t, 64> out;
  for (std::uint32_t i = 0; i < 64; ++i) {
    const std::uint32_t lid = block * 64 + i;
    out[i] = lid < 0xc000 ? OutPort(sw, static_cast<std::uint16_t>(lid)) : 255;
  }
  return out;
}

void FillSwitchInfo(const MinHopRouting& routing, std::uint8_t* data) {
  ib_switch_info_t si{};
  si.lin_cap = cl_hton16(0xc000);
  si.lin_top = cl_hton16(routing.top());
  si.mcast_cap = cl_hton16(1024);
  si.def_port = 0;
  si.life_state = 0x80;  // default LifeTimeValue
  si.lids_per_port = cl_hton16(1);
  std::memcpy(data, &si, sizeof(si));
}

void FillLftBlock(const MinHopRouting& routing, int sw, std::uint32_t block,
                  std::uint8_t* data) {
  const auto ports = routing.Block(sw, block);
  std::memcpy(data, ports.data(), ports.size());
}

}  // namespace fabric::sim
