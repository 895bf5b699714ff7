#include "locate/pairs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace fabric::locate {

namespace {

bool PortLabel(const std::string& k) {
  return k.starts_with("local_") || k.starts_with("remote_") || k == "src" ||
         k == "dst" || k == "path" || k == "hops";
}

// (prober, peer) of a sample: the labels that name the pair.
std::pair<std::string, std::string> KeyOf(const PromSample& s) {
  std::string prober, peer;
  for (const auto& [k, v] : s.labels) {
    if (k == "peer") {
      peer = v;
    } else if (k != "__name__" && k != "transport" && k != "le" &&
               !PortLabel(k)) {
      prober += (prober.empty() ? "" : ",") + k + "=" + v;
    }
  }
  return {prober, peer};
}

using Key = std::pair<std::string, std::string>;

// A decimal LID as the probe exports it; 0 when absent or not unicast.
std::uint16_t ParseLid(const std::string& text) {
  unsigned v = 0;
  const auto [p, ec] =
      std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() ||
      v == 0 || v >= 0xc000) {
    return 0;
  }
  return static_cast<std::uint16_t>(v);
}

std::string Label(const PromSample& s, const std::string& k) {
  const auto it = s.labels.find(k);
  return it == s.labels.end() ? "" : it->second;
}

// fabric_probe_path_info of the window: the paths of each pair, and of
// each (src, dst) address pair whatever its prober.
struct IpPaths {
  std::map<Key, std::set<std::vector<std::string>>> by_pair;
  std::map<std::pair<std::string, std::string>,
           std::set<std::vector<std::string>>>
      by_address;
};

// A trace ends where no router answers a TTL `tries` times, which is also
// how it ends at the peer (the peer answers trace datagrams with silence).
// Through a lossy link that silence can come early: the trace records the
// first hops only, and the pair would seem to change path. A path whose
// hops are a strict prefix of another path's (same source and destination)
// is such a truncated trace: drop it.
void DropTruncated(std::set<std::vector<std::string>>* paths) {
  for (auto it = paths->begin(); it != paths->end();) {
    const auto& a = *it;
    const bool truncated =
        std::any_of(paths->begin(), paths->end(), [&](const auto& b) {
          return b.size() > a.size() &&
                 std::equal(a.begin(), a.end() - 1, b.begin());
        });
    it = truncated ? paths->erase(it) : std::next(it);
  }
}

IpPaths IpPathsOf(const std::vector<PromSample>& samples) {
  IpPaths out;
  for (const PromSample& s : samples) {
    const std::string src = Label(s, "src"), dst = Label(s, "dst");
    if (src.empty() || dst.empty()) continue;
    std::vector<std::string> path = {src};
    const std::string hops = Label(s, "path");
    for (std::size_t at = 0; !hops.empty() && at <= hops.size();) {
      const std::size_t comma = std::min(hops.find(',', at), hops.size());
      path.push_back(hops.substr(at, comma - at));
      at = comma + 1;
    }
    path.push_back(dst);
    out.by_pair[KeyOf(s)].insert(path);
    out.by_address[{src, dst}].insert(path);
  }
  for (auto& [key, paths] : out.by_pair) DropTruncated(&paths);
  for (auto& [key, paths] : out.by_address) DropTruncated(&paths);
  return out;
}

// Puts an unmapped pair on its traced IP path (and the peer's path back),
// or says why not.
void PlaceOnIpPath(const IpPaths& ip, const Key& key, ProbePair* p) {
  const auto it = ip.by_pair.find(key);
  if (it == ip.by_pair.end()) return;  // the LID reason stands
  if (it->second.size() > 1) {
    p->unmapped_reason = "its traced path changed within the window";
    return;
  }
  const std::vector<std::string>& path = *it->second.begin();
  p->ip_links = IpLinks(path);
  // The answers' way: the peer's own flow to the prober's address (the
  // same 5-tuple as its answers), when it traced one path.
  const auto back = ip.by_address.find({path.back(), path.front()});
  if (back != ip.by_address.end() && back->second.size() == 1) {
    for (const Link& l : IpLinks(*back->second.begin())) {
      p->ip_links.push_back(l);
    }
  }
  p->unmapped_reason.clear();
}

}  // namespace

