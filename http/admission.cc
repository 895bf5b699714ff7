#include "http/admission.h"

#include <algorithm>
#include <unordered_map>

namespace fabric::http {
namespace {

// Among the connections `pick` accepts: the one waiting longest for its
// request, else the one writing longest; with `or_newest`, else the newest
// one (being answered). Null if none.
template <class Pick>
Connection* Victim(const std::list<Connection*>& connections, Pick pick,
                   bool or_newest) {
  Connection* waiting = nullptr;
  Connection* writing = nullptr;
  Connection* newest = nullptr;
  for (Connection* c : connections) {
    if (c->closing || !pick(*c)) continue;
    if (c->waiting) {
      if (!waiting || c->waiting_since < waiting->waiting_since) waiting = c;
    } else if (c->writing_since) {
      if (!writing || *c->writing_since < *writing->writing_since) writing = c;
    }
    if (!newest || c->accepted >= newest->accepted) newest = c;
  }
  if (waiting) return waiting;
  if (writing) return writing;
  return or_newest ? newest : nullptr;
}

}  // namespace

Admission Admit(const std::list<Connection*>& connections,
                const std::string& source, std::size_t max_connections,
                std::size_t max_per_source) {
  std::unordered_map<std::string, std::size_t> held;
  std::size_t open = 0;
  for (const Connection* c : connections) {
    if (c->closing) continue;
    ++open;
    ++held[c->source];
  }
  const std::size_t mine = held[source];
  if (mine >= max_per_source) {  // rule 1
    Connection* victim = Victim(
        connections, [&](const Connection& c) { return c.source == source; },
        false);
    if (!victim) return {false, nullptr, "source_limit"};
    return {true, victim, nullptr};
  }
  if (open < max_connections) return {true, nullptr, nullptr};  // rule 2
  // Rule 3: the source holding the most, if it holds two more than ours.
  const std::string* top = nullptr;
  std::size_t most = 0;
  for (const auto& [name, count] : held) {
    if (count > most) {
      most = count;
      top = &name;
    }
  }
  if (top && most >= mine + 2) {
    return {true,
            Victim(
                connections,
                [&](const Connection& c) { return c.source == *top; }, true),
            nullptr};
  }
  // Rule 4, from sources holding at least as many as the newcomer's.
  Connection* victim = Victim(
      connections,
      [&](const Connection& c) { return held.at(c.source) >= mine; }, false);
  if (!victim) return {false, nullptr, "connection_limit"};
  return {true, victim, nullptr};
}

double SourceRate::Refilled(const Bucket& b, Clock::time_point now) const {
  const double seconds = std::chrono::duration<double>(now - b.at).count();
  return std::min(burst_, b.tokens + std::max(0.0, seconds) * per_second_);
}

bool SourceRate::Take(const std::string& source, Clock::time_point now) {
  auto it = buckets_.find(source);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_sources_) {
      std::erase_if(buckets_, [&](const auto& entry) {
        return Refilled(entry.second, now) >= burst_;
      });
      if (buckets_.size() >= max_sources_) return false;
    }
    it = buckets_.emplace(source, Bucket{burst_, now}).first;
  }
  Bucket& b = it->second;
  b.tokens = Refilled(b, now);
  b.at = now;
  if (b.tokens < 1.0) return false;
  b.tokens -= 1.0;
  return true;
}

}  // namespace fabric::http
