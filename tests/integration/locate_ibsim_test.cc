// fabricmon-locate end to end on ibsim with a real OpenSM and a real
// Prometheus: the pairs whose route crosses one chosen leaf-spine link
// lose packets, and the locator names that link first.
//
// The probe series are SYNTHESIZED, not measured: ibsim simulates MADs
// only (no data path), so no probe can run over it. The test writes what
// probe daemons on every HCA would have exported over the last ten minutes
// (fabric_probe_sent_total, _lost_total, the network-RTT histogram and
// fabric_probe_pair_info naming each HCA's LID as OpenSM assigned it) as
// OpenMetrics, loads it with `promtool tsdb create-blocks-from openmetrics`
// (the simplest real path: Prometheus then answers the window's queries at
// once, no scrapes to wait for) and serves it from a real Prometheus on
// loopback. Which pairs lose is decided with the real `ibtracert` (the
// oracle), not with fabricmon's tracer; the locator traces with its own.
// locate_probe_ibsim_test.cc does the same with real probe daemons; this
// one keeps what needs history (ten minutes) and --link's traffic join.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kSwitches = 8;  // 2 spines, 6 leaves
constexpr int kHcas = 12;

using Crossing = TracertHop;

class LocateIbsim : public ::testing::Test {
 protected:
  LocateIbsim() : fabric_(FatTreeNetfile(kSwitches, kHcas)) {}

  void SetUp() override {
    FABRIC_START_IBSIM(fabric_);
    if (access("/usr/bin/prometheus", X_OK) != 0 ||
        access("/usr/bin/promtool", X_OK) != 0) {
      MISSING_DEPENDENCY("prometheus and promtool (Debian prometheus)");
    }
    fabric_.StartOpenSm({.sim_host = "hca0", .priority = 7});
    ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca1"));
  }

  void TearDown() override {
    if (prometheus_ > 0) fabric_.StopClient(prometheus_);
  }

  std::map<std::string, int> HcaLids() {
    const ToolOutput d = fabric_.Run({Binary("fabricmon-mad")}, "hca1");
    std::map<std::string, int> lids;
    const std::regex re(
        R"re(^node 0x[0-9a-f]+ type 1 lid (\d+) ports \d+ "(hca\d+)"$)re");
    std::istringstream in(d.out);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, re)) lids[m[2]] = std::stoi(m[1]);
    }
    return lids;
  }

  // The cables ibtracert's route SRC -> DST crosses (asked once per pair).
  std::vector<Crossing> Route(int src, int dst) {
    auto& cached = routes_[{src, dst}];
    if (cached.empty()) cached = Ibtracert(src, dst);
    return cached;
  }
  std::vector<Crossing> Ibtracert(int src, int dst) {
    return ParseIbtracert(
        fabric_
            .Run({"ibtracert", std::to_string(src), std::to_string(dst)},
                 "hca1")
            .out);
  }

  // Switch name -> (node GUID, LID), from `fabricmon-mad` discovery.
  std::map<std::string, std::pair<std::string, int>> Switches() {
    const ToolOutput d = fabric_.Run({Binary("fabricmon-mad")}, "hca1");
    std::map<std::string, std::pair<std::string, int>> out;
    const std::regex re(
        R"re(^node (0x[0-9a-f]+) type 2 lid (\d+) ports \d+ "(.*)"$)re");
    std::istringstream in(d.out);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, re)) out[m[3]] = {m[1], std::stoi(m[2])};
    }
    return out;
  }

  // The oracle: the LIDs the real `ibroute` lists with out port `port` in
  // the LFT of the switch at `lid`.
  std::set<int> IbrouteLids(int lid, int port) {
    const ToolOutput r = fabric_.Run({"ibroute", std::to_string(lid)}, "hca1");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<int> out;
    const std::regex re(R"re(^0x([0-9a-f]+) (\d+) : .*)re");
    std::istringstream in(r.out);
    std::string line;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, re) && std::stoi(m[2]) == port) {
        out.insert(std::stoi(m[1], nullptr, 16));
      }
    }
    return out;
  }

  // `fabricmon-locate --link GUID:PORT --json` (extra arguments after).
  nlohmann::json Link(const std::string& guid, int port,
                      std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {Binary("fabricmon-locate"), "--link",
                                     guid + ":" + std::to_string(port),
                                     "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const ToolOutput r = fabric_.Run(argv, "hca1");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  static std::set<int> LidsOf(const nlohmann::json& j) {
    std::set<int> out;
    if (j.is_object() && j["destinations"].is_array()) {
      for (const auto& d : j["destinations"]) out.insert(d["lid"].get<int>());
    }
    return out;
  }

  IbsimFabric fabric_;
  pid_t prometheus_ = -1;
  std::map<std::pair<int, int>, std::vector<Crossing>> routes_;
};

