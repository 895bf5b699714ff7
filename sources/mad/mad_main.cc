// fabricmon-mad: the mad/ library from the command line, for
// troubleshooting, the ibsim integration tests and the bench. Discovers
// the fabric from the local port, sweeps the switches of a shard and
// prints one line per fact (switch, port, sm, stats); `route SRC DST`
// prints the path between two LIDs as ibtracert does. Get MADs only.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sources/mad/codec.h"
#include "sources/mad/discovery.h"
#include "sources/mad/mad_cli.h"
#include "sources/mad/routes.h"
#include "sources/mad/sweep.h"
#include "sources/mad/umad_transport.h"

using namespace fabric;
using namespace fabric::mad;

namespace {

void PrintStats(const char* what, const MadStats& s, int unreachable) {
  std::printf(
      "stats %s ok %llu timeouts %llu errors %llu retries %llu "
      "unreachable %d\n",
      what, static_cast<unsigned long long>(s.ok),
      static_cast<unsigned long long>(s.timeouts),
      static_cast<unsigned long long>(s.errors),
      static_cast<unsigned long long>(s.retries), unreachable);
}

// "SRC DST" lines ('#' comments); false with *error on a bad line.
bool ReadPairs(const std::string& path, std::vector<RoutePair>* pairs,
               std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::istringstream f(line);
    long src = 0, dst = 0;
    std::string rest;
    if (!(f >> src)) continue;  // blank
    if (!(f >> dst) || (f >> rest) || src <= 0 || src >= 0xc000 || dst <= 0 ||
        dst >= 0xc000) {
      *error = path + ":" + std::to_string(n) + ": want two unicast LIDs";
      return false;
    }
    pairs->push_back(
        {static_cast<std::uint16_t>(src), static_cast<std::uint16_t>(dst)});
  }
  return true;
}

