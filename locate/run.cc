#include "locate/run.h"

#include <algorithm>
#include <map>
#include <set>

#include "locate/jobs.h"
#include "locate/trace.h"
#include "sources/mad/routes.h"

namespace fabric::locate {

namespace {

// A bad pair's hosts, whose jobs the links it crosses hurt.
std::vector<std::string> PairHosts(const ProbePair& p) {
  std::vector<std::string> out;
  for (std::string h : {ProberHost(p.prober), HostOf(p.peer)}) {
    if (!h.empty()) out.push_back(std::move(h));
  }
  return out;
}

void AddCost(const mad::Topology& topo, const mad::RouteTracer& tracer,
             FabricCost* cost) {
  cost->discovery_mads =
      topo.stats.ok + topo.stats.timeouts + topo.stats.errors;
  const mad::RouteStats& rs = tracer.stats();
  cost->switch_info = rs.switch_info_reads;
  cost->lft_blocks = rs.lft_block_reads;
  cost->failed = rs.failed_reads;
}

// The node and port owning each listed LID (LMC ranges included).
void OwnLids(const mad::Topology& topo, std::vector<LinkDestination>* dests) {
  std::map<std::uint16_t, LinkDestination*> by_lid;
  for (LinkDestination& d : *dests) by_lid[d.lid] = &d;
  for (const mad::FabricNode& n : topo.nodes) {
    for (const auto& [num, p] : n.ports) {
      const std::uint16_t base = n.type == 2 ? n.lid : p.lid;
      if ((n.type == 2 && num != 0) || base == 0) continue;
      const int count = 1 << std::clamp(p.lmc, 0, 7);
      for (auto it = by_lid.lower_bound(base);
           it != by_lid.end() && it->first < base + count; ++it) {
        LinkDestination& d = *it->second;
        d.name = n.description;
        d.node_guid = n.guid;
        d.port = num;
        d.type = n.type;
      }
    }
  }
}

// Why the fabric is unknown, "" when discovery reached it: a local port
// whose own NodeInfo went unanswered would otherwise read as "no such
// switch" or "LID not found".
std::string DiscoveryFailure(const mad::Topology& topo) {
  if (!topo.nodes.empty()) return "";
  return "discovery reached no node: the local port's NodeInfo got no "
         "answer (" +
         std::to_string(topo.stats.timeouts) + " timeouts, " +
         std::to_string(topo.stats.errors) +
         " errors; a larger --mad-timeout-ms?)";
}

// The vote over every traced path, the top links named from the topology
// (IP-level links by their addresses, in the report).
void Rank(const std::vector<PathObservation>& observations,
          const LocateOptions& options, const mad::Topology& topology,
          Report* report) {
  ScoreOptions so;
  so.clear_min_good = options.clear_min_good;
  const Scores scores = ScoreLinks(observations, so);
  report->cleared = static_cast<int>(scores.cleared.size());
  for (const LinkScore& s : scores.ranked) {
    if (static_cast<int>(report->ranked.size()) >= options.top) break;
    RankedLink r;
    r.score = s;
    for (auto [end, name] :
         {std::pair{&s.link.a, &r.a_name}, {&s.link.b, &r.b_name}}) {
      if (!end->ip.empty()) continue;
      if (const mad::FabricNode* n = topology.Find(end->guid)) {
        *name = n->description;
      }
    }
    report->ranked.push_back(std::move(r));
  }
}

}  // namespace

std::string FabricCost::Text() const {
  return "discovery_mads " + std::to_string(discovery_mads) + " switch_info " +
         std::to_string(switch_info) + " lft_blocks " +
         std::to_string(lft_blocks) + " failed " + std::to_string(failed);
}

void CountVerdicts(const std::vector<ProbePair>& pairs, Report* report) {
  report->pairs = static_cast<int>(pairs.size());
  for (const ProbePair& p : pairs) {
    switch (p.verdict.verdict) {
      case Verdict::kBad:
        ++report->bad;
        break;
      case Verdict::kGood:
        ++report->good;
        break;
      case Verdict::kUnknown:
        ++report->unknown;
        break;
    }
  }
}

bool NeedsFabric(const std::vector<ProbePair>& pairs) {
  return std::any_of(pairs.begin(), pairs.end(), [](const ProbePair& p) {
    return p.mapped && p.verdict.verdict == Verdict::kBad;
  });
}

void LocateLinks(MadTransport* transport, const LocateOptions& options,
                 const std::vector<ProbePair>& pairs, Report* report,
                 mad::Topology* topology, FabricCost* cost) {
  CountVerdicts(pairs, report);
  std::vector<const ProbePair*> bad, good;
  // IP-routed pairs vote on their traced links: no MAD needed.
  std::vector<PathObservation> observations;
  int ip_good = 0;
  for (const ProbePair& p : pairs) {
    if (p.mapped || p.ip_links.empty() ||
        p.verdict.verdict == Verdict::kUnknown) {
      continue;
    }
    const bool is_bad = p.verdict.verdict == Verdict::kBad;
    if (!is_bad && ip_good >= options.max_good) continue;
    ++(is_bad ? report->bad_traced : report->good_traced);
    ip_good += is_bad ? 0 : 1;
    observations.push_back(
        {p.verdict.verdict, p.ip_links,
         is_bad ? PairHosts(p) : std::vector<std::string>{}});
  }
  for (const ProbePair& p : pairs) {
    if (p.verdict.verdict == Verdict::kBad) {
      if (p.mapped) {
        bad.push_back(&p);
      } else if (p.ip_links.empty()) {
        report->unplaced.push_back(
            {p.prober, p.peer, p.verdict.reason, p.unmapped_reason});
      }
    } else if (p.verdict.verdict == Verdict::kGood && p.mapped &&
               static_cast<int>(good.size()) < options.max_good) {
      good.push_back(&p);
    }
  }
  if (bad.empty() || !transport) {
    // Nothing to trace over LFTs (no MAD sent): the IP pairs' vote alone.
    if (!transport) report->trace_stats = "no MAD (IP paths only)";
    Rank(observations, options, *topology, report);
    return;
  }
  *topology = mad::Discover(*transport, options.mad);
  if (const std::string why = DiscoveryFailure(*topology); !why.empty()) {
    for (const ProbePair* p : bad) {
      report->unplaced.push_back({p->prober, p->peer, p->verdict.reason, why});
    }
    AddCost(*topology, mad::RouteTracer(*transport, options.mad), cost);
    report->trace_stats = cost->Text();
    Rank(observations, options, *topology, report);
    return;
  }
  mad::RouteTracer tracer(*transport, options.mad);
  tracer.SetTopology(topology);
  std::vector<mad::RoutePair> route_pairs;
  for (const auto* list : {&bad, &good}) {
    for (const ProbePair* p : *list) {
      route_pairs.push_back({p->src_lid, p->dst_lid});
    }
  }
  const std::vector<PairPath> paths = TraceBothWays(tracer, route_pairs);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const bool is_bad = i < bad.size();
    if (!paths[i].ok()) {
      // A pair with no path is listed, never voted on partial links: a
      // half-traced path would blame the links before the failure.
      if (is_bad) {
        report->unplaced.push_back({bad[i]->prober, bad[i]->peer,
                                    bad[i]->verdict.reason, paths[i].error});
      }
      continue;
    }
    ++(is_bad ? report->bad_traced : report->good_traced);
    observations.push_back(
        {is_bad ? Verdict::kBad : Verdict::kGood, paths[i].links,
         is_bad ? PairHosts(*bad[i]) : std::vector<std::string>{}});
  }
  AddCost(*topology, tracer, cost);
  report->trace_stats = cost->Text();
  Rank(observations, options, *topology, report);
}

