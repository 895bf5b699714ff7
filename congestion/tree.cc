#include "congestion/tree.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <unordered_map>

#include "congestion/xmit_wait.h"

namespace fabric::congestion {
namespace {

constexpr std::size_t kMaxPartial = 20;

// What Classify knows of one port after the first pass.
struct PortState {
  const PortSample* sample = nullptr;
  double wait_fraction = -1;  // -1: unknown
  double lost = 0;            // bytes/s
  bool waiting = false;       // at the report threshold (or held)
  bool weak_waiting = false;  // at the next-hop threshold
  Role role = Role::kUnknown;
  bool decided = false;
  std::vector<PortRef> waiting_next;  // victims: next hops that wait
  std::string why;
  PortRef root;
  bool root_known = false;
  Cause cause = Cause::kNone;
};

// Per-port states in the order of the input, found by switch and port
// number: one vector and a small array per switch, not a hash node per
// port (a sweep has 100,000 ports; this is what Classify walks most).
class PortTable {
 public:
  struct Item {
    const PortRef& ref;
    PortState& st;
  };
  class Iter {
   public:
    Iter(PortTable* t, std::size_t i) : t_(t), i_(i) {}
    Item operator*() const { return {t_->refs_[i_], t_->states_[i_]}; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }

   private:
    PortTable* t_;
    std::size_t i_;
  };
  Iter begin() { return {this, 0}; }
  Iter end() { return {this, states_.size()}; }

  // Every input port's switch entry (its ports, for the next hops guessed
  // without a table), then states stay put: reserve for all of them.
  void Reserve(std::size_t n) {
    refs_.reserve(n);
    states_.reserve(n);
  }
  // The state of `ref`, made on first sight; `samples` of its switch gets
  // `sample` appended.
  PortState& Insert(const PortRef& ref, const PortSample* sample) {
    Switch& sw = SwitchOf(ref.guid);
    sw.samples.push_back(sample);
    std::int32_t* slot = Slot(sw, ref, true);
    if (*slot < 0) {
      *slot = static_cast<std::int32_t>(states_.size());
      refs_.push_back(ref);
      states_.emplace_back();
    }
    return states_[*slot];
  }
  PortState* Find(const PortRef& ref) {
    auto it = switches_.find(ref.guid);
    if (it == switches_.end()) return nullptr;
    std::int32_t* slot = Slot(it->second, ref, false);
    return slot && *slot >= 0 ? &states_[*slot] : nullptr;
  }
  PortState& At(const PortRef& ref) { return *Find(ref); }
  // The samples of a switch's ports in input order; null if none.
  const std::vector<const PortSample*>* Samples(std::uint64_t guid) const {
    auto it = switches_.find(guid);
    return it == switches_.end() ? nullptr : &it->second.samples;
  }

 private:
  struct Switch {
    std::vector<std::int32_t> by_port;  // state index, -1 none
    std::map<int, std::int32_t> other;  // port numbers outside 0..4095
    std::vector<const PortSample*> samples;
  };
  Switch& SwitchOf(std::uint64_t guid) {
    // The input comes switch by switch: remember the last one.
    if (!last_ || last_guid_ != guid) {
      last_ = &switches_[guid];
      last_guid_ = guid;
    }
    return *last_;
  }
  static std::int32_t* Slot(Switch& sw, const PortRef& ref, bool make) {
    if (ref.port < 0 || ref.port >= 4096) {
      auto it = sw.other.find(ref.port);
      if (it != sw.other.end()) return &it->second;
      return make ? &sw.other.emplace(ref.port, -1).first->second : nullptr;
    }
    const auto port = static_cast<std::size_t>(ref.port);
    if (port >= sw.by_port.size()) {
      if (!make) return nullptr;
      sw.by_port.resize(std::max<std::size_t>(port + 1, 65), -1);
    }
    return &sw.by_port[port];
  }

  std::vector<PortRef> refs_;
  std::vector<PortState> states_;
  std::unordered_map<std::uint64_t, Switch> switches_;
  Switch* last_ = nullptr;
  std::uint64_t last_guid_ = 0;
};

double Utilization(const PortSample& s, double interval) {
  if (!s.xmit_bytes || s.rate_bytes_per_second <= 0 || interval <= 0) {
    return -1;
  }
  return *s.xmit_bytes / interval / s.rate_bytes_per_second;
}

void AddPartial(Classification& out, std::string what) {
  if (out.partial.size() < kMaxPartial) out.partial.push_back(std::move(what));
}

class Classifier {
 public:
  Classifier(const SweepInput& input, const Thresholds& t, RouteIndex& index,
             const std::vector<PortRef>* held)
      : in_(input), t_(t), index_(index) {
    if (held) held_.insert(held->begin(), held->end());
  }