// `route`: the path of each pair, ibtracert's format; one pair alone
// prints exactly what ibtracert would, several get a "route SRC DST"
// header each. Exit 1 when any route could not be traced.
int TraceRoutes(MadTransport& transport, const MadOptions& options,
                const std::vector<RoutePair>& pairs, bool lid_routed) {
  const Topology topo = Discover(transport, options);
  for (const auto& e : topo.errors)
    std::fprintf(stderr, "error %s\n", e.c_str());
  RouteTracer tracer(
      transport, options,
      lid_routed ? LftAccess::kLidRouted : LftAccess::kDirectedRoute);
  tracer.SetTopology(&topo);
  const std::vector<TraceResult> results = tracer.TraceAll(pairs);
  int status = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    if (pairs.size() > 1) {
      std::printf("route %u %u\n", static_cast<unsigned>(pairs[i].src_lid),
                  static_cast<unsigned>(pairs[i].dst_lid));
    }
    if (results[i].ok()) {
      std::fputs(FormatIbtracert(results[i].route).c_str(), stdout);
    } else {
      status = 1;
      if (pairs.size() > 1) std::printf("error %s\n", results[i].error.c_str());
      std::fprintf(stderr, "route %u -> %u: %s\n",
                   static_cast<unsigned>(pairs[i].src_lid),
                   static_cast<unsigned>(pairs[i].dst_lid),
                   results[i].error.c_str());
    }
  }
  // The cost, on stderr so that stdout stays ibtracert's.
  const RouteStats& s = tracer.stats();
  std::fprintf(stderr,
               "stats route pairs %zu discovery_mads %llu switch_info %llu "
               "lft_blocks %llu failed %llu timeouts %llu\n",
               pairs.size(),
               static_cast<unsigned long long>(
                   topo.stats.ok + topo.stats.timeouts + topo.stats.errors),
               static_cast<unsigned long long>(s.switch_info_reads),
               static_cast<unsigned long long>(s.lft_block_reads),
               static_cast<unsigned long long>(s.failed_reads),
               static_cast<unsigned long long>(s.mads.timeouts));
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabricmon-mad: discover the fabric and sweep its switches"};
  std::string shard_text = "1/1";
  MadCli mad_cli;
  bool sm_only = false;
  mad_cli.AddTo(app);
  app.add_option("--shard", shard_text, "i/n");
  app.add_flag("--sm", sm_only, "only SMInfo of the local port's master SM");
  std::vector<unsigned> route_lids;
  std::string pairs_file;
  bool lid_routed = false;
  CLI::App* route = app.add_subcommand(
      "route", "the path from SRC to DST (LIDs), as ibtracert prints it");
  route->fallthrough();
  route->add_option("lids", route_lids, "SRC DST")
      ->expected(0, 2)
      ->check(CLI::Range(1u, 0xbfffu));
  route->add_option("--pairs-file", pairs_file,
                    "trace every \"SRC DST\" line of FILE (one discovery)");
  route->add_flag("--lid-routed", lid_routed,
                  "read the tables LID-routed (default: directed route)");
  CLI11_PARSE(app, argc, argv);
  std::vector<RoutePair> pairs;
  if (*route) {
    if (route_lids.size() == 2) {
      pairs.push_back({static_cast<std::uint16_t>(route_lids[0]),
                       static_cast<std::uint16_t>(route_lids[1])});
    } else if (!route_lids.empty()) {
      std::cerr << "route wants SRC and DST\n";
      return 2;
    }
    std::string perror;
    if (!pairs_file.empty() && !ReadPairs(pairs_file, &pairs, &perror)) {
      std::cerr << perror << "\n";
      return 2;
    }
    if (pairs.empty()) {
      std::cerr << "route wants SRC DST or --pairs-file\n";
      return 2;
    }
  }
  const auto shard = ParseShard(shard_text);
  if (!shard) {
    std::cerr << "bad --shard " << shard_text << "\n";
    return 2;
  }
  std::string error;
  std::vector<LocalPort> ports;
  LocalPort local;
  // In process, behind the broker's allow-list (mad_cli.h says why).
  auto transport = OpenOperatorMad(mad_cli, &local, &error, &ports);
  if (!transport) {
    std::cerr << error << "\n";
    if (local.ca.empty()) {
      for (const LocalPort& p : ports) {
        std::cerr << "  " << p.ca << " port " << p.port << " state " << p.state
                  << " link_layer " << p.link_layer << "\n";
      }
    }
    return 1;
  }
  const MadOptions options = mad_cli.Options();
  if (*route) return TraceRoutes(*transport, options, pairs, lid_routed);
  std::printf("local %s %d lid %u sm_lid %u\n", local.ca.c_str(), local.port,
              local.lid, local.sm_lid);

  auto print_sm = [&](std::uint16_t lid) {
    const MadResult r =
        transport->Send({.dlid = lid, .mad = SmpGet(kAttrSmInfo, 0)}, options);
    if (!r.ok()) {
      std::printf("sm lid %u error %s\n", lid, r.error().message().c_str());
      return;
    }
    const auto si = DecodeSmInfo(*r, &error);
    if (!si) {
      std::printf("sm lid %u error %s\n", lid, error.c_str());
      return;
    }
    std::printf("sm lid %u guid %s priority %d state %d act_count %u\n", lid,
                GuidString(si->guid).c_str(), si->priority, si->state,
                si->act_count);
  };
  if (sm_only) {
    print_sm(local.sm_lid);
    return 0;
  }
  const Topology topo = Discover(*transport, options);
  PrintStats("discovery", topo.stats, topo.unreachable);
  for (const auto& e : topo.errors) std::printf("error %s\n", e.c_str());
  for (const FabricNode& n : topo.nodes) {
    std::printf("node %s type %d lid %u ports %d \"%s\"\n",
                GuidString(n.guid).c_str(), n.type, n.lid, n.num_ports,
                n.description.c_str());
    for (const auto& [num, p] : n.ports) {
      if (p.remote_guid == 0) continue;
      std::printf("link %s %d %s %d\n", GuidString(n.guid).c_str(), num,
                  GuidString(p.remote_guid).c_str(), p.remote_port);
    }
  }
  for (std::uint16_t lid : topo.SmLids()) print_sm(lid);
  const SweepResult sweep = Sweep(*transport, topo, *shard, options);
  PrintStats("sweep", sweep.stats, sweep.unreachable);
  for (const auto& e : sweep.errors) std::printf("error %s\n", e.c_str());
  for (const SwitchSample& s : sweep.switches) {
    std::printf("switch %s lid %u \"%s\"\n", GuidString(s.guid).c_str(), s.lid,
                s.description.c_str());
    for (const SwitchPortSample& p : s.ports) {
      std::printf("port %s %d", GuidString(s.guid).c_str(), p.num);
      if (p.info) {
        std::printf(" state %d phys %d", p.info->state, p.info->phys_state);
      }
      if (p.extended) {
        std::printf(
            " xmit_data %llu rcv_data %llu xmit_pkts %llu rcv_pkts "
            "%llu",
            static_cast<unsigned long long>(p.extended->xmit_data),
            static_cast<unsigned long long>(p.extended->rcv_data),
            static_cast<unsigned long long>(p.extended->xmit_pkts),
            static_cast<unsigned long long>(p.extended->rcv_pkts));
      }
      if (p.xmit_wait) {
        std::printf(" xmit_wait %llu",
                    static_cast<unsigned long long>(p.xmit_wait->ticks));
      }
      if (p.counters) {
        for (const auto& [name, v] : p.counters->errors) {
          std::printf(" %s %llu", name.c_str(),
                      static_cast<unsigned long long>(v));
        }
      }
      std::printf("\n");
    }
  }
  return 0;
}
