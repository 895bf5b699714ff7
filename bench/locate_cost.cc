// The locator's cost at scale (issue 29): fabricmon-locate's fabric half
// (locate/run.h: discovery, both-way traces of every bad pair and of the
// good ones that clear links, the vote) on the in-house simulator's k-ary
// fat tree (simulator/fat_tree.h; k = 40: 2,000 switches, 1,600 hosts),
// BAD random bad pairs and GOOD random good ones, each MAD answered after
// SERVICE_US with at most 4 in flight per node (more are dropped, as an
// overloaded switch does). Prints the wall and CPU time and the MADs sent,
// and checks that no SwitchInfo or LFT block was read twice.
//
//   locate_cost [K=40] [BAD=1000] [GOOD=2000] [SERVICE_US=50]
//               [MAX_OUTSTANDING=64]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <tuple>

#include "locate/run.h"
#include "simulator/fat_tree.h"

int main(int argc, char** argv) {
  using namespace fabric;
  using namespace fabric::locate;
  const int k = argc > 1 ? std::atoi(argv[1]) : 40;
  const int bad = argc > 2 ? std::atoi(argv[2]) : 1000;
  const int good = argc > 3 ? std::atoi(argv[3]) : 2000;
  const int service_us = argc > 4 ? std::atoi(argv[4]) : 50;
  const int max_out = argc > 5 ? std::atoi(argv[5]) : 64;
  auto tree = std::make_shared<sim::FatTree>(k, 2);
  // Table reads per (node, attribute, modifier): none may repeat.
  std::map<std::tuple<std::uint32_t, int, std::uint32_t>, int> tables;
  auto transport = sim::MakeAnsweringMadTransport(
      [&](std::uint16_t dlid, const Mad& mad, std::uint32_t* node) {
        const MadResult r = tree->Answer(dlid, mad, node);
        const std::uint8_t* b = mad.data();
        const int attr = (b[16] << 8) | b[17];
        if (r.ok() && (attr == 0x12 || attr == 0x19)) {
          ++tables[{*node, attr,
                    static_cast<std::uint32_t>((b[20] << 24) | (b[21] << 16) |
                                               (b[22] << 8) | b[23])}];
        }
        return r;
      },
      {.service_time = std::chrono::microseconds(service_us),
       .per_node_limit = 4});
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> host(0, tree->hosts() - 1);
  std::vector<ProbePair> pairs;
  for (int i = 0; i < bad + good; ++i) {
    int a = host(rng), b = host(rng);
    while (b == a) b = host(rng);
    ProbePair p;
    p.prober = "instance=" + tree->nodes()[a].name;
    p.peer = tree->nodes()[b].name;
    p.mapped = true;
    p.src_lid = tree->nodes()[a].lid;
    p.dst_lid = tree->nodes()[b].lid;
    p.verdict.verdict = i < bad ? Verdict::kBad : Verdict::kGood;
    pairs.push_back(p);
  }
  LocateOptions options;
  options.mad.timeout = std::chrono::milliseconds(50);
  options.mad.retries = 3;
  options.mad.max_outstanding = max_out;
  options.mad.max_per_destination = 4;
  options.max_good = good;
  std::printf(
      "fat tree k=%d: %d switches, %d hosts; %d bad + %d good pairs; %d us "
      "per MAD, <=4 in flight per node, %d outstanding\n",
      k, tree->switches(), tree->hosts(), bad, good, service_us, max_out);
  const std::clock_t cpu0 = std::clock();  // this process's CPU
  const auto t0 = std::chrono::steady_clock::now();
  Report report;
  mad::Topology topo;
  FabricCost cost;
  LocateLinks(*transport, options, pairs, &report, &topo, &cost);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  int repeated = 0;
  for (const auto& [key, n] : tables) repeated += n > 1;
  std::printf(
      "nodes discovered %zu, bad traced %d, good traced %d, "
      "unplaced %zu\n",
      topo.nodes.size(), report.bad_traced, report.good_traced,
      report.unplaced.size());
  std::printf("mads %s total %llu\n", cost.Text().c_str(),
              static_cast<unsigned long long>(
                  cost.discovery_mads + cost.switch_info + cost.lft_blocks));
  std::printf("tables read twice: %d\n", repeated);
  std::printf("wall %.3f s, cpu %.3f s\n", wall, cpu);
  return repeated == 0 && report.unplaced.empty() ? 0 : 1;
}
