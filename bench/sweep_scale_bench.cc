// The switch sweep at scale on the in-house simulator's switch farm
// (simulator/mad.h SwitchFarm): SWITCHES x PORTS switch ports, each MAD
// answered after a modelled SERVICE_US, at most 4 in flight per switch
// (more are dropped, as an overloaded switch does). Prints wall and CPU
// (this process: the engine, encoding/decoding and the simulator's
// answers) of one whole sweep (1/1) and of one shard (1/SHARDS), and checks
// every value came back right.
//
//   sweep_scale_bench [SWITCHES=2000] [PORTS=64] [SERVICE_US=50]
//                     [MAX_OUTSTANDING=512] [SHARDS=8]

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench/cpu_seconds.h"
#include "simulator/mad.h"
#include "sources/mad/sweep.h"

int main(int argc, char** argv) {
  using namespace fabric;
  using bench::CpuSeconds;
  const int switches = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int ports = argc > 2 ? std::atoi(argv[2]) : 64;
  const int service_us = argc > 3 ? std::atoi(argv[3]) : 50;
  const int max_out = argc > 4 ? std::atoi(argv[4]) : 512;
  const int shards = argc > 5 ? std::atoi(argv[5]) : 8;
  auto farm = std::make_shared<sim::SwitchFarm>(switches, ports);
  auto transport = sim::MakeSwitchFarmMadTransport(
      farm, {.service_time = std::chrono::microseconds(service_us),
             .per_node_limit = 4});
  mad::Topology topo;
  for (int i = 0; i < switches; ++i) {
    mad::FabricNode n;
    n.guid = sim::SwitchFarm::Guid(i);
    n.type = 2;
    n.num_ports = ports;
    n.lid = sim::SwitchFarm::Lid(i);
    n.path = sim::SwitchFarm::Path(i);
    n.description = "switch" + std::to_string(i);
    topo.by_guid[n.guid] = topo.nodes.size();
    topo.nodes.push_back(n);
  }
  MadOptions options;
  options.timeout = std::chrono::milliseconds(50);
  options.retries = 3;
  options.max_outstanding = max_out;
  options.max_per_destination = 4;
  std::printf(
      "farm %d switches x %d ports, %d us per MAD, <=4 in flight per "
      "switch, max_outstanding %d\n",
      switches, ports, service_us, max_out);
  for (const mad::Shard shard : {mad::Shard{1, 1}, mad::Shard{1, shards}}) {
    const double cpu0 = CpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    const mad::SweepResult r = mad::Sweep(*transport, topo, shard, options);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    const double cpu = CpuSeconds() - cpu0;
    long wrong = 0, port_count = 0;
    for (const auto& s : r.switches) {
      const int index = static_cast<int>(s.guid - sim::SwitchFarm::Guid(0));
      for (const auto& p : s.ports) {
        ++port_count;
        if (!p.extended || !p.counters || !p.info ||
            p.extended->xmit_data != sim::SwitchFarm::XmitData(index, p.num) ||
            p.counters->errors.at("symbol_error") !=
                static_cast<std::uint64_t>(p.num) ||
            p.info->state != 4) {
          ++wrong;
        }
      }
    }
    std::printf(
        "shard %d/%d: %zu switches, %ld ports, %llu MADs ok, %llu "
        "retries, %llu timeouts, %ld wrong/missing | wall %.3f s "
        "cpu %.3f s\n",
        shard.index, shard.count, r.switches.size(), port_count,
        static_cast<unsigned long long>(r.stats.ok),
        static_cast<unsigned long long>(r.stats.retries),
        static_cast<unsigned long long>(r.stats.timeouts), wrong, wall, cpu);
  }
  return 0;
}
