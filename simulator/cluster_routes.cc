#include "simulator/cluster_routes.h"

#include "simulator/model.h"

namespace fabric::sim {
namespace {
// Longer than any route in the model (HCA, leaf, spine, leaf).
constexpr std::size_t kMaxHops = 16;
}  // namespace

ClusterRoutes::ClusterRoutes(const std::vector<Port>& ports) : ports_(ports) {
  for (const Port& p : ports) {
    if (p.host < 0 && p.link_layer == LinkLayer::kInfiniBand) {
      switches_.try_emplace(p.device, static_cast<int>(switches_.size()));
    }
  }
  std::vector<std::vector<int>> peers(switches_.size());
  std::map<std::uint16_t, std::pair<int, int>> owners;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const Port& p = ports[i];
    const auto s = switches_.find(p.device);
    if (p.host >= 0 || s == switches_.end()) continue;
    port_index_[{s->second, p.port_num}] = static_cast<int>(i);
    owners[p.lid] = {s->second, 0};
    auto& row = peers[s->second];
    if (static_cast<int>(row.size()) <= p.port_num) {
      row.resize(p.port_num + 1, -1);
    }
    if (!p.up || p.peer < 0) continue;
    const Port& q = ports[p.peer];
    if (q.host >= 0) {
      if (q.lid != 0) owners[q.lid] = {s->second, p.port_num};
    } else if (const auto t = switches_.find(q.device); t != switches_.end()) {
      row[p.port_num] = t->second;
    }
  }
  routing_ =
      std::make_unique<MinHopRouting>(std::move(peers), std::move(owners));
}

int ClusterRoutes::SwitchIndex(const std::string& device) const {
  const auto it = switches_.find(device);
  return it == switches_.end() ? -1 : it->second;
}

std::vector<int> ClusterRoutes::Route(int src, int dst) const {
  const int n = static_cast<int>(ports_.size());
  if (src < 0 || src >= n || dst < 0 || dst >= n || ports_[dst].lid == 0) {
    return {};
  }
  std::vector<int> hops = {src};
  for (int tx = src;;) {
    const int rx = ports_[tx].peer;
    if (rx < 0 || !ports_[tx].up) return {};
    if (rx == dst) return hops;
    const Port& in = ports_[rx];
    const int sw = in.host >= 0 ? -1 : SwitchIndex(in.device);
    if (sw < 0 || hops.size() > kMaxHops) return {};
    const auto out =
        port_index_.find({sw, routing_->OutPort(sw, ports_[dst].lid)});
    if (out == port_index_.end()) return {};
    tx = out->second;
    hops.push_back(tx);
  }
}

}  // namespace fabric::sim
