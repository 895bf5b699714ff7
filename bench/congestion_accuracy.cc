// Accuracy of the congestion-tree classifier (issue 42) over randomised
// scenarios on the simulator's routed fat trees (congestion/scenario.h):
// 1 or 2 roots, roots that move between two sweeps, noise on other ports,
// fat trees of several sizes. Each scenario is classified from the one
// sweep in which its tree exists (a moving root: the second sweep, with
// the first one's tracker state), so every verdict is within one sweep.
//
// Per fat-tree size and overall:
//   root first   - the |truth| largest reported roots are the true roots
//   wrong root   - a scenario in which some reported root is not a true one
//   cause        - true roots reported with their true cause
//   victims      - true victims reported as victims of one of their roots
//
//   congestion_accuracy [SCENARIOS=240] [SEED=1]
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>

#include "congestion/scenario.h"

namespace {

using namespace fabric::congestion;

struct Tally {
  int scenarios = 0, first = 0, wrong = 0;
  int roots = 0, cause_ok = 0, victims = 0, victims_ok = 0;
  void Add(const Tally& o) {
    scenarios += o.scenarios;
    first += o.first;
    wrong += o.wrong;
    roots += o.roots;
    cause_ok += o.cause_ok;
    victims += o.victims;
    victims_ok += o.victims_ok;
  }
};

void Score(const Scenario& sc, const Classification& c, Tally& t) {
  t.scenarios++;
  std::set<PortRef> truth;
  for (const auto& [r, cause] : sc.truth.roots) truth.insert(r);
  std::set<PortRef> top;
  for (std::size_t i = 0; i < c.roots.size() && i < truth.size(); ++i) {
    top.insert(c.roots[i].ref);
  }
  if (top == truth) t.first++;
  bool wrong = false;
  for (const RootSummary& r : c.roots) wrong |= !truth.count(r.ref);
  if (wrong) t.wrong++;
  for (const auto& [r, cause] : sc.truth.roots) {
    t.roots++;
    for (const RootSummary& rep : c.roots) {
      if (rep.ref == r && rep.cause == cause) t.cause_ok++;
    }
  }
  std::map<PortRef, const PortVerdict*> verdicts;
  for (const PortVerdict& v : c.ports) verdicts[v.ref] = &v;
  for (const auto& [v, roots] : sc.truth.victims) {
    t.victims++;
    auto it = verdicts.find(v);
    if (it != verdicts.end() && it->second->role == Role::kVictim &&
        roots.count(it->second->root)) {
      t.victims_ok++;
    }
  }
}

double Pct(int a, int b) { return b ? 100.0 * a / b : 0; }

}  // namespace

int main(int argc, char** argv) {
  const int scenarios = argc > 1 ? std::atoi(argv[1]) : 240;
  const unsigned seed =
      argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1;
  struct Size {
    int k, hosts_per_leaf;
  };
  const Size sizes[] = {{4, 2}, {6, 3}, {8, 4}, {12, 4}};
  std::mt19937 rng(seed);
  std::map<std::string, Tally> by_size, by_kind;
  Tally all;
  for (const Size& z : sizes) {
    fabric::sim::FatTree tree(z.k, z.hosts_per_leaf);
    const Lfts lfts = LftsOf(tree);
    const std::string size = "k=" + std::to_string(z.k) + " (" +
                             std::to_string(tree.switches()) + " sw, " +
                             std::to_string(tree.hosts()) + " hosts)";
    RouteIndex index;
    const int n = scenarios / static_cast<int>(std::size(sizes));
    for (int i = 0; i < n; ++i) {
      const int kind = i % 3;  // 0: one root, 1: two roots, 2: a root moves
      ScenarioSpec spec;
      spec.roots = kind == 1 ? 2 : 1;
      spec.noise_ports = 0.15;
      Tracker tracker;
      Scenario sc = MakeScenario(tree, spec, rng);
      sc.input.lfts = lfts;
      Classification c = tracker.Run(sc.input, Thresholds{}, 0, &index);
      if (kind == 2) {
        std::set<PortRef> old;
        for (const auto& [r, cause] : sc.truth.roots) old.insert(r);
        sc = MakeScenario(tree, spec, rng, old);
        sc.input.lfts = lfts;
        c = tracker.Run(sc.input, Thresholds{}, 30, &index);
        // The old root must be gone at once, the new one new.
        for (const RootSummary& r : c.roots) {
          if (r.since_seconds != 30) std::printf("stale since!\n");
        }
      }
      Tally t;
      Score(sc, c, t);
      by_size[size].Add(t);
      by_kind[kind == 0   ? "1 root"
              : kind == 1 ? "2 roots"
                          : "moving root"]
          .Add(t);
      all.Add(t);
    }
  }
  auto row = [](const std::string& name, const Tally& t) {
    std::printf("| %-28s | %4d | %6.1f %% | %5.1f %% | %6.1f %% | %6.1f %% |\n",
                name.c_str(), t.scenarios, Pct(t.first, t.scenarios),
                Pct(t.wrong, t.scenarios), Pct(t.cause_ok, t.roots),
                Pct(t.victims_ok, t.victims));
  };
  std::printf(
      "| scenarios                    |    n | root first | wrong root | "
      "cause    | victims  |\n|---|---|---|---|---|---|\n");
  for (const auto& [name, t] : by_size) row(name, t);
  for (const auto& [name, t] : by_kind) row(name, t);
  row("all", all);
  return 0;
}
