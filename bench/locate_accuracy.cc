// How often fabricmon-locate names the bad cable (issue 42, Figures): over
// randomized scenarios on min-hop-routed fat trees of several sizes
// (simulator/fat_tree.h), probe pairs cross the routes their LFTs give;
// pairs over a bad cable lose probes; the pairs' verdicts (locate's
// Classify) go through locate's vote (ScoreLinks) and, beside it, a plain
// baseline that ranks links by how many bad pairs cross them. Prints the
// top-1 / top-2 hit rates per kind of scenario as a Markdown table
// (docs/locate.md).
//
//   build/bench/locate_accuracy [--scenarios N] [--seed S]
//
// Kinds: one bad cable; two at once; a gray failure (only some of the
// pairs over the cable lose, and a few percent of the other pairs lose
// too). Pure in-process: no Prometheus, no MADs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "locate/score.h"
#include "simulator/fat_tree.h"

namespace {

using fabric::locate::Link;
using fabric::locate::LinkEnd;
using fabric::locate::PathObservation;
using fabric::locate::Verdict;

// Probes per pair in a window and the share a bad cable drops: 100 probes
// at 5 % loss, well over locate's 1 % loss threshold.
constexpr double kProbes = 100;
constexpr double kBadCableLoss = 0.05;
// Each host probes this many random peers (a sparse mesh, as a large
// fabric's probe config has it).
constexpr int kPeersPerHost = 6;
// gray: the share of the pairs over the cable that lose (flows hashed onto
// one bad lane), and the share of all other pairs that lose anyway.
constexpr double kGrayAffected = 0.4;
constexpr double kGrayNoise = 0.03;
// A candidate bad cable carries at least this many probe pairs.
constexpr int kMinPairsOverCable = 3;

struct Topology {
  std::shared_ptr<fabric::sim::FatTree> tree;
  std::string name;
};

struct Pair {
  std::vector<Link> links;
};

Link CableOf(const fabric::sim::FatTree& t, int node, int port) {
  const auto& n = t.nodes()[node];
  const auto [peer, peer_port] = n.ports[port];
  return fabric::locate::MakeLink(LinkEnd{n.guid, port, {}},
                                  LinkEnd{t.nodes()[peer].guid, peer_port, {}});
}

std::vector<Pair> ProbePairs(const fabric::sim::FatTree& t, std::mt19937& rng) {
  std::vector<Pair> out;
  const int hosts = t.hosts();
  for (int src = 0; src < hosts; ++src) {
    std::set<int> peers;
    while (static_cast<int>(peers.size()) <
           std::min(kPeersPerHost, hosts - 1)) {
      const int dst = static_cast<int>(rng() % hosts);
      if (dst != src) peers.insert(dst);
    }
    for (int dst : peers) {
      Pair p;
      for (const auto& [node, port] : t.Walk(src, t.nodes()[dst].lid)) {
        p.links.push_back(CableOf(t, node, port));
      }
      if (!p.links.empty()) out.push_back(std::move(p));
    }
  }
  return out;
}

enum class Kind { kOne, kTwo, kGray };

struct Tally {
  int scenarios = 0;
  int vote_top1 = 0, vote_top2 = 0, base_top1 = 0, base_top2 = 0;
};

// Whether the top-1 link is a bad one, and whether the top two hold every
// bad cable (up to two of them).
void Score(const std::vector<Link>& ranked, const std::set<Link>& bad,
           int* top1, int* top2) {
  if (!ranked.empty() && bad.count(ranked[0])) ++*top1;
  std::size_t found = 0;
  for (std::size_t i = 0; i < std::min<std::size_t>(2, ranked.size()); ++i) {
    found += bad.count(ranked[i]);
  }
  if (found == std::min<std::size_t>(2, bad.size())) ++*top2;
}

// The baseline: links by bad pairs crossing them, most first; ties in a
// random order (no other evidence to break them).
std::vector<Link> CountBadPairs(const std::vector<PathObservation>& paths,
                                std::mt19937& rng) {
  std::map<Link, int> bad;
  for (const auto& p : paths) {
    if (p.verdict != Verdict::kBad) continue;
    for (const Link& l : std::set<Link>(p.links.begin(), p.links.end())) {
      ++bad[l];
    }
  }
  std::vector<std::pair<Link, int>> v(bad.begin(), bad.end());
  std::shuffle(v.begin(), v.end(), rng);
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second > b.second;
  });
  std::vector<Link> out;
  for (const auto& [l, n] : v) out.push_back(l);
  return out;
}