PairQueries MakePairQueries(const std::string& window,
                            const std::string& baseline) {
  const std::string w = "[" + window + "]";
  // The mean network RTT over a range, from the pair's sum and count: the
  // series every pair exports (its buckets only with
  // per_peer_histograms). Both transports together, as probes of either.
  const auto rtt = [](const std::string& range) {
    return "sum without (transport) "
           "(rate(fabric_probe_network_rtt_seconds_sum" +
           range +
           ")) / sum without (transport) "
           "(rate(fabric_probe_network_rtt_seconds_count" +
           range + "))";
  };
  return {
      "sum without (transport) (increase(fabric_probe_sent_total" + w + "))",
      "sum without (transport) (increase(fabric_probe_lost_total" + w + "))",
      rtt(w),
      rtt("[" + baseline + "] offset " + window),
      "last_over_time(fabric_probe_pair_info" + w + ")",
      "last_over_time(fabric_probe_path_info" + w + ")",
  };
}

void PairJoin::Add(Answer which, const std::vector<PromSample>& samples) {
  if (which == Answer::kPath) {
    path_.insert(path_.end(), samples.begin(), samples.end());
    return;
  }
  for (const PromSample& s : samples) {
    Row& row = rows_[KeyOf(s)];
    switch (which) {
      case Answer::kSent:
        // Two samples for one pair (an answer not aggregated as asked) add
        // up.
        row.in_sent = true;
        row.sent += s.value;
        has_sent_ = true;
        break;
      case Answer::kLost:
        row.lost += s.value;
        break;
      case Answer::kRtt:
        if (std::isfinite(s.value)) row.rtt = s.value;
        break;
      case Answer::kBaseline:
        if (std::isfinite(s.value)) row.baseline = s.value;
        break;
      case Answer::kInfo:
        row.ports.insert({Label(s, "local_lid"), Label(s, "remote_lid")});
        break;
      case Answer::kPath:
        break;
    }
  }
}

std::vector<ProbePair> PairJoin::Join(const Thresholds& t) const {
  std::optional<double> median;
  std::vector<double> v;
  for (const auto& [key, row] : rows_) {
    if (row.rtt) v.push_back(*row.rtt);
  }
  if (!v.empty()) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    median = v[v.size() / 2];
  }
  const IpPaths ip = IpPathsOf(path_);
  std::vector<ProbePair> out;
  for (const auto& [key, row] : rows_) {
    if (!row.in_sent) continue;
    ProbePair p;
    p.prober = key.first;
    p.peer = key.second;
    p.measure.sent = row.sent;
    p.measure.lost = row.lost;
    if (row.rtt) p.measure.rtt_seconds = *row.rtt;
    p.measure.baseline_seconds = row.baseline ? row.baseline : median;
    p.verdict = Classify(p.measure, t);
    if (row.ports.empty()) {
      p.unmapped_reason = "no fabric_probe_pair_info";
    } else if (row.ports.size() > 1) {
      p.unmapped_reason = "its ports changed within the window";
    } else {
      const auto& [local, remote] = *row.ports.begin();
      p.src_lid = ParseLid(local);
      p.dst_lid = ParseLid(remote);
      if (p.src_lid == 0 || p.dst_lid == 0) {
        p.unmapped_reason = "no LID for a side (local_lid \"" + local +
                            "\", remote_lid \"" + remote +
                            "\": RoCE, or not a fabric port)";
      } else {
        p.mapped = true;
      }
    }
    if (!p.mapped) PlaceOnIpPath(ip, key, &p);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<ProbePair> JoinPairs(const PairAnswers& a, const Thresholds& t) {
  PairJoin join;
  using A = PairJoin::Answer;
  join.Add(A::kSent, a.sent);
  join.Add(A::kLost, a.lost);
  join.Add(A::kRtt, a.rtt);
  join.Add(A::kBaseline, a.baseline);
  join.Add(A::kInfo, a.info);
  join.Add(A::kPath, a.path);
  return join.Join(t);
}

}  // namespace fabric::locate