  std::vector<PortRef> Edge(const std::function<bool(std::uint64_t)>& own) {
    Measure();
    std::set<PortRef> want;
    for (auto [ref, st] : ports_) {
      if (!st.weak_waiting) continue;
      const PortSample& s = *st.sample;
      if (!s.remote.guid || s.remote_is_hca || own(s.remote.guid)) continue;
      std::optional<RouteIndex::PortSet> hops;
      if (!s.is_hca) {
        hops = index_.NextHops(in_.lfts, neighbours_, ref.guid, ref.port);
      }
      for (int q = 1; q < 256; ++q) {
        if (hops ? hops->test(q) : q != s.remote.port) {
          PortRef hop{s.remote.guid, q};
          if (!ports_.Find(hop)) want.insert(hop);
        }
      }
    }
    return {want.begin(), want.end()};
  }

  Classification Run() {
    Measure();
    for (auto [ref, st] : ports_) {
      if (st.weak_waiting) Decide(ref, st);
      // The lower threshold of a held port keeps a root a root; a held
      // port that is no root any more reports as any other.
      if (st.waiting && st.role != Role::kRoot && st.wait_fraction < t_.wait) {
        st.waiting = false;
      }
    }
    ResolveAll();
    Report();
    Pauses();
    std::sort(out_.ports.begin(), out_.ports.end(),
              [](const PortVerdict& a, const PortVerdict& b) {
                return a.ref < b.ref;
              });
    std::sort(
        out_.roots.begin(), out_.roots.end(),
        [](const RootSummary& a, const RootSummary& b) {
          if (a.tree_lost_bytes_per_second != b.tree_lost_bytes_per_second) {
            return a.tree_lost_bytes_per_second > b.tree_lost_bytes_per_second;
          }
          return a.ref < b.ref;
        });
    return std::move(out_);
  }

 private:
  // Wait fractions, lost bandwidth, and who links where.
  void Measure() {
    ports_.Reserve(in_.ports.size());
    std::array<std::uint64_t, 256>* row = nullptr;
    std::uint64_t row_guid = 0;
    for (const PortSample& s : in_.ports) {
      PortState& st = ports_.Insert(s.ref, &s);
      st.sample = &s;
      if (!s.is_hca && s.ref.port > 0 && s.ref.port < 256 && s.remote.guid) {
        if (!row || row_guid != s.ref.guid) {
          row = &neighbours_[s.ref.guid];
          row_guid = s.ref.guid;
        }
        (*row)[s.ref.port] = s.remote.guid;
      }
      if (!s.xmit_wait_ticks || in_.interval_seconds <= 0) continue;
      WaitTick tick = WaitTickFor(s.device_id, t_.fallback_tick_seconds);
      double secs = WaitSeconds(*s.xmit_wait_ticks, tick, s.lanes,
                                s.rate_bytes_per_second);
      if (secs < 0) continue;
      st.wait_fraction = std::min(1.0, secs / in_.interval_seconds);
      st.lost = st.wait_fraction * s.rate_bytes_per_second;
      double report = held_.count(s.ref) ? t_.next_hop_wait : t_.wait;
      st.waiting = st.wait_fraction >= report;
      st.weak_waiting = st.wait_fraction >= t_.next_hop_wait;
    }
  }

  // Root, victim or unknown, from the next hops' waits (one hop).
  void Decide(const PortRef& ref, PortState& st) {
    st.decided = true;
    const PortSample& s = *st.sample;
    if (!s.remote.guid) {
      st.why = "no link to follow";
      return;
    }
    if (s.remote_is_hca) {
      st.role = Role::kRoot;
      st.cause =
          Utilization(s, in_.interval_seconds) >= t_.oversubscribed_utilization
              ? Cause::kOversubscribed
              : Cause::kSlowReceiver;
      return;
    }
    RouteIndex::PortSet next;
    bool exact = false;
    if (!s.is_hca) {
      auto hops = index_.NextHops(in_.lfts, neighbours_, ref.guid, ref.port);
      if (hops) {
        next = *hops;
        exact = true;
      } else {
        Missing(ref.guid, s.remote.guid);
      }
    }
    if (!exact) {
      // Any port of the neighbour but the one traffic comes in by.
      const std::vector<const PortSample*>* remote =
          ports_.Samples(s.remote.guid);
      if (remote) {
        for (const PortSample* q : *remote) {
          if (q->ref.port > 0 && q->ref.port < 256 &&
              q->ref.port != s.remote.port) {
            next.set(q->ref.port);
          }
        }
      }
      if (!remote || next.none()) {
        st.why = "no counters of " + PortRefString({s.remote.guid, 0});
        return;
      }
    }
    std::string unknown;
    for (int q = 1; q < 256; ++q) {
      if (!next.test(q)) continue;
      PortRef hop{s.remote.guid, q};
      const PortState* h = ports_.Find(hop);
      if (!h || h->wait_fraction < 0) {
        if (unknown.empty()) unknown = PortRefString(hop);
        continue;
      }
      if (h->weak_waiting &&
          h->wait_fraction >= t_.next_hop_ratio * st.wait_fraction) {
        st.waiting_next.push_back(hop);
      }
    }
    if (!st.waiting_next.empty()) {
      st.role = Role::kVictim;
    } else if (exact && next.none()) {
      // A stale table, or the port carries only traffic to the neighbour
      // itself: nothing to blame it on.
      st.why = "no destination is routed out of this port";
    } else if (!unknown.empty()) {
      st.why = "next hop " + unknown + " has no counters this sweep";
    } else {
      st.role = Role::kRoot;
      st.cause = SwitchRootCause(s);
    }
  }