void RunOne(const Topology& topo, Kind kind, std::mt19937& rng, Tally* tally) {
  const auto pairs = ProbePairs(*topo.tree, rng);
  std::map<Link, int> load;
  for (const auto& p : pairs) {
    for (const Link& l : std::set<Link>(p.links.begin(), p.links.end())) {
      ++load[l];
    }
  }
  std::vector<Link> candidates;
  for (const auto& [l, n] : load) {
    if (n >= kMinPairsOverCable) candidates.push_back(l);
  }
  if (candidates.size() < 2) return;
  std::set<Link> bad;
  const std::size_t want = kind == Kind::kTwo ? 2 : 1;
  while (bad.size() < want) bad.insert(candidates[rng() % candidates.size()]);

  std::uniform_real_distribution<double> u(0, 1);
  std::binomial_distribution<int> drops(static_cast<int>(kProbes),
                                        kBadCableLoss);
  fabric::locate::Thresholds thresholds;
  std::vector<PathObservation> paths;
  for (const auto& p : pairs) {
    bool over_bad = false;
    for (const Link& l : p.links) over_bad |= bad.count(l) > 0;
    bool loses = over_bad;
    if (kind == Kind::kGray) {
      loses = over_bad ? u(rng) < kGrayAffected : u(rng) < kGrayNoise;
    }
    fabric::locate::PairMeasure m;
    m.sent = kProbes;
    m.lost = loses ? drops(rng) : 0;
    paths.push_back({fabric::locate::Classify(m, thresholds).verdict, p.links});
  }
  const auto scores = fabric::locate::ScoreLinks(paths);
  std::vector<Link> voted;
  for (const auto& s : scores.ranked) voted.push_back(s.link);
  ++tally->scenarios;
  Score(voted, bad, &tally->vote_top1, &tally->vote_top2);
  Score(CountBadPairs(paths, rng), bad, &tally->base_top1, &tally->base_top2);
}

double Pct(int n, int of) { return of ? 100.0 * n / of : 0; }

}  // namespace

int main(int argc, char** argv) {
  int per_kind = 300;
  unsigned seed = 42;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--scenarios")) {
      per_kind = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--seed")) {
      seed = static_cast<unsigned>(std::strtoul(argv[i + 1], nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: %s [--scenarios N] [--seed S]\n", argv[0]);
      return 2;
    }
  }
  if (per_kind <= 0) {
    std::fprintf(stderr, "--scenarios must be positive\n");
    return 2;
  }
  // k-ary fat trees: k=4 (20 switches, 16 hosts), k=6 (45, 54), k=8 (80,
  // 128); scenarios take them in turn.
  std::vector<Topology> topologies;
  for (auto [k, h] : {std::pair{4, 2}, {6, 3}, {8, 4}}) {
    topologies.push_back({std::make_shared<fabric::sim::FatTree>(k, h),
                          "k=" + std::to_string(k)});
  }
  std::mt19937 rng(seed);
  const std::pair<Kind, const char*> kinds[] = {
      {Kind::kOne, "one bad cable"},
      {Kind::kTwo, "two bad cables at once"},
      {Kind::kGray, "gray failure (40 % of its pairs lose; 3 % noise)"}};
  std::printf(
      "| scenario | scenarios | locate top-1 | locate top-2 | "
      "count-bad-pairs top-1 | count-bad-pairs top-2 |\n"
      "|---|---:|---:|---:|---:|---:|\n");
  for (const auto& [kind, name] : kinds) {
    Tally t;
    for (int i = 0; t.scenarios < per_kind && i < 10 * per_kind; ++i) {
      RunOne(topologies[i % topologies.size()], kind, rng, &t);
    }
    std::printf("| %s | %d | %.1f %% | %.1f %% | %.1f %% | %.1f %% |\n", name,
                t.scenarios, Pct(t.vote_top1, t.scenarios),
                Pct(t.vote_top2, t.scenarios), Pct(t.base_top1, t.scenarios),
                Pct(t.base_top2, t.scenarios));
  }
  std::printf(
      "\nfat trees k=4/6/8 (16/54/128 hosts), %d random peers per host, "
      "%.0f probes per pair, a bad cable drops %.0f %%, seed %u\n",
      kPeersPerHost, kProbes, kBadCableLoss * 100, seed);
  return 0;
}
