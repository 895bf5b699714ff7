#include "locate/trace.h"

namespace fabric::locate {

std::vector<Link> RouteLinks(const mad::Route& route) {
  std::vector<Link> out;
  for (std::size_t i = 1; i < route.hops.size(); ++i) {
    const mad::RouteHop& from = route.hops[i - 1];
    const mad::RouteHop& to = route.hops[i];
    out.push_back(
        MakeLink({from.node_guid, to.out_port}, {to.node_guid, to.port}));
  }
  return out;
}

std::vector<PairPath> TraceBothWays(mad::RouteTracer& tracer,
                                    const std::vector<mad::RoutePair>& pairs) {
  std::vector<mad::RoutePair> both;
  both.reserve(pairs.size() * 2);
  for (const mad::RoutePair& p : pairs) {
    both.push_back(p);
    both.push_back({p.dst_lid, p.src_lid});
  }
  const std::vector<mad::TraceResult> results = tracer.TraceAll(both);
  std::vector<PairPath> out(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    for (const mad::TraceResult* r : {&results[2 * i], &results[2 * i + 1]}) {
      if (!r->ok()) {
        out[i].error += (out[i].error.empty() ? "" : "; ") + r->error;
        continue;
      }
      for (const Link& l : RouteLinks(r->route)) out[i].links.push_back(l);
    }
  }
  return out;
}

}  // namespace fabric::locate