  Cause SwitchRootCause(const PortSample& s) const {
    // Parallel links to the same neighbour: coefficient of variation of
    // what they sent.
    std::vector<double> loads;
    for (const PortSample* q : *ports_.Samples(s.ref.guid)) {
      if (q->remote.guid == s.remote.guid && q->xmit_bytes) {
        loads.push_back(*q->xmit_bytes);
      }
    }
    if (loads.size() >= 2) {
      double mean = 0;
      for (double l : loads) mean += l;
      mean /= static_cast<double>(loads.size());
      double var = 0;
      for (double l : loads) var += (l - mean) * (l - mean);
      var /= static_cast<double>(loads.size());
      if (mean > 0 && std::sqrt(var) / mean > t_.unbalanced_cv) {
        return Cause::kUnbalanced;
      }
    }
    if (Utilization(s, in_.interval_seconds) >= t_.oversubscribed_utilization) {
      return Cause::kOversubscribed;
    }
    // Credits come back slowly from a switch whose egress does not wait:
    // the device behind the link does not drain.
    return Cause::kSlowReceiver;
  }

  void Missing(std::uint64_t s, std::uint64_t next) {
    std::uint64_t which = in_.lfts.count(s) ? next : s;
    if (missing_tables_.insert(which).second) {
      AddPartial(out_, "no forwarding table of " +
                           PortRefString({which, 0}).substr(0, 18) +
                           ": next hops guessed from every port");
    }
  }

  // Victims' roots: the root a chain of waiting next hops ends at (the one
  // that loses most bandwidth when they lead to several). A fixed point
  // over the victims, one hop further per pass, so neither the order of
  // the ports nor a cycle of waiting ports (routes to switch LIDs may go
  // down and up again) changes the answer.
  void ResolveAll() {
    std::vector<std::pair<PortRef, PortState*>> victims;
    for (auto [ref, st] : ports_) {
      if (st.role == Role::kVictim) victims.emplace_back(ref, &st);
    }
    std::sort(victims.begin(), victims.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t pass = 0; pass <= victims.size(); ++pass) {
      bool changed = false;
      for (auto& [ref, st] : victims) {
        const PortState* best = nullptr;
        PortRef best_ref;
        for (const PortRef& hop : st->waiting_next) {
          const PortState& h = ports_.At(hop);
          PortRef cand;
          if (h.role == Role::kRoot) {
            cand = hop;
          } else if (h.role == Role::kVictim && h.root_known) {
            cand = h.root;
          } else {
            continue;
          }
          const PortState& c = ports_.At(cand);
          if (!best || c.lost > best->lost ||
              (c.lost == best->lost && cand < best_ref)) {
            best = &c;
            best_ref = cand;
          }
        }
        if (best && (!st->root_known || st->root != best_ref)) {
          st->root = best_ref;
          st->root_known = true;
          changed = true;
        }
      }
      if (!changed) break;
    }
    for (auto& [ref, st] : victims) {
      if (!st->root_known) {
        st->why = "its root could not be followed (a next hop unknown)";
      }
    }
  }