bool LocateLink(MadTransport& transport, const MadOptions& options,
                const LinkSpec& link, const std::vector<ProbePair>& pairs,
                LinkReport* report, FabricCost* cost, std::string* error) {
  const mad::Topology topo = mad::Discover(transport, options);
  mad::RouteTracer tracer(transport, options);
  tracer.SetTopology(&topo);
  report->link = link;
  if (std::string why = DiscoveryFailure(topo); !why.empty()) {
    AddCost(topo, tracer, cost);
    *error = std::move(why);
    return false;
  }
  const std::vector<std::uint16_t> lids =
      tracer.LidsOutOf(link.guid, link.port, error);
  AddCost(topo, tracer, cost);
  report->trace_stats = cost->Text();
  if (lids.empty() && !error->empty()) return false;
  const mad::FabricNode* sw = topo.Find(link.guid);
  report->switch_name = sw->description;
  if (auto p = sw->ports.find(link.port);
      p != sw->ports.end() && p->second.remote_guid != 0) {
    const mad::FabricNode* far = topo.Find(p->second.remote_guid);
    report->remote = "\"" + (far ? far->description : std::string()) + "\"[" +
                     std::to_string(p->second.remote_port) + "]";
  }
  report->destinations.clear();
  for (std::uint16_t lid : lids) {
    report->destinations.emplace_back();
    report->destinations.back().lid = lid;
  }
  OwnLids(topo, &report->destinations);
  // The pairs toward those LIDs whose route crosses the port: a route
  // toward a listed LID that never reaches this switch does not.
  const std::set<std::uint16_t> wanted(lids.begin(), lids.end());
  std::vector<const ProbePair*> toward;
  std::vector<mad::RoutePair> route_pairs;
  for (const ProbePair& p : pairs) {
    if (p.mapped && wanted.count(p.dst_lid)) {
      toward.push_back(&p);
      route_pairs.push_back({p.src_lid, p.dst_lid});
    }
  }
  const std::vector<mad::TraceResult> routes = tracer.TraceAll(route_pairs);
  for (std::size_t i = 0; i < routes.size(); ++i) {
    const auto& hops = routes[i].route.hops;
    for (std::size_t h = 1; h < hops.size(); ++h) {
      if (hops[h - 1].node_guid == link.guid && hops[h].out_port == link.port) {
        AddCrossingPair(*toward[i], &report->destinations);
        break;
      }
    }
  }
  AddCost(topo, tracer, cost);
  report->trace_stats = cost->Text();
  return true;
}

}  // namespace fabric::locate
