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

std::map<Key, double> ByKey(const std::vector<PromSample>& samples) {
  std::map<Key, double> out;
  // Two samples for one pair (an answer not aggregated as asked) add up.
  for (const PromSample& s : samples) out[KeyOf(s)] += s.value;
  return out;
}

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

std::vector<ProbePair> JoinPairs(const PairAnswers& a, const Thresholds& t) {
  const auto sent = ByKey(a.sent);
  const auto lost = ByKey(a.lost);
  std::map<Key, double> rtt, baseline;
  for (const PromSample& s : a.rtt) {
    if (std::isfinite(s.value)) rtt[KeyOf(s)] = s.value;
  }
  for (const PromSample& s : a.baseline) {
    if (std::isfinite(s.value)) baseline[KeyOf(s)] = s.value;
  }
  std::optional<double> median;
  if (!rtt.empty()) {
    std::vector<double> v;
    for (const auto& [k, x] : rtt) v.push_back(x);
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    median = v[v.size() / 2];
  }
  // Ports per pair: the distinct (local LID, remote LID) it was seen with.
  std::map<Key, std::set<std::pair<std::string, std::string>>> ports;
  for (const PromSample& s : a.info) {
    ports[KeyOf(s)].insert({Label(s, "local_lid"), Label(s, "remote_lid")});
  }
  const IpPaths ip = IpPathsOf(a.path);
  std::vector<ProbePair> out;
  for (const auto& [key, n] : sent) {
    ProbePair p;
    p.prober = key.first;
    p.peer = key.second;
    p.measure.sent = n;
    const auto l = lost.find(key);
    p.measure.lost = l == lost.end() ? 0 : l->second;
    if (const auto r = rtt.find(key); r != rtt.end()) {
      p.measure.rtt_seconds = r->second;
    }
    if (const auto b = baseline.find(key); b != baseline.end()) {
      p.measure.baseline_seconds = b->second;
    } else {
      p.measure.baseline_seconds = median;
    }
    p.verdict = Classify(p.measure, t);
    const auto pi = ports.find(key);
    if (pi == ports.end()) {
      p.unmapped_reason = "no fabric_probe_pair_info";
    } else if (pi->second.size() > 1) {
      p.unmapped_reason = "its ports changed within the window";
    } else {
      const auto& [local, remote] = *pi->second.begin();
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

}  // namespace fabric::locate
