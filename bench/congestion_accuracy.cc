// Accuracy of the congestion-tree classifier (issue 42) over randomised
// scenarios on the simulator's routed fat trees (congestion/scenario.h):
// 1 or 2 roots, roots that move between two sweeps, noise on other ports,
// fat trees of several sizes. Each scenario is classified from the one
// sweep in which its tree exists (a moving root: the second sweep, with
// the first one's tracker state), so every verdict is within one sweep.
//
// Per fat-tree size and overall, first on plain fat trees, then on fat
// trees with two parallel links between every leaf and aggregation switch
// (where a flooded link can be `unbalanced`), then per true cause:
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

struct Size {
  int k, hosts_per_leaf, parallel;
};

struct CauseTally {
  int n = 0, ok = 0, other = 0;
};

struct Table {
  std::map<std::string, Tally> by_size, by_kind;
  Tally all;
  std::map<std::string, CauseTally> causes;  // by true cause
};

// Per true root: reported with its cause, with another, or not at all.
void ScoreCauses(const Scenario& sc, const Classification& c, Table& table) {
  for (const auto& [r, cause] : sc.truth.roots) {
    CauseTally& t = table.causes[CauseName(cause)];
    t.n++;
    for (const RootSummary& rep : c.roots) {
      if (rep.ref != r) continue;
      if (rep.cause == cause) {
        t.ok++;
      } else {
        t.other++;
      }
    }
  }
}

template <std::size_t N>
Table Run(const Size (&sizes)[N], int scenarios, std::mt19937& rng) {
  Table table;
  for (const Size& z : sizes) {
    fabric::sim::FatTree tree(z.k, z.hosts_per_leaf, z.parallel);
    const Lfts lfts = LftsOf(tree);
    const std::string size =
        "k=" + std::to_string(z.k) +
        (z.parallel > 1 ? " x" + std::to_string(z.parallel) + " links" : "") +
        " (" + std::to_string(tree.switches()) + " sw, " +
        std::to_string(tree.hosts()) + " hosts)";
    RouteIndex index;
    const int n = scenarios / static_cast<int>(N);
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
      ScoreCauses(sc, c, table);
      table.by_size[size].Add(t);
      table
          .by_kind[kind == 0   ? "1 root"
                   : kind == 1 ? "2 roots"
                               : "moving root"]
          .Add(t);
      table.all.Add(t);
    }
  }
  return table;
}

void Print(const Table& table) {
  auto row = [](const std::string& name, const Tally& t) {
    std::printf("| %-28s | %4d | %6.1f %% | %5.1f %% | %6.1f %% | %6.1f %% |\n",
                name.c_str(), t.scenarios, Pct(t.first, t.scenarios),
                Pct(t.wrong, t.scenarios), Pct(t.cause_ok, t.roots),
                Pct(t.victims_ok, t.victims));
  };
  std::printf(
      "| scenarios                    |    n | root first | wrong root | "
      "cause    | victims  |\n|---|---|---|---|---|---|\n");
  for (const auto& [name, t] : table.by_size) row(name, t);
  for (const auto& [name, t] : table.by_kind) row(name, t);
  row("all", table.all);
}

}  // namespace

int main(int argc, char** argv) {
  const int scenarios = argc > 1 ? std::atoi(argv[1]) : 240;
  const unsigned seed =
      argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1;
  std::mt19937 rng(seed);
  // Plain fat trees (no parallel links), then fat trees with two parallel
  // links between every leaf and aggregation switch (`unbalanced` roots).
  const Size plain[] = {{4, 2, 1}, {6, 3, 1}, {8, 4, 1}, {12, 4, 1}};
  const Size doubled[] = {{4, 2, 2}, {8, 4, 2}};
  Table first = Run(plain, scenarios, rng);
  Table second = Run(doubled, scenarios, rng);
  Print(first);
  std::printf(
      "\nWith two parallel links between every leaf and aggregation switch:\n");
  Print(second);
  std::printf(
      "\nCause by true cause (both tables):\n| true cause | roots | reported "
      "with it | reported with another cause | not reported "
      "|\n|---|---|---|---|---|\n");
  std::map<std::string, CauseTally> causes;
  for (const Table* t : {&first, &second}) {
    for (const auto& [cause, c] : t->causes) {
      causes[cause].n += c.n;
      causes[cause].ok += c.ok;
      causes[cause].other += c.other;
    }
  }
  for (const auto& [cause, c] : causes) {
    std::printf("| %s | %d | %.1f %% | %.1f %% | %.1f %% |\n", cause.c_str(),
                c.n, Pct(c.ok, c.n), Pct(c.other, c.n),
                Pct(c.n - c.ok - c.other, c.n));
  }
  return 0;
}
