// fabricmon-locate's step 2: the links a probe pair's packets cross, both
// ways (a request and its answer may take different paths), from the LFT
// route tracer (sources/mad/routes.h). Needs rdma-core.
//
// Thread-safety: as RouteTracer's: one thread per tracer.
#pragma once

#include <string>
#include <vector>

#include "locate/score.h"
#include "sources/mad/routes.h"

namespace fabric::locate {

// The cables of a traced route, in order.
std::vector<Link> RouteLinks(const mad::Route& route);

struct PairPath {
  std::vector<Link> links;  // both directions' links
  std::string error;        // why a direction could not be traced
  bool ok() const { return error.empty(); }
};

// One PairPath per pair, all traced in one TraceAll (no block read twice).
std::vector<PairPath> TraceBothWays(mad::RouteTracer& tracer,
                                    const std::vector<mad::RoutePair>& pairs);

}  // namespace fabric::locate