  void Report() {
    // A held root under the report threshold stays while its tree does:
    // some port, however weakly waiting, still waits behind it. Without
    // one it is gone (a root that moved leaves no stale root behind).
    std::set<PortRef> weakly_referenced;
    for (auto [ref, st] : ports_) {
      if (st.role == Role::kVictim && st.root_known) {
        weakly_referenced.insert(st.root);
      }
    }
    std::map<PortRef, RootSummary> roots;
    for (auto [ref, st] : ports_) {
      const bool strong = st.wait_fraction >= t_.wait;
      const bool held = st.waiting && !strong && weakly_referenced.count(ref);
      if (st.role == Role::kRoot && (strong || held || referenced(ref))) {
        RootSummary& r = roots[ref];
        r.ref = ref;
        r.cause = st.cause;
        r.tree_lost_bytes_per_second += st.lost;
      }
    }
    for (auto [ref, st] : ports_) {
      bool is_root_reported = roots.count(ref) > 0;
      if (!st.waiting && !is_root_reported) continue;
      PortVerdict v;
      v.ref = ref;
      v.role = st.role;
      v.wait_fraction = st.wait_fraction;
      v.lost_bytes_per_second = st.lost;
      v.why = st.why;
      if (st.role == Role::kRoot) v.cause = st.cause;
      if (st.role == Role::kVictim && st.root_known) {
        v.root = st.root;
        RootSummary& r = roots[st.root];
        r.victims++;
        r.tree_lost_bytes_per_second += st.lost;
      }
      if (st.role == Role::kUnknown) {
        AddPartial(out_, PortRefString(ref) + " waits: " + st.why);
      }
      out_.ports.push_back(std::move(v));
    }
    for (auto& [ref, r] : roots) out_.roots.push_back(r);
  }

  bool referenced(const PortRef& ref) {
    if (referenced_.empty()) {
      for (auto [r, st] : ports_) {
        if (st.waiting && st.role == Role::kVictim && st.root_known) {
          referenced_.insert(st.root);
        }
      }
      referenced_.insert(PortRef{~0ull, -1});  // computed marker
    }
    return referenced_.count(ref) > 0;
  }

  // RoCE: hosts that send pauses more than they receive are origins; hosts
  // that are paused are victims of the origin that pauses most.
  void Pauses() {
    if (in_.pauses.empty() || in_.interval_seconds <= 0) return;
    struct Level {
      double tx = -1, rx = -1;  // fractions or frames/s, same unit both
      bool by_time = false;
    };
    auto level = [&](const HostPause& h) {
      Level l;
      if (h.tx_pause_seconds && h.rx_pause_seconds) {
        l.by_time = true;
        l.tx = *h.tx_pause_seconds / in_.interval_seconds;
        l.rx = *h.rx_pause_seconds / in_.interval_seconds;
      } else if (h.tx_pause_frames && h.rx_pause_frames) {
        l.tx = *h.tx_pause_frames / in_.interval_seconds;
        l.rx = *h.rx_pause_frames / in_.interval_seconds;
      }
      return l;
    };
    auto over = [&](const Level& l, double v) {
      return v >= (l.by_time ? t_.pause_fraction : t_.pause_frames_per_second);
    };
    const HostPause* top = nullptr;
    double top_tx = 0;
    std::vector<std::pair<const HostPause*, Level>> levels;
    for (const HostPause& h : in_.pauses) {
      Level l = level(h);
      if (l.tx < 0) {
        AddPartial(out_, h.name + ": no pause counters this interval");
        continue;
      }
      levels.emplace_back(&h, l);
      if (over(l, l.tx) && l.tx > l.rx && (!top || l.tx > top_tx)) {
        top = &h;
        top_tx = l.tx;
      }
    }
    std::map<PortRef, RootSummary> roots;
    for (auto& [h, l] : levels) {
      bool origin = over(l, l.tx) && l.tx > l.rx;
      bool paused = over(l, l.rx);
      if (!origin && !paused) continue;
      PortVerdict v;
      if (!origin && !top) {
        v.ref = h->ref;
        v.wait_fraction = l.by_time ? std::min(1.0, l.rx) : 0;
        v.why = "paused, but no host sends more pauses than it receives";
        out_.ports.push_back(std::move(v));
        continue;
      }
      v.ref = h->ref;
      double frac = l.by_time ? std::min(1.0, origin ? l.tx : l.rx) : 0;
      v.wait_fraction = frac;
      v.lost_bytes_per_second = frac * h->rate_bytes_per_second;
      if (origin) {
        v.role = Role::kRoot;
        v.cause = Cause::kPfcOrigin;
        RootSummary& r = roots[h->ref];
        r.ref = h->ref;
        r.cause = Cause::kPfcOrigin;
        r.tree_lost_bytes_per_second += v.lost_bytes_per_second;
      } else {
        v.role = Role::kVictim;
        v.root = top->ref;
        RootSummary& r = roots[top->ref];
        r.ref = top->ref;
        r.cause = Cause::kPfcOrigin;
        r.victims++;
        r.tree_lost_bytes_per_second += v.lost_bytes_per_second;
      }
      out_.ports.push_back(std::move(v));
    }
    for (auto& [ref, r] : roots) out_.roots.push_back(r);
  }

