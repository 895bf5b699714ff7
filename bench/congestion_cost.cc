// What congestion-tree classification adds to a sweep's CPU (issue 42):
// a random 2,000-switch x 64-port fabric (FatTree::Random, min-hop routed)
// over MADs with switch PMAs (congestion/scenario.h CountingFabric),
// carrying congestion trees. Measures, in this process (the MAD engine,
// encoding/decoding and the simulator's answers, as sweep_scale_bench
// does), the CPU of one whole sweep and of FabricTrees::Update on it: the
// first congested sweep (it reads the forwarding tables of the switches
// with a waiting port and their neighbours, once per topology) and the
// steady state after it.
//
//   congestion_cost [SWITCHES=2000] [PORTS=64] [HOSTS=20000] [ROOTS=2]
//                   [SWEEPS=5]

#include <cstdio>
#include <cstdlib>
#include <random>

#include "bench/cpu_seconds.h"
#include "collectors/fabric_tree.h"
#include "congestion/scenario.h"
#include "sources/mad/discovery.h"
#include "sources/mad/sweep.h"

int main(int argc, char** argv) {
  using namespace fabric;
  using bench::CpuSeconds;
  const int switches = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int ports = argc > 2 ? std::atoi(argv[2]) : 64;
  const int hosts = argc > 3 ? std::atoi(argv[3]) : 20000;
  const int roots = argc > 4 ? std::atoi(argv[4]) : 2;
  const int sweeps = argc > 5 ? std::atoi(argv[5]) : 5;
  double t0 = CpuSeconds();
  auto tree = std::make_shared<sim::FatTree>(
      sim::FatTree::Random(switches, ports, hosts, 7));
  congestion::CountingFabric fabric(tree);
  MadOptions options;
  options.timeout = std::chrono::milliseconds(200);
  options.retries = 2;
  options.max_outstanding = 512;
  const mad::Topology topo = mad::Discover(fabric.transport(), options);
  std::printf(
      "fabric: %d switches x %d ports, %d hosts; discovered %zu "
      "nodes in %.1f s CPU\n",
      switches, ports, hosts, topo.nodes.size(), CpuSeconds() - t0);
  std::mt19937 rng(3);
  congestion::ScenarioSpec spec;
  spec.roots = roots;
  spec.noise_ports = 0.15;
  const congestion::Scenario sc = congestion::MakeScenario(*tree, spec, rng);
  FabricTrees trees;
  MetricSink sink;
  auto name = [](std::uint64_t, const std::string& f) { return f; };
  double sweep_cpu = 0, steady_cpu = 0, first_cpu = 0, steady_classify = 0;
  int steady = 0;
  for (int i = 0; i <= sweeps; ++i) {
    if (i > 0) fabric.Advance(sc);
    double a = CpuSeconds();
    const mad::SweepResult r =
        mad::Sweep(fabric.transport(), topo, mad::Shard{}, options);
    double b = CpuSeconds();
    // One interval of the scenario per sweep: the counters advance by one
    // second's worth.
    trees.Update(fabric.transport(), options, topo, mad::Shard{}, r, 1.0 + i,
                 1.0 + i, name, sink);
    double c = CpuSeconds();
    // As the daemon does (daemon/collection.cc): a collection refills the
    // samples of an earlier one, whose strings keep their storage.
    sink.Recycle(sink.Take());
    if (i == 0) continue;  // the baseline: no deltas yet
    sweep_cpu += b - a;
    if (i == 1) {  // the tables are read here (once per topology)
      first_cpu = c - b;
    } else {
      steady_cpu += c - b;
      steady_classify += trees.cpu().samples + trees.cpu().classify;
      ++steady;
    }
    std::printf(
        "sweep %d: sweep %.3f s CPU, trees %.3f s CPU (deltas %.3f, "
        "classification %.3f, series %.3f; %zu waiting ports, %zu "
        "roots, %zu partial)\n",
        i, b - a, c - b, trees.cpu().samples, trees.cpu().classify,
        trees.cpu().export_series, trees.last().ports.size(),
        trees.last().roots.size(), trees.last().partial.size());
  }
  sweep_cpu /= sweeps;
  steady_cpu /= steady;
  steady_classify /= steady;
  std::printf(
      "mean sweep %.3f s CPU; trees (classification + their series + "
      "fabric_switch_port_transmit_wait_seconds_total of every port): first "
      "congested sweep %.3f s (%.1f %%, tables read), steady %.4f s "
      "(%.2f %% of the sweep)\n",
      sweep_cpu, first_cpu, 100 * first_cpu / sweep_cpu, steady_cpu,
      100 * steady_cpu / sweep_cpu);
  std::printf(
      "steady deltas + classification alone (no series): %.4f s "
      "(%.2f %% of the sweep)\n",
      steady_classify, 100 * steady_classify / sweep_cpu);
  return 0;
}
