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

// One directed cable crossing of an ibtracert route: "leaf0"[3] -> ...
struct Crossing {
  std::string from;
  int out = 0;
  std::string to;
  int in = 0;
};

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

  // The cables ibtracert's route SRC -> DST crosses.
  std::vector<Crossing> Route(int src, int dst) {
    const ToolOutput r = fabric_.Run(
        {"ibtracert", std::to_string(src), std::to_string(dst)}, "hca1");
    std::vector<Crossing> out;
    const std::regex from_re(R"re(^From .*"(.*)"$)re");
    const std::regex hop_re(R"re(^\[(\d+)\] -> .*\}\[(\d+)\] .*"(.*)"$)re");
    std::istringstream in(r.out);
    std::string line, at;
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, from_re)) {
        at = m[1];
      } else if (std::regex_match(line, m, hop_re)) {
        out.push_back({at, std::stoi(m[1]), m[3], std::stoi(m[2])});
        at = m[3];
      }
    }
    return out;
  }

  IbsimFabric fabric_;
  pid_t prometheus_ = -1;
};

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
    const bool lossy = bad.count({a, b}) > 0;
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
  ASSERT_EQ(locate.exit_code, 0) << locate.out << locate.err;
  const auto j = nlohmann::json::parse(locate.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << locate.out;
  EXPECT_EQ(j["pairs"]["bad"], static_cast<int>(bad.size()));
  ASSERT_FALSE(j["links"].empty()) << locate.out;
  const auto& top = j["links"][0];
  std::set<std::pair<std::string, int>> ends = {
      {top["a"]["name"], top["a"]["port"]},
      {top["b"]["name"], top["b"]["port"]}};
  const std::set<std::pair<std::string, int>> want = {{chosen.from, chosen.out},
                                                      {chosen.to, chosen.in}};
  EXPECT_EQ(ends, want) << locate.out;
  // The runner-up has fewer votes: the chosen link stands out.
  if (j["links"].size() > 1) {
    EXPECT_GT(top["votes"].get<double>(), j["links"][1]["votes"].get<double>());
  }

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