  const SweepInput& in_;
  const Thresholds& t_;
  RouteIndex& index_;
  PortTable ports_;
  RouteIndex::Neighbours neighbours_;
  std::set<PortRef> held_;
  std::set<PortRef> referenced_;
  std::set<std::uint64_t> missing_tables_;
  Classification out_;
};

}  // namespace

std::string PortRefString(const PortRef& ref) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "0x%016llx:%d",
                static_cast<unsigned long long>(ref.guid), ref.port);
  return buf;
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kRoot:
      return "root";
    case Role::kVictim:
      return "victim";
    case Role::kUnknown:
      return "unknown";
  }
  return "unknown";
}

const char* CauseName(Cause cause) {
  switch (cause) {
    case Cause::kNone:
      return "";
    case Cause::kSlowReceiver:
      return "slow_receiver";
    case Cause::kOversubscribed:
      return "oversubscribed";
    case Cause::kUnbalanced:
      return "unbalanced";
    case Cause::kPfcOrigin:
      return "pfc_origin";
  }
  return "";
}

std::optional<RouteIndex::PortSet> RouteIndex::NextHops(
    const Lfts& lfts, const Neighbours& neighbours, std::uint64_t s, int port) {
  if (port <= 0 || port >= 256) return std::nullopt;
  auto nb = neighbours.find(s);
  auto cached = cache_.find(s);
  if (cached != cache_.end() && nb != neighbours.end() &&
      cached->second.row != nb->second) {
    cache_.erase(cached);  // more of its links are known now
    cached = cache_.end();
  }
  if (cached == cache_.end()) {
    Entry& e = cache_[s];
    auto own = lfts.find(s);
    if (own != lfts.end() && nb != neighbours.end()) {
      e.row = nb->second;
      // The neighbour's table per out port (null: missing).
      std::array<const std::vector<std::uint8_t>*, 256> next{};
      for (int p = 1; p < 256; ++p) {
        if (!nb->second[p]) continue;
        auto t = lfts.find(nb->second[p]);
        if (t != lfts.end()) {
          next[p] = &t->second;
          e.known[p] = true;
        }
      }
      const std::vector<std::uint8_t>& table = own->second;
      for (std::size_t d = 1; d < table.size(); ++d) {
        std::uint8_t p = table[d];
        const std::vector<std::uint8_t>* n = next[p];
        if (p == 0 || p == 0xff || !n || d >= n->size()) continue;
        std::uint8_t q = (*n)[d];
        if (q != 0 && q != 0xff) e.next[p].set(q);
      }
    }
    cached = cache_.find(s);
  }
  if (!cached->second.known[port]) return std::nullopt;
  return cached->second.next[port];
}

Classification Classify(const SweepInput& input, const Thresholds& thresholds,
                        RouteIndex* index, const std::vector<PortRef>* held) {
  RouteIndex local;
  Classifier c(input, thresholds, index ? *index : local, held);
  return c.Run();
}

std::vector<PortRef> EdgeReads(const SweepInput& input,
                               const Thresholds& thresholds, RouteIndex* index,
                               const std::function<bool(std::uint64_t)>& own) {
  RouteIndex local;
  Classifier c(input, thresholds, index ? *index : local, nullptr);
  return c.Edge(own);
}

Classification OwnedOnly(const Classification& all,
                         const std::function<bool(std::uint64_t)>& own) {
  Classification out;
  out.partial = all.partial;
  std::map<PortRef, RootSummary> roots;
  for (const RootSummary& r : all.roots) {
    if (!own(r.ref.guid)) continue;
    RootSummary& o = roots[r.ref];
    o = r;
    o.victims = 0;
    o.tree_lost_bytes_per_second = 0;
  }
  for (const PortVerdict& v : all.ports) {
    if (!own(v.ref.guid)) continue;
    out.ports.push_back(v);
    PortRef root = v.role == Role::kRoot ? v.ref : v.root;
    if (v.role == Role::kUnknown || (v.role == Role::kVictim && !root.guid)) {
      continue;
    }
    RootSummary& o = roots[root];
    o.ref = root;
    if (v.role == Role::kVictim) o.victims++;
    o.tree_lost_bytes_per_second += v.lost_bytes_per_second;
  }
  for (auto& [ref, r] : roots) out.roots.push_back(r);
  return out;
}

}  // namespace fabric::congestion
