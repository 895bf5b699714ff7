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
  return k.starts_with("local_") || k.starts_with("remote_");
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
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace fabric::locate
