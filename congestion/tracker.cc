#include <set>

#include "congestion/tree.h"

namespace fabric::congestion {

Classification Tracker::Run(const SweepInput& input,
                            const Thresholds& thresholds, double now_seconds,
                            RouteIndex* index) {
  std::vector<PortRef> held;
  for (const auto& [ref, seen] : roots_) {
    if (seen.missing == 0) held.push_back(ref);
  }
  Classification result = Classify(input, thresholds, index, &held);
  // A root whose counters did not come this sweep is held, not cleared
  // (only last sweep's roots are looked up: the input has every port).
  unanswered_.clear();
  std::set<PortRef> present;
  for (const PortSample& s : input.ports) {
    if (!roots_.count(s.ref)) continue;
    present.insert(s.ref);
    if (!s.xmit_wait_ticks) unanswered_.insert(s.ref);
  }
  for (const auto& [ref, seen] : roots_) {
    if (!present.count(ref)) unanswered_.insert(ref);
  }
  Update(result, now_seconds);
  return result;
}

std::vector<PortRef> Tracker::Tracked() const {
  std::vector<PortRef> out;
  out.reserve(roots_.size());
  for (const auto& [ref, seen] : roots_) out.push_back(ref);
  return out;
}

void Tracker::Update(Classification& result, double now_seconds) {
  std::set<PortRef> current;
  for (RootSummary& r : result.roots) {
    current.insert(r.ref);
    auto [it, fresh] = roots_.try_emplace(r.ref, Seen{now_seconds, 0});
    it->second.missing = 0;
    r.since_seconds = it->second.since;
  }
  // Unknown this sweep (no answer): keep the clock for a while. Anything
  // else that is no longer a root is gone at once.
  std::set<PortRef> unknown;
  for (const PortVerdict& v : result.ports) {
    if (v.role == Role::kUnknown) unknown.insert(v.ref);
  }
  for (auto it = roots_.begin(); it != roots_.end();) {
    if (current.count(it->first)) {
      ++it;
      continue;
    }
    bool hold =
        unknown.count(it->first) > 0 || unanswered_.count(it->first) > 0;
    if (hold && ++it->second.missing <= hold_sweeps_) {
      ++it;
    } else {
      it = roots_.erase(it);
    }
  }
  unanswered_.clear();
}

}  // namespace fabric::congestion
