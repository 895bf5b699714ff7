// fabricmon-locate (docs/locate.md): from the probe pairs that lost
// packets or waited in a window to the link their paths share. Asks
// Prometheus for the pairs and their ports, traces the bad pairs' paths
// (and good ones', to clear links) over the switches' LFTs, votes as 007
// does, and joins the top links' switch counters. An operator's tool, run
// where the fabric sweep runs: it opens umad in process, behind the MAD
// broker's allow-list, as fabricmon-mad does (or asks fabricmon-sim's MAD
// socket with --sim-mad-socket). --link SWITCH_GUID:PORT answers the other
// way round: the destinations routed out of that port (locate/link.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "locate/counters.h"
#include "locate/link.h"
#include "locate/pairs.h"
#include "locate/prometheus.h"
#include "locate/report.h"
#include "locate/run.h"
#include "locate/score.h"
#include "simulator/mad_socket.h"
#include "sources/mad/discovery.h"
#include "sources/mad/mad_cli.h"
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

// The MADs' way out: the local umad port behind the broker's allow-list,
// or fabricmon-sim's MAD socket (the simulated fabric). nullptr with *error.
std::unique_ptr<MadTransport> OpenFabric(const mad::MadCli& cli,
                                         const std::string& sim_socket,
                                         const std::string& sim_port_guid,
                                         std::string* error) {
  if (!sim_socket.empty()) {
    std::uint64_t guid = 0;
    try {
      guid = std::stoull(sim_port_guid, nullptr, 16);
    } catch (const std::exception&) {
      *error = "--sim-port-guid wants the local port GUID in hex";
      return nullptr;
    }
    return sim::ConnectMadSocket(sim_socket, guid, error);
  }
  mad::LocalPort local;
  return mad::OpenOperatorMad(cli, &local, error);
}

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
  LocateOptions lo;
  bool json = false;
  std::string link_text, sim_socket, sim_port_guid;
  mad::MadCli mad_cli;
  app.add_option("--prometheus", url,
                 "Prometheus or VictoriaMetrics base URL (http[s]://...); "
                 "optional with --link");
  app.add_option("--window", window, "PromQL duration to judge (30m)");
  app.add_option("--baseline", baseline,
                 "a pair's usual RTT: the mean over this range before the "
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
  Prometheus::Bounds bounds;
  std::size_t max_answer_mb = bounds.max_bytes >> 20;
  app.add_option("--max-answer-mb", max_answer_mb,
                 "largest Prometheus answer read, MiB (64)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-series", bounds.max_series,
                 "most series read from one answer (250000)")
      ->check(CLI::Range(1, 100000000));
  app.add_option("--loss-ratio", thresholds.loss_ratio,
                 "a pair losing more than this is bad (0.01)");
  app.add_option("--rtt-excess-ratio", thresholds.rtt_excess_ratio,
                 "bad when the RTT exceeds the baseline by this ratio (1.0)");
  app.add_option("--rtt-excess-floor-us", rtt_floor_us,
                 "... and by at least this (50 us)");
  app.add_option("--min-probes", thresholds.min_probes,
                 "fewer probes in the window: no verdict (10)");
  app.add_option("--top", lo.top, "links to show (10)");
  app.add_option("--max-good-pairs", lo.max_good,
                 "good pairs traced to clear links (2000)");
  app.add_option("--clear-min-good", lo.clear_min_good,
                 "good pairs that clear a link with no bad one (1)");
  app.add_option("--link", link_text,
                 "SWITCH_GUID:PORT: the destinations routed out of that port "
                 "and their traffic, instead of ranking links");
  app.add_flag("--json", json, "JSON for tools instead of the table");
  mad_cli.AddTo(app);
  app.add_option("--sim-mad-socket", sim_socket,
                 "ask fabricmon-sim's MAD socket instead of umad");
  app.add_option("--sim-port-guid", sim_port_guid,
                 "with --sim-mad-socket: the local port GUID (hex)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  }
  lo.mad = mad_cli.Options();
  thresholds.rtt_excess_floor_seconds = rtt_floor_us * 1e-6;
  std::string error;
  std::optional<LinkSpec> link;
  if (!link_text.empty()) {
    link = ParseLinkSpec(link_text, &error);
    if (!link) return Fail(kUsage, error);
  }
  if (url.empty() && !link) return Fail(kUsage, "--prometheus is required");
  std::optional<PromUrl> purl;
  if (!url.empty()) {
    purl = ParseUrl(url, &error);
    if (!purl) return Fail(kUsage, "--prometheus: " + error);
  }
  if (!password_file.empty()) {
    auth.password = ReadSecret(password_file, &error);
    if (!error.empty()) return Fail(kUsage, error);
  }
  if (lo.top < 1 || lo.max_good < 0 || lo.clear_min_good < 1) {
    return Fail(kUsage, "--top and --clear-min-good want >= 1");
  }
  std::optional<Prometheus> prom;
  if (purl) {
    bounds.max_bytes = max_answer_mb << 20;
    prom.emplace(*purl, auth, std::chrono::milliseconds(query_timeout_ms),
                 bounds);
  }
  // One evaluation time for every query, so they see the same window.
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  auto query = [&](const std::string& promql,
                   std::vector<PromSample>* out) -> int {
    QueryError kind;
    auto r = prom->Query(promql, now, &kind, &error);
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
  std::vector<ProbePair> pairs;
  if (prom) {
    const PairQueries q = MakePairQueries(window, baseline);
    // One answer's samples at a time, folded into one row per pair
    // (docs/locate.md, "Memory").
    using A = PairJoin::Answer;
    PairJoin join;
    for (auto [promql, which] : {std::pair{&q.sent, A::kSent},
                                 {&q.lost, A::kLost},
                                 {&q.rtt, A::kRtt},
                                 {&q.baseline, A::kBaseline},
                                 {&q.info, A::kInfo},
                                 {&q.path, A::kPath}}) {
      std::vector<PromSample> answer;
      if (int rc = query(*promql, &answer)) return rc;
      join.Add(which, answer);
    }
    if (!join.HasSent() && !link) {
      return Fail(kNoProbeData, "no probe data in the last " + window +
                                    " (fabric_probe_sent_total has no series)");
    }
    pairs = join.Join(thresholds);
  }

  if (link) {
    // --link: the LFT answers; the window's series join what exists.
    LinkReport lr;
    lr.window = window;
    lr.queried = prom.has_value();
    const LinkQueries lq = MakeLinkQueries(window, *link);
    std::vector<PromSample> xmit, wait, lids, rcv;
    if (prom) {
      for (auto [promql, out] : {std::pair{&lq.xmit_bytes, &xmit},
                                 {&lq.xmit_wait, &wait},
                                 {&lq.host_lids, &lids},
                                 {&lq.host_rcv_bytes, &rcv}}) {
        if (int rc = query(*promql, out)) return rc;
      }
    }
    auto transport = OpenFabric(mad_cli, sim_socket, sim_port_guid, &error);
    if (!transport) return Fail(kFabricFailed, error);
    FabricCost cost;
    const bool ok =
        LocateLink(*transport, lo.mad, *link, pairs, &lr, &cost, &error);
    std::fprintf(stderr, "stats locate %s\n", cost.Text().c_str());
    if (!ok) return Fail(kFabricFailed, error);
    lr.xmit_bytes = SumOf(xmit);
    lr.xmit_wait = SumOf(wait);
    JoinHostTraffic(lids, rcv, &lr.destinations);
    std::fputs((json ? FormatLinkJson(lr) : FormatLinkTable(lr)).c_str(),
               stdout);
    return kLocated;
  }

  Report report;
  report.window = window;
  CountVerdicts(pairs, &report);
  if (report.bad == 0) {
    std::fputs((json ? FormatJson(report) : FormatTable(report)).c_str(),
               stdout);
    return Fail(kNoBadPair,
                "no pair is bad in the last " + window + ": nothing to locate");
  }

  // (2)-(3) The fabric, the paths and the vote. Only IP-routed (RoCE) bad
  // pairs: their traced paths are enough, no MAD.
  std::unique_ptr<MadTransport> transport;
  if (NeedsFabric(pairs)) {
    transport = OpenFabric(mad_cli, sim_socket, sim_port_guid, &error);
    if (!transport) return Fail(kFabricFailed, error);
  }
  report = Report();
  report.window = window;
  mad::Topology topo;
  FabricCost cost;
  LocateLinks(transport.get(), lo, pairs, &report, &topo, &cost);
  std::fprintf(stderr, "stats locate %s\n", report.trace_stats.c_str());

  // (4) The top links' counters; a failure here costs the counters only.
  std::set<std::uint64_t> switches;
  for (const RankedLink& r : report.ranked) {
    for (const LinkEnd* end : {&r.score.link.a, &r.score.link.b}) {
      const mad::FabricNode* n = topo.Find(end->guid);
      if (n && n->type == 2) switches.insert(end->guid);
    }
  }
  if (!switches.empty()) {
    std::map<LinkEnd, PortCounters> counters;
    for (const CounterQuery& cq :
         MakeCounterQueries(window, {switches.begin(), switches.end()})) {
      QueryError kind;
      const auto r = prom->Query(cq.promql, now, &kind, &error);
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

  // (4b) The jobs on the hosts of each top link's bad pairs: one query for
  // the fleet's jobs; a failure costs the jobs only.
  std::set<std::string> hosts;
  for (const RankedLink& r : report.ranked) {
    hosts.insert(r.score.hosts.begin(), r.score.hosts.end());
  }
  if (!hosts.empty()) {
    QueryError kind;
    if (const auto jobs = prom->Query(kJobsQuery, now, &kind, &error)) {
      for (RankedLink& r : report.ranked)
        r.jobs = JobsOnHosts(*jobs, r.score.hosts);
    } else {
      std::cerr << "fabricmon-locate: jobs: " << error << "\n";
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
