#include "locate/score.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace fabric::locate {

namespace {

std::string Format(const char* format, double a, double b) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), format, a, b);
  return buf;
}

bool Usable(double v) { return std::isfinite(v) && v >= 0; }

}  // namespace

Classification Classify(const PairMeasure& m, const Thresholds& t) {
  // Values come from a query answer: NaN (0/0 in PromQL), negative or
  // infinite numbers are no evidence either way.
  if (!Usable(m.sent) || !Usable(m.lost)) {
    return {Verdict::kUnknown, "no usable probe counts"};
  }
  if (m.sent < t.min_probes) {
    return {Verdict::kUnknown,
            Format("%.0f probes < %.0f", m.sent, t.min_probes)};
  }
  const double loss = std::min(1.0, m.lost / m.sent);
  if (loss > t.loss_ratio) {
    return {Verdict::kBad, Format("loss %.4g > %.4g", loss, t.loss_ratio)};
  }
  if (m.rtt_seconds && m.baseline_seconds && Usable(*m.rtt_seconds) &&
      Usable(*m.baseline_seconds)) {
    const double excess = *m.rtt_seconds - *m.baseline_seconds;
    const double limit = std::max(t.rtt_excess_floor_seconds,
                                  t.rtt_excess_ratio * *m.baseline_seconds);
    if (excess > limit) {
      return {Verdict::kBad,
              Format("rtt +%.0fus > %.0fus", excess * 1e6, limit * 1e6)};
    }
  }
  return {Verdict::kGood, ""};
}

Link MakeLink(LinkEnd x, LinkEnd y) { return x <= y ? Link{x, y} : Link{y, x}; }

std::vector<Link> IpLinks(const std::vector<std::string>& path) {
  std::vector<Link> out;
  for (std::size_t i = 1; i < path.size(); ++i) {
    out.push_back({LinkEnd{0, 0, path[i - 1]}, LinkEnd{0, 0, path[i]}});
  }
  return out;
}

Scores ScoreLinks(const std::vector<PathObservation>& paths,
                  const ScoreOptions& options) {
  Scores out;
  std::map<Link, LinkScore> by_link;
  for (const PathObservation& p : paths) {
    if (p.verdict == Verdict::kUnknown) continue;
    // A path that names a link twice (a trace that looped) still gives it
    // one share: the vote is over distinct links.
    const std::set<Link> links(p.links.begin(), p.links.end());
    if (links.empty()) continue;
    const bool bad = p.verdict == Verdict::kBad;
    ++(bad ? out.bad_paths : out.good_paths);
    for (const Link& l : links) {
      LinkScore& s = by_link[l];
      s.link = l;
      if (bad) {
        s.votes += 1.0 / static_cast<double>(links.size());
        ++s.bad_pairs;
        s.hosts.insert(p.hosts.begin(), p.hosts.end());
      } else {
        ++s.good_pairs;
      }
    }
  }
  for (const auto& [link, s] : by_link) {
    if (s.bad_pairs > 0) {
      out.ranked.push_back(s);
    } else if (s.good_pairs >= options.clear_min_good) {
      out.cleared.push_back(s);
    }
  }
  std::stable_sort(out.ranked.begin(), out.ranked.end(),
                   [](const LinkScore& x, const LinkScore& y) {
                     // Votes are sums of 1/n: compare with a tolerance so
                     // that equal shares summed in another order tie.
                     if (std::abs(x.votes - y.votes) > 1e-9) {
                       return x.votes > y.votes;
                     }
                     if (x.good_pairs != y.good_pairs) {
                       return x.good_pairs < y.good_pairs;
                     }
                     return x.link < y.link;
                   });
  return out;
}

}  // namespace fabric::locate
