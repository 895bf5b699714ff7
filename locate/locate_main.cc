// fabricmon-locate (docs/locate.md): from the probe pairs that lost
// packets or waited in a window to the link their paths share. Asks
// Prometheus for the pairs and their ports, traces the bad pairs' paths
// (and good ones', to clear links) over the switches' LFTs, votes as 007
// does, and joins the top links' switch counters. An operator's tool, run
// where the fabric sweep runs: it opens umad in process, behind the MAD
// broker's allow-list, as fabricmon-mad does.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "locate/counters.h"
#include "locate/pairs.h"
#include "locate/prometheus.h"
#include "locate/report.h"
#include "locate/score.h"
#include "locate/trace.h"
#include "sources/mad/discovery.h"
#include "sources/mad/mad_cli.h"
#include "sources/mad/routes.h"
#include "sources/mad/umad_transport.h"

using namespace fabric;
using namespace fabric::locate;

namespace {

// Exit statuses (docs/locate.md).
enum Exit {
  kLocated = 0,
  kUsage = 2,
  kPrometheusFailed = 3,  // unreachable, HTTP error, not a query answer
  kNoProbeData = 4,       // the window holds no probe series
  kNoBadPair = 5,         // nothing to locate
  kFabricFailed = 6,      // no local IB port, or no bad pair traced
  kSomeUnplaced = 7,      // ranked, but some bad pairs have no path
};

int Fail(int status, const std::string& message) {
  std::cerr << "fabricmon-locate: " << message << "\n";
  return status;
}

std::string ReadSecret(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return "";
  }
  std::stringstream s;
  s << in.rdbuf();
  std::string v = s.str();
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fabricmon-locate: the link behind the probe pairs that lose "
      "packets or wait"};
  std::string url, window = "30m", baseline = "1d";
  PromAuth auth;
  std::string password_file;
  int query_timeout_ms = 30000;
  Thresholds thresholds;
  double rtt_floor_us = thresholds.rtt_excess_floor_seconds * 1e6;
  int top = 10, max_good = 2000, clear_min_good = 1;
  bool json = false;
  mad::MadCli mad_cli;
  app.add_option("--prometheus", url,
                 "Prometheus or VictoriaMetrics base URL (http[s]://...)")
      ->required();
  app.add_option("--window", window, "PromQL duration to judge (30m)");
  app.add_option("--baseline", baseline,
                 "a pair's usual RTT: the median over this range before the "
                 "window (1d)");
  app.add_option("--basic-auth-user", auth.user);
  app.add_option("--basic-auth-password-file", password_file);
  app.add_option("--tls-ca-file", auth.ca_file,
                 "verify the server against this CA");
  app.add_option("--tls-cert-file", auth.cert_file, "client certificate");
  app.add_option("--tls-key-file", auth.key_file, "client key");
  app.add_option("--tls-server-name", auth.server_name,
                 "the name to verify (default: the URL's host)");
  app.add_flag("--tls-insecure-skip-verify", auth.insecure_skip_verify);
  app.add_option("--query-timeout-ms", query_timeout_ms);
  app.add_option("--loss-ratio", thresholds.loss_ratio,
                 "a pair losing more than this is bad (0.01)");
  app.add_option("--rtt-excess-ratio", thresholds.rtt_excess_ratio,
                 "bad when the RTT exceeds the baseline by this ratio (1.0)");
  app.add_option("--rtt-excess-floor-us", rtt_floor_us,
                 "... and by at least this (50 us)");
  app.add_option("--min-probes", thresholds.min_probes,
                 "fewer probes in the window: no verdict (10)");
  app.add_option("--top", top, "links to show (10)");
  app.add_option("--max-good-pairs", max_good,
                 "good pairs traced to clear links (2000)");
  app.add_option("--clear-min-good", clear_min_good,
                 "good pairs that clear a link with no bad one (1)");
  app.add_flag("--json", json, "JSON for tools instead of the table");
  mad_cli.AddTo(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  }
  thresholds.rtt_excess_floor_seconds = rtt_floor_us * 1e-6;
  std::string error;
  const auto purl = ParseUrl(url, &error);
  if (!purl) return Fail(kUsage, "--prometheus: " + error);
  if (!password_file.empty()) {
    auth.password = ReadSecret(password_file, &error);
    if (!error.empty()) return Fail(kUsage, error);
  }
  if (top < 1 || max_good < 0 || clear_min_good < 1) {
    return Fail(kUsage, "--top and --clear-min-good want >= 1");
  }
  const Prometheus prom(*purl, auth,
                        std::chrono::milliseconds(query_timeout_ms));
  // One evaluation time for every query, so they see the same window.
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  auto query = [&](const std::string& promql,
                   std::vector<PromSample>* out) -> int {
    QueryError kind;
    auto r = prom.Query(promql, now, &kind, &error);
    if (!r) {
      return Fail(kPrometheusFailed,
                  (kind == QueryError::kUnreachable ? "Prometheus unreachable: "
                                                    : "Prometheus: ") +
                      error);
    }
    *out = std::move(*r);
    return 0;
  };

  // (1) The pairs and their verdicts.
  const PairQueries q = MakePairQueries(window, baseline);
  PairAnswers answers;
  for (auto [promql, out] : {std::pair{&q.sent, &answers.sent},
                             {&q.lost, &answers.lost},
                             {&q.rtt, &answers.rtt},
                             {&q.baseline, &answers.baseline},
                             {&q.info, &answers.info}}) {
    if (int rc = query(*promql, out)) return rc;
  }
  if (answers.sent.empty()) {
    return Fail(kNoProbeData, "no probe data in the last " + window +
                                  " (fabric_probe_sent_total has no series)");
  }
  const std::vector<ProbePair> pairs = JoinPairs(answers, thresholds);
  Report report;
  report.window = window;
  report.pairs = static_cast<int>(pairs.size());
  std::vector<const ProbePair*> bad, good;
  for (const ProbePair& p : pairs) {
    switch (p.verdict.verdict) {
      case Verdict::kBad:
        ++report.bad;
        if (p.mapped) {
          bad.push_back(&p);
        } else {
          report.unplaced.push_back(
              {p.prober, p.peer, p.verdict.reason, p.unmapped_reason});
        }
        break;
      case Verdict::kGood:
        ++report.good;
        if (p.mapped && static_cast<int>(good.size()) < max_good) {
          good.push_back(&p);
        }
        break;
      case Verdict::kUnknown:
        ++report.unknown;
        break;
    }
  }
  if (report.bad == 0) {
    std::fputs((json ? FormatJson(report) : FormatTable(report)).c_str(),
               stdout);
    return Fail(kNoBadPair,
                "no pair is bad in the last " + window + ": nothing to locate");
  }

  // (2) The fabric and the paths.
  mad::LocalPort local;
  auto transport = mad::OpenOperatorMad(mad_cli, &local, &error);
  if (!transport) return Fail(kFabricFailed, error);
  const MadOptions options = mad_cli.Options();
  const mad::Topology topo = mad::Discover(*transport, options);
  mad::RouteTracer tracer(*transport, options);
  tracer.SetTopology(&topo);
  std::vector<mad::RoutePair> route_pairs;
  for (const auto* list : {&bad, &good}) {
    for (const ProbePair* p : *list) {
      route_pairs.push_back({p->src_lid, p->dst_lid});
    }
  }
  const std::vector<PairPath> paths = TraceBothWays(tracer, route_pairs);
  std::vector<PathObservation> observations;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const bool is_bad = i < bad.size();
    if (!paths[i].ok()) {
      if (is_bad) {
        report.unplaced.push_back({bad[i]->prober, bad[i]->peer,
                                   bad[i]->verdict.reason, paths[i].error});
      }
      continue;
    }
    ++(is_bad ? report.bad_traced : report.good_traced);
    observations.push_back(
        {is_bad ? Verdict::kBad : Verdict::kGood, paths[i].links});
  }
  const mad::RouteStats& rs = tracer.stats();
  report.trace_stats =
      "discovery_mads " +
      std::to_string(topo.stats.ok + topo.stats.timeouts + topo.stats.errors) +
      " switch_info " + std::to_string(rs.switch_info_reads) + " lft_blocks " +
      std::to_string(rs.lft_block_reads) + " failed " +
      std::to_string(rs.failed_reads);
  std::fprintf(stderr, "stats locate %s\n", report.trace_stats.c_str());

  // (3) The vote.
  ScoreOptions so;
  so.clear_min_good = clear_min_good;
  const Scores scores = ScoreLinks(observations, so);
  report.cleared = static_cast<int>(scores.cleared.size());
  std::set<std::uint64_t> switches;
  for (const LinkScore& s : scores.ranked) {
    if (static_cast<int>(report.ranked.size()) >= top) break;
    RankedLink r;
    r.score = s;
    for (auto [end, name] :
         {std::pair{&s.link.a, &r.a_name}, {&s.link.b, &r.b_name}}) {
      if (const mad::FabricNode* n = topo.Find(end->guid)) {
        *name = n->description;
        if (n->type == 2) switches.insert(end->guid);
      }
    }
    report.ranked.push_back(std::move(r));
  }

  // (4) The top links' counters; a failure here costs the counters only.
  if (!switches.empty()) {
    std::map<LinkEnd, PortCounters> counters;
    for (const CounterQuery& cq :
         MakeCounterQueries(window, {switches.begin(), switches.end()})) {
      QueryError kind;
      const auto r = prom.Query(cq.promql, now, &kind, &error);
      if (!r) {
        std::cerr << "fabricmon-locate: counters: " << error << "\n";
        continue;
      }
      JoinCounters(cq, *r, &counters);
    }
    for (RankedLink& r : report.ranked) {
      if (auto it = counters.find(r.score.link.a); it != counters.end()) {
        r.a_counters = it->second;
      }
      if (auto it = counters.find(r.score.link.b); it != counters.end()) {
        r.b_counters = it->second;
      }
    }
  }

  // (5) The report.
  std::fputs((json ? FormatJson(report) : FormatTable(report)).c_str(), stdout);
  if (report.bad_traced == 0) {
    return Fail(kFabricFailed, "no bad pair could be traced");
  }
  if (!report.unplaced.empty()) {
    return Fail(kSomeUnplaced, std::to_string(report.unplaced.size()) +
                                   " bad pairs could not be placed on a path "
                                   "(listed above)");
  }
  return kLocated;
}