TEST_F(LocateIbsim, LinkListsExactlyTheLidsTheLftSendsOutOfThePort) {
  const auto switches = Switches();
  ASSERT_EQ(switches.size(), static_cast<std::size_t>(kSwitches));
  const std::map<std::string, int> hcas = HcaLids();
  // Every port of a leaf (host ports and uplinks) and of a spine (down to
  // every leaf), against ibroute's dump of the same table.
  int compared = 0, listed = 0;
  for (const auto& [name, ports] :
       {std::pair<std::string, int>{"leaf0", 4}, {"spine0", 6}}) {
    const auto& [guid, lid] = switches.at(name);
    for (int port = 1; port <= ports; ++port) {
      const std::set<int> want = IbrouteLids(lid, port);
      const nlohmann::json j = Link(guid, port);
      ASSERT_FALSE(j.is_discarded());
      EXPECT_EQ(LidsOf(j), want) << name << "[" << port << "]\n" << j.dump();
      ++compared;
      listed += static_cast<int>(want.size());
      // Each LID is named after the node that has it.
      for (const auto& d : j["destinations"]) {
        const std::string n = d["name"];
        if (n.rfind("hca", 0) == 0) EXPECT_EQ(hcas.at(n), d["lid"]) << n;
      }
    }
  }
  EXPECT_EQ(compared, 10);
  EXPECT_GT(listed, 0);
  // Bad input: no such switch, no such port, not a GUID:PORT.
  for (const std::string& bad :
       {std::string("0x1234:1"), switches.at("leaf0").first + ":99",
        std::string("x:1")}) {
    const ToolOutput r =
        fabric_.Run({Binary("fabricmon-locate"), "--link", bad}, "hca1");
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("fabricmon-locate: "), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(LocateIbsim, NamesTheLinkTheLossyPairsShare) {
  const std::map<std::string, int> lids = HcaLids();
  ASSERT_EQ(lids.size(), static_cast<std::size_t>(kHcas));
  // The chosen link: the leaf-spine uplink hca0's route to hca1 (another
  // leaf) leaves its leaf by.
  const std::vector<Crossing> r01 = Route(lids.at("hca0"), lids.at("hca1"));
  ASSERT_GE(r01.size(), 3u);
  const Crossing chosen = r01[1];  // leaf -> spine
  ASSERT_EQ(chosen.to.rfind("spine", 0), 0u) << chosen.to;
  auto crosses = [&](const std::vector<Crossing>& route) {
    for (const Crossing& c : route) {
      if ((c.from == chosen.from && c.out == chosen.out) ||
          (c.to == chosen.from && c.in == chosen.out)) {
        return true;
      }
    }
    return false;
  };
  // Every ordered pair: bad when either direction crosses the link.
  std::set<std::pair<std::string, std::string>> bad;
  for (const auto& [a, la] : lids) {
    for (const auto& [b, lb] : lids) {
      if (a < b && (crosses(Route(la, lb)) || crosses(Route(lb, la)))) {
        bad.insert({a, b});
        bad.insert({b, a});
      }
    }
  }
  ASSERT_GE(bad.size(), 4u);

  // Ten minutes of probe series, one sample every 15 s, ending now.
  const fs::path dir = fabric_.dir();
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  const double start = std::floor(now) - 600;
  std::ostringstream om;
  auto series = [&](const std::string& family, const std::string& type,
                    auto&& each) {
    om << "# TYPE " << family << " " << type << "\n";
    for (const auto& [a, la] : lids) {
      for (const auto& [b, lb] : lids) {
        if (a != b) each(a, la, b, lb);
      }
    }
    // One more lossy pair whose ports are unknown (no pair info: a peer
    // off the fabric): listed as not placed, never dropped.
    if (family != "fabric_probe_pair_info") {
      each(std::string("hca0"), 0, std::string("offfabric"), 0);
    }
  };
  auto labels = [](const std::string& a, const std::string& b) {
    return "instance=\"" + a + ":9100\",job=\"fabricmon\",peer=\"" + b +
           "\",transport=\"udp\"";
  };
  auto samples = [&](const std::string& name, const std::string& l,
                     auto&& value) {
    for (int i = 0; i <= 40; ++i) {
      char line[512];
      std::snprintf(line, sizeof(line), "%s{%s} %.6g %.3f\n", name.c_str(),
                    l.c_str(), value(i), start + 15.0 * i);
      om << line;
    }
  };
  series("fabric_probe_sent", "counter", [&](auto a, int, auto b, int) {
    samples("fabric_probe_sent_total", labels(a, b),
            [](int i) { return 150.0 * i; });
  });
  series("fabric_probe_lost", "counter", [&](auto a, int, auto b, int) {
    const bool lossy = bad.count({a, b}) > 0 || b == "offfabric";
    samples("fabric_probe_lost_total", labels(a, b),
            [lossy](int i) { return lossy ? 30.0 * i : 0.0; });
  });
  // A summary, as a pair exports it by default (no buckets): every
  // answered probe 8 us.
  series("fabric_probe_network_rtt_seconds", "summary",
         [&](auto a, int, auto b, int) {
           samples("fabric_probe_network_rtt_seconds_count", labels(a, b),
                   [](int i) { return 120.0 * i; });
           samples("fabric_probe_network_rtt_seconds_sum", labels(a, b),
                   [](int i) { return 120.0 * i * 8e-6; });
         });
  series("fabric_probe_pair_info", "gauge",
         [&](auto a, int la, auto b, int lb) {
           const std::string l = "instance=\"" + a +
                                 ":9100\",job=\"fabricmon\",peer=\"" + b +
                                 "\",local_lid=\"" + std::to_string(la) +
                                 "\",remote_lid=\"" + std::to_string(lb) + "\"";
           samples("fabric_probe_pair_info", l, [](int) { return 1.0; });
         });
  // Slurm jobs (the jobs collector's series): 4711 on both ends of the
  // first lossy pair, 900 on a host no lossy pair touches (when there is
  // one): the top link lists 4711 and never 900.
  std::set<std::string> lossy_hosts;
  for (const auto& [a, b] : bad) lossy_hosts.insert({a, b});
  std::string quiet_host;
  for (const auto& [h, lid] : lids) {
    if (!lossy_hosts.count(h)) quiet_host = h;
  }
  om << "# TYPE fabric_node_job_info gauge\n";
  auto job = [&](const std::string& host, const std::string& id,
                 const std::string& user) {
    samples("fabric_node_job_info",
            "instance=\"" + host + ":9100\",job=\"fabricmon\",host=\"" + host +
                "\",scheduler=\"slurm\",job_id=\"" + id + "\",user=\"" + user +
                "\",job_name=\"llama\"",
            [](int) { return 1.0; });
  };
  job("hca0", "4711", "alice");
  job("hca1", "4711", "alice");
  if (!quiet_host.empty()) job(quiet_host, "900", "bob");
  om << "# EOF\n";
  std::ofstream(dir / "probes.om") << om.str();
  const std::string data = (dir / "prometheus-data").string();
  const ToolOutput backfill =
      fabric_.Run({"/usr/bin/promtool", "tsdb", "create-blocks-from",
                   "openmetrics", (dir / "probes.om").string(), data});
  ASSERT_EQ(backfill.exit_code, 0) << backfill.out << backfill.err;
  std::ofstream(dir / "prometheus.yml") << "global:\n  scrape_interval: 1m\n";
  const int port = FreeLoopbackPort();
  prometheus_ = fabric_.StartClient(
      {"/usr/bin/prometheus",
       "--config.file=" + (dir / "prometheus.yml").string(),
       "--storage.tsdb.path=" + data,
       "--web.listen-address=127.0.0.1:" + std::to_string(port),
       "--log.level=warn"},
      "", (dir / "prometheus.log").string());
  ASSERT_GT(prometheus_, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        const auto r = HttpGet(port, "/-/ready");
        return r && r->status == 200;
      },
      std::chrono::seconds(60)));

  const ToolOutput locate = fabric_.Run(
      {Binary("fabricmon-locate"), "--prometheus",
       "http://127.0.0.1:" + std::to_string(port), "--window", "30m", "--json"},
      "hca1");
  // 7: ranked, with one bad pair that could not be placed (listed).
  ASSERT_EQ(locate.exit_code, 7) << locate.out << locate.err;
  const auto j = nlohmann::json::parse(locate.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << locate.out;
  EXPECT_EQ(j["pairs"]["bad"], static_cast<int>(bad.size()) + 1);
  EXPECT_EQ(j["pairs"]["bad_traced"], static_cast<int>(bad.size()));
  ASSERT_EQ(j["unplaced_bad_pairs"].size(), 1u) << locate.out;
  EXPECT_EQ(j["unplaced_bad_pairs"][0]["peer"], "offfabric");
  EXPECT_EQ(j["unplaced_bad_pairs"][0]["why"], "no fabric_probe_pair_info");
  EXPECT_NE(locate.err.find("1 bad pairs could not be placed"),
            std::string::npos)
      << locate.err;
  ASSERT_FALSE(j["links"].empty()) << locate.out;
  const auto& top = j["links"][0];
  std::set<std::pair<std::string, int>> ends = {
      {top["a"]["name"], top["a"]["port"]},
      {top["b"]["name"], top["b"]["port"]}};
  const std::set<std::pair<std::string, int>> want = {{chosen.from, chosen.out},
                                                      {chosen.to, chosen.in}};
  EXPECT_EQ(ends, want) << locate.out;
  // The jobs on the hosts of the lossy pairs crossing it (issue 43).
  ASSERT_EQ(top["jobs"].size(), 1u) << locate.out;
  EXPECT_EQ(top["jobs"][0]["job_id"], "4711");
  EXPECT_EQ(top["jobs"][0]["user"], "alice");
  EXPECT_EQ(top["jobs"][0]["job_name"], "llama");
  const ToolOutput table = fabric_.Run(
      {Binary("fabricmon-locate"), "--prometheus",
       "http://127.0.0.1:" + std::to_string(port), "--window", "30m"},
      "hca1");
  EXPECT_NE(table.out.find("jobs: 4711 (alice: llama)"), std::string::npos)
      << table.out;
  // The runner-up has fewer votes: the chosen link stands out.
  if (j["links"].size() > 1) {
    EXPECT_GT(top["votes"].get<double>(), j["links"][1]["votes"].get<double>());
  }

  // --link on the chosen cable's leaf end: the same LIDs as ibroute's, and
  // the probe pairs toward them whose routes cross it are exactly the
  // lossy ones crossing that way.
  const auto switches = Switches();
  const auto& [leaf_guid, leaf_lid] = switches.at(chosen.from);
  const nlohmann::json l =
      Link(leaf_guid, chosen.out,
           {"--prometheus", "http://127.0.0.1:" + std::to_string(port)});
  ASSERT_FALSE(l.is_discarded());
  EXPECT_EQ(LidsOf(l), IbrouteLids(leaf_lid, chosen.out));
  int crossing = 0;
  for (const auto& d : l["destinations"]) {
    EXPECT_EQ(d["pairs"], d["bad_pairs"]) << d.dump();
    crossing += d["pairs"].get<int>();
  }
  int want_crossing = 0;  // ibtracert: ordered pairs leaving by that port
  for (const auto& [a, la] : lids) {
    for (const auto& [b, lb] : lids) {
      if (a == b) continue;
      for (const Crossing& c : Route(la, lb)) {
        want_crossing += c.from == chosen.from && c.out == chosen.out;
      }
    }
  }
  EXPECT_EQ(crossing, want_crossing) << l.dump();

  // Unreachable Prometheus and no bad pair: their exit codes.
  const ToolOutput down = fabric_.Run(
      {Binary("fabricmon-locate"), "--prometheus", "http://127.0.0.1:1"},
      "hca1");
  EXPECT_EQ(down.exit_code, 3) << down.err;
  const ToolOutput none = fabric_.Run(
      {Binary("fabricmon-locate"), "--prometheus",
       "http://127.0.0.1:" + std::to_string(port), "--loss-ratio", "0.5"},
      "hca1");
  EXPECT_EQ(none.exit_code, 5) << none.out << none.err;
}

}  // namespace
}  // namespace fabric::testing
