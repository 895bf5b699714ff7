#include "sources/mad/broker_routes.h"

#include <set>

namespace fabric::mad::broker {

RouteBook::Resolved RouteBook::Resolve(const DrPath& path) const {
  std::uint64_t at = 0;  // the local node
  std::set<std::uint64_t> seen = {0};
  for (std::uint8_t port : path) {
    auto it = edges_.find({at, port});
    if (it == edges_.end()) {
      return {false, "V" + std::to_string(at) + ":" + std::to_string(port)};
    }
    at = Node(it->second);
    if (!seen.insert(at).second) return {true, ""};
  }
  return {false, "N" + std::to_string(at)};
}

void RouteBook::Learn(const DrPath& path, const Mad& answer) {
  std::string error;
  const auto info = DecodeNodeInfo(answer, &error);
  if (!info || info->node_guid == 0) return;
  if (path.empty()) {
    if (local_ == 0) local_ = info->node_guid;
    return;
  }
  if (edges_.size() >= kMaxEdges) return;
  // The node before the last hop, by the cables known so far.
  std::uint64_t at = 0;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    auto it = edges_.find({at, path[i]});
    if (it == edges_.end()) return;
    at = Node(it->second);
  }
  edges_[{at, path.back()}] = info->node_guid;
  // The same cable the other way: NodeInfo's LocalPortNum is the port the
  // SMP came in on, so a route that turns back through it is known to
  // revisit `at` (a bounce) without a query of its own.
  if (info->local_port > 0 && edges_.size() < kMaxEdges) {
    edges_[{Node(info->node_guid),
            static_cast<std::uint8_t>(info->local_port)}] =
        at == 0 ? local_ : at;
  }
}

}  // namespace fabric::mad::broker
