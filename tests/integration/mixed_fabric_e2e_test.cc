// Issue 31 end to end: scripts/demo.sh runs fabricmon-sim with
// scenarios/mixed-fabric.yaml on 4 hosts (two fabrics: the InfiniBand rails'
// subnet and the RoCE network of the BlueField-3 rails; host0's RoCE
// congestion control is off), one fabricmon daemon per host and a real
// Prometheus with the shipped rules (`for:` shortened to 20 s). Checked:
//  - FabricRailClassMismatch fires for host0 on the RoCE fabric, and no other
//    host has it even pending;
//  - the inventory dashboard's count panels (dashboards/grafana/inventory.json,
//    every variable matching all) return the expected counts.
// Bounded (no timed assertion: a deadline only ends the wait); everything
// runs on 127.0.0.1 and the demo's trap stops it (checked: nothing of its
// session survives).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/paths.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
using sim::PromQuery;

constexpr const char* kIb = "ib:fe80:0000:0000:0000";
constexpr const char* kRoce = "roce:fe80:0000:0000:0000::/64";

// Panel title -> its first target's expression, variables matching all.
std::map<std::string, std::string> InventoryQueries() {
  const auto dash = nlohmann::json::parse(
      ReadFile(SourceDir() + "/dashboards/grafana/inventory.json"));
  std::map<std::string, std::string> out;
  for (const auto& p : dash["panels"]) {
    if (p["type"] == "row") continue;
    std::string expr = p["targets"][0]["expr"];
    expr = std::regex_replace(expr, std::regex(R"(\$__rate_interval)"), "1m");
    expr = std::regex_replace(expr, std::regex(R"(\$\{?[a-z_]+\}?)"), ".*");
    out[p["title"]] = expr;
  }
  return out;
}

// "label=value,..." of the listed labels -> value, for one query.
std::map<std::string, double> ByLabels(int prom_port, const std::string& expr,
                                       const std::vector<std::string>& keys) {
  std::map<std::string, double> out;
  auto r = PromQuery(prom_port, expr);
  EXPECT_TRUE(r) << expr;
  if (!r) return out;
  for (const auto& s : *r) {
    std::string k;
    for (const auto& key : keys) {
      auto it = s.labels.find(key);
      k += (k.empty() ? "" : ",") + key + "=" +
           (it == s.labels.end() ? "" : it->second);
    }
    out[k] = s.value;
  }
  return out;
}

TEST(MixedFabricE2e, AlertForTheMixedHostOnlyAndInventoryCounts) {
  for (const char* bin :
       {"/usr/bin/prometheus", "/usr/bin/prometheus-alertmanager"}) {
    if (!std::filesystem::exists(bin)) {
      MISSING_DEPENDENCY(std::string(bin) + " not installed");
    }
  }
  const std::string log =
      std::filesystem::temp_directory_path() /
      ("mixed_fabric_e2e_test." + std::to_string(getpid()) + ".log");
  const std::string ports_file = log + ".ports";
  sim::Session demo(SourceDir() + "/scripts/demo.sh --build " + BinaryDir() +
                        " --hosts 4 --timeline " + SourceDir() +
                        "/scenarios/mixed-fabric.yaml --duration 300"
                        " --scrape-interval 1s" +
                        sim::DemoPortArgs(2, ports_file),
                    log);
  const auto ports = sim::WaitDemoPorts(demo, ports_file, 90s);
  std::remove(ports_file.c_str());
  ASSERT_TRUE(ports) << "demo.sh did not start; see " << log;
  const int prom_port = ports->prometheus;

  // The alert, once the collectors' first classification, the 1 s rules and
  // the shortened 20 s `for:` have passed.
  bool firing = false;
  const auto deadline = std::chrono::steady_clock::now() + 180s;
  while (!firing && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1s);
    ASSERT_TRUE(demo.running()) << "demo.sh exited early; see " << log;
    auto r = PromQuery(prom_port,
                       "ALERTS{alertname=\"FabricRailClassMismatch\","
                       "alertstate=\"firing\"}");
    firing = r && !r->empty();
  }
  ASSERT_TRUE(firing) << "FabricRailClassMismatch never fired; see " << log;
  auto alerts =
      PromQuery(prom_port, "ALERTS{alertname=\"FabricRailClassMismatch\"}");
  ASSERT_TRUE(alerts);
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ(alerts->front().labels.at("host"), "host0");
  EXPECT_EQ(alerts->front().labels.at("fabric"), kRoce);

  // The panels' expected answers. Polled until all hold (bounded): on this
  // loaded machine a 1 s scrape can fail, and a host's series are stale
  // until its next scrape.
  const auto q = InventoryQueries();
  const std::string ib = std::string("fabric=") + kIb;
  const std::string roce = std::string("fabric=") + kRoce;
  using Counts = std::map<std::string, double>;
  struct Check {
    std::string title;
    std::vector<std::string> keys;
    Counts expected;
    Counts got = {};
  };
  std::vector<Check> checks = {
      {"Hosts per fabric and class",
       {"fabric", "class"},
       {{ib + ",class=infiniband", 4},
        {roce + ",class=roce", 1},
        {roce + ",class=roce_spectrum_x", 3}}},
      {"Rails per fabric and class",
       {"fabric", "class"},
       {{ib + ",class=infiniband", 32},
        {roce + ",class=roce", 1},
        {roce + ",class=roce_spectrum_x", 3}}},
      {"Majority class per fabric",
       {"fabric", "class"},
       {{ib + ",class=infiniband", 32}, {roce + ",class=roce_spectrum_x", 3}}},
      {"Rails per reason",
       {"fabric", "reason"},
       {{ib + ",reason=link_layer_infiniband", 32},
        {roce + ",reason=cc_off", 1},
        {roce + ",reason=supernic_cc_adaptive_retransmission", 3}}},
      {"NIC models and firmware per fabric",
       {"fabric", "model", "fw_ver"},
       {{ib + ",model=ConnectX-7,fw_ver=28.41.1000", 32},
        {roce + ",model=BlueField-3,fw_ver=32.38.3056", 4}}},
      {"Mixed firmware: versions of one model on one fabric", {"fabric"}, {}},
      {"Hosts with rails off their fabric's majority class",
       {"host", "fabric"},
       {{"host=host0," + roce, 1}}},
      {"Hosts whose rails on one fabric are of several classes", {"host"}, {}},
  };
  // One subnet: every host under the master SM (host0, the sweep node,
  // also under the standby it queries).
  double most_under_one_sm = 0;
  const auto answers_deadline = std::chrono::steady_clock::now() + 90s;
  bool all = false;
  while (!all && std::chrono::steady_clock::now() < answers_deadline) {
    all = true;
    for (Check& c : checks) {
      c.got = ByLabels(prom_port, q.at(c.title), c.keys);
      all = all && c.got == c.expected;
    }
    most_under_one_sm = 0;
    for (const auto& [sm, hosts] :
         ByLabels(prom_port, q.at("InfiniBand hosts per subnet manager"),
                  {"sm_guid"})) {
      most_under_one_sm = std::max(most_under_one_sm, hosts);
    }
    all = all && most_under_one_sm == 4;
    if (!all) std::this_thread::sleep_for(1s);
  }
  for (const Check& c : checks) EXPECT_EQ(c.got, c.expected) << c.title;
  EXPECT_EQ(most_under_one_sm, 4);

  std::string why;
  EXPECT_TRUE(sim::StopDemo(demo, &why)) << why;
  if (!HasFailure()) std::remove(log.c_str());
}

}  // namespace
}  // namespace fabric::testing
