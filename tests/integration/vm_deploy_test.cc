// The VictoriaMetrics deployment (deploy/victoriametrics/, docs/deploy.md)
// with the real binaries, on the stack of vm_stack.h: simulated daemons ->
// two vmagents in cluster mode -> victoria-metrics -> vmalert ->
// Alertmanager, and beside it a real Prometheus (the remote_write
// alternative) on the same targets and rules.
//  - every target is scraped by exactly one vmagent (none twice, none
//    missed), also after one vmagent restarts; steady fires no alert under
//    vmalert (nor under Prometheus);
//  - every recording rule gives the same series and values under vmalert as
//    under Prometheus (values within 5 %: the two scrape the daemons at
//    their own instants, and MetricsQL's rate() does not extrapolate), and
//    Prometheus' remote_write carries its series into VictoriaMetrics;
//  - the alert scenarios of alerts_e2e_test that the simulator alone drives
//    (congestion-hotspot, link-degraded, counter-saturation, dying-cable's
//    pre-FEC BER on the host port, pfc-storm) fire the same alerts under
//    vmalert as under Prometheus, and reach Alertmanager. Not SM failover:
//    alerts_e2e_test kills a real OpenSM on ibsim for it, not the simulator;
//  - a link counter that was already above 0 when its series began is no
//    link event under vmalert (the unit's MetricsQL flavour of the rules),
//    while MetricsQL's own increase() counts it.
// Everything binds to 127.0.0.1; the stack's processes are stopped by pid
// (their sessions) and its directory removed unless the test failed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/vm_stack.h"
#include "tests/support/ci.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

namespace vm = testing::vm;
using std::chrono::seconds;

#define REQUIRE_VM_STACK()                                            \
  do {                                                                \
    const std::string missing = vm::MissingBinary();                  \
    if (!missing.empty()) MISSING_DEPENDENCY(missing + " not found"); \
  } while (0)

// Each vmagent's active targets: disjoint, and together every target.
bool SplitOnce(vm::Stack& stack, std::string* why) {
  std::multiset<std::string> all;
  std::string split;
  for (int i = 0; i < vm::Stack::kVmagents; ++i) {
    auto mine = vm::ActiveTargets(stack.vmagent_port(i));
    if (!mine) {
      *why = "vmagent " + std::to_string(i) + " does not answer";
      return false;
    }
    all.insert(mine->begin(), mine->end());
    split += " " + std::to_string(mine->size());
  }
  const std::multiset<std::string> want(stack.targets().begin(),
                                        stack.targets().end());
  *why = "targets per vmagent:" + split;
  return all == want;
}

// In VictoriaMetrics, every target has a fresh `up` (none missed) and no
// more `up` samples in the last 20 s than one scraper at 1 s writes (two
// scrapers would write about 40; none twice).
void ExpectEachScrapedOnce(vm::Stack& stack) {
  const std::size_t n = stack.targets().size();
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        auto r = vm::Query(stack.vm_port(),
                           "last_over_time(up{job=\"fabricmon\"}[3s]) == 1");
        return r && r->size() == n;
      },
      seconds(30)))
      << "not every target has a fresh sample";
  // A window of samples written only since the last (re)start.
  std::this_thread::sleep_for(seconds(22));
  auto counts =
      vm::Query(stack.vm_port(), "count_over_time(up{job=\"fabricmon\"}[20s])");
  ASSERT_TRUE(counts.has_value());
  EXPECT_EQ(counts->size(), n);
  for (const auto& [labels, samples] : *counts) {
    EXPECT_LE(samples, 30) << labels.at("instance") << " scraped twice?";
    EXPECT_GE(samples, 1) << labels.at("instance");
  }
}

TEST(VmDeployTest, EveryTargetScrapedOnceAlsoAfterAVmagentRestarts) {
  REQUIRE_VM_STACK();
  vm::Stack stack("steady", 4);
  ASSERT_EQ(stack.error(), "");
  std::string why;
  EXPECT_TRUE(
      testing::WaitFor([&] { return SplitOnce(stack, &why); }, seconds(30)))
      << why;
  std::printf("before the restart: %s\n", why.c_str());
  ExpectEachScrapedOnce(stack);
  // steady fires nothing, under vmalert as under Prometheus (by now both
  // have evaluated every rule for 20 s with `for: 2s`).
  auto names = [](const std::vector<vm::Alert>& alerts) {
    std::set<std::string> out;
    for (const auto& a : alerts) out.insert(a.name);
    return out;
  };
  // What fired, with its labels and description, and the rails' classes
  // as Prometheus has them now: enough to tell a rule from a flake.
  auto described = [&](const std::vector<vm::Alert>& alerts) {
    std::string out;
    for (const auto& a : alerts) {
      out += a.name + " {";
      for (const auto& [k, v] : a.labels) out += k + "=" + v + " ";
      out +=
          "}: " +
          (a.annotations.count("description") ? a.annotations.at("description")
                                              : std::string()) +
          "\n";
    }
    if (auto rails =
            vm::Query(stack.prometheus_port(), "fabric_port_fabric_class")) {
      for (const auto& [labels, _] : *rails) {
        for (const auto& [k, v] : labels) out += k + "=" + v + " ";
        out += "\n";
      }
    }
    return out;
  };
  const auto vmalert_fired = vm::FiringAlerts(stack.vmalert_port());
  EXPECT_EQ(names(vmalert_fired), std::set<std::string>())
      << described(vmalert_fired);
  const auto prometheus_fired = vm::FiringAlerts(stack.prometheus_port());
  EXPECT_EQ(names(prometheus_fired), std::set<std::string>())
      << described(prometheus_fired);
  stack.RestartVmagent(1);
  EXPECT_TRUE(
      testing::WaitFor([&] { return SplitOnce(stack, &why); }, seconds(30)))
      << why;
  std::printf("after the restart: %s\n", why.c_str());
  ExpectEachScrapedOnce(stack);
}

// The recorded series' names, once each.
std::set<std::string> RecordNames() {
  std::set<std::string> out;
  const YAML::Node doc =
      YAML::LoadFile(vm::Src("dashboards/prometheus/recording_rules.yml"));
  for (const auto& g : doc["groups"]) {
    for (const auto& r : g["rules"]) {
      if (r["record"]) out.insert(r["record"].as<std::string>());
    }
  }
  return out;
}

bool Close(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::fabs(a - b) <= 1e-9 + 0.05 * std::max(std::fabs(a), std::fabs(b));
}

// "" when both give the same series with close values, else what differs.
std::string Differences(const vm::Series& prom, const vm::Series& vmalert) {
  std::string out;
  auto text = [](const std::map<std::string, std::string>& labels) {
    std::string s = "{";
    for (const auto& [k, v] : labels) s += k + "=" + v + ",";
    return s + "}";
  };
  for (const auto& [labels, value] : prom) {
    auto it = vmalert.find(labels);
    if (it == vmalert.end()) {
      out += " only in Prometheus: " + text(labels);
    } else if (!Close(value, it->second)) {
      out += " " + text(labels) + " " + std::to_string(value) + " vs " +
             std::to_string(it->second);
    }
  }
  for (const auto& [labels, value] : vmalert) {
    if (!prom.count(labels)) out += " only in vmalert: " + text(labels);
  }
  return out;
}

// Polls until each recorded series agrees once (the two evaluate at their
// own instants); fails those that never do.
TEST(VmDeployTest, RecordingRulesGiveTheSameValuesAsPrometheus) {
  REQUIRE_VM_STACK();
  vm::Stack stack("congestion-hotspot", 2, /*short_windows=*/true);
  ASSERT_EQ(stack.error(), "");
  std::map<std::string, std::string> pending;  // record -> last difference
  for (const auto& name : RecordNames()) pending[name] = "";
  int with_data = 0;
  testing::WaitFor(
      [&] {
        for (auto it = pending.begin(); it != pending.end();) {
          auto prom = vm::Query(stack.prometheus_port(), it->first);
          auto vmalert = vm::Query(stack.vm_port(), it->first);
          if (!prom || !vmalert) {
            it->second = "query failed";
            ++it;
            continue;
          }
          it->second = Differences(*prom, *vmalert);
          if (it->second.empty()) {
            with_data += !prom->empty();
            it = pending.erase(it);
          } else {
            ++it;
          }
        }
        return pending.empty();
      },
      seconds(60), std::chrono::milliseconds(1000));
  for (const auto& [name, diff] : pending) {
    ADD_FAILURE() << name << ":" << diff;
  }
  std::printf("recorded series agreeing: %d with data, of %zu\n", with_data,
              RecordNames().size());
  EXPECT_GT(with_data, 40);
  // The remote_write alternative: Prometheus' own recorded series arrived.
  auto written =
      vm::Query(stack.prometheus_vm_port(),
                "count(fabric:port_transmit_utilization_ratio:rate5m)");
  auto local =
      vm::Query(stack.prometheus_port(),
                "count(fabric:port_transmit_utilization_ratio:rate5m)");
  ASSERT_TRUE(written && local && written->size() == 1 && local->size() == 1);
  EXPECT_EQ(written->begin()->second, local->begin()->second);
}

// The recording rules whose expression is `increase(...) > 0` of link
// counters (the link-event groups), by record name, from `dir`'s file.
std::map<std::string, std::string> LinkEventRecords(const std::string& dir) {
  std::map<std::string, std::string> out;
  const auto doc = YAML::LoadFile(dir + "/recording_rules.yml");
  for (const auto& group : doc["groups"]) {
    for (const auto& rule : group["rules"]) {
      const auto expr = rule["expr"].as<std::string>();
      if (rule["record"] && expr.find("increase") == 0) {
        out[rule["record"].as<std::string>()] = expr;
      }
    }
  }
  return out;
}

// Every counter the link-event records read, for two ports of one host
// over the last 10 minutes: `old` read 3 from its first sample on (a port
// that went down before fabricmon exported it: a new node, every port at a
// rollout), `moved` read 3 and then 4 (one link down 4 minutes ago).
std::string LinkCountersText(std::int64_t now_ms) {
  std::string out;
  for (const char* name :
       {"fabric_port_errors_total", "fabric_switch_port_errors_total",
        "fabric_roce_phy_link_down_events_total",
        "fabric_switch_port_link_down_transitions_total"}) {
    for (const char* error : {"link_downed", "link_error_recovery"}) {
      for (const char* port : {"old", "moved"}) {
        for (std::int64_t t = now_ms - 600'000; t <= now_ms; t += 15'000) {
          const int value =
              std::string(port) == "moved" && t > now_ms - 240'000 ? 4 : 3;
          out += std::string(name) +
                 "{job=\"fabricmon\",instance=\"h1:10915\"" + ",port=\"" +
                 port + "\",error=\"" + error + "\"} " + std::to_string(value) +
                 " " + std::to_string(t) + "\n";
        }
      }
    }
  }
  return out;
}

// The ports an expression names on `port` (its `port` label).
std::set<std::string> PortsOf(int port, const std::string& expr) {
  std::set<std::string> out;
  if (auto r = vm::Query(port, expr)) {
    for (const auto& [labels, value] : *r) out.insert(labels.at("port"));
  }
  return out;
}

TEST(VmDeployTest, CountersOlderThanTheirSeriesAreNoLinkEventsUnderVmalert) {
  REQUIRE_VM_STACK();
  testing::TempDir dir("fabricmon-vm-increase");
  // The rules as vmalert-fabricmon.service writes them before it starts.
  ASSERT_EQ(vm::WriteMetricsqlRules(vm::Src("dashboards/prometheus"),
                                    dir.path() + "/vmalert"),
            "");
  const auto vmalert = LinkEventRecords(dir.path() + "/vmalert");
  const auto shipped = LinkEventRecords(vm::Src("dashboards/prometheus"));
  ASSERT_GE(vmalert.size(), 6u);

  const int port = testing::FreeLoopbackPort();
  testing::sim::Session server(
      "/usr/bin/victoria-metrics -storageDataPath=" + dir.path() +
          "/data -httpListenAddr=127.0.0.1:" + std::to_string(port) +
          " -loggerLevel=WARN",
      dir.path() + "/victoria-metrics.log");
  ASSERT_TRUE(testing::WaitFor(
      [&] { return testing::HttpGetOk(port, "/health").has_value(); },
      seconds(20)));
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count() -
                      60'000;
  const std::string body = LinkCountersText(now_ms);
  const auto answer = testing::RawExchange(
      port,
      "POST /api/v1/import/prometheus HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Connection: close\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body,
      false);
  ASSERT_TRUE(answer && answer->find(" 204 ") != std::string::npos)
      << answer.value_or("no answer");
  // Imported rows become searchable after VictoriaMetrics' next flush.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return PortsOf(port, "fabric_port_errors_total") ==
               std::set<std::string>{"moved", "old"};
      },
      seconds(30)));

  for (const auto& [record, expr] : vmalert) {
    SCOPED_TRACE(record + ": " + expr);
    EXPECT_EQ(PortsOf(port, expr), std::set<std::string>{"moved"});
    // What the flavour is for: the same rule as Prometheus reads it, in
    // MetricsQL, takes the old port's 3 for link downs in the window.
    EXPECT_EQ(PortsOf(port, shipped.at(record)),
              (std::set<std::string>{"moved", "old"}));
  }
}

struct AlertCase {
  std::string scenario, alert;
  std::vector<std::string> sim_args;  // as alerts_e2e_test runs the scenario
  // How long to wait for agreement (a bound, not an assertion on time).
  std::chrono::seconds timeout = seconds(60);
};

class VmAlertTest : public ::testing::TestWithParam<AlertCase> {};

// The alert's identity: name and the labels that say where.
std::set<std::string> Identities(const std::vector<vm::Alert>& alerts,
                                 const std::string& name) {
  std::set<std::string> out;
  for (const auto& a : alerts) {
    if (a.name != name) continue;
    std::string id = name;
    for (const char* k : {"instance", "device", "port", "severity"}) {
      auto it = a.labels.find(k);
      id +=
          std::string(" ") + k + "=" + (it == a.labels.end() ? "" : it->second);
    }
    out.insert(id);
  }
  return out;
}

TEST_P(VmAlertTest, FiresUnderVmalertAsUnderPrometheus) {
  REQUIRE_VM_STACK();
  const AlertCase& c = GetParam();
  vm::Stack stack(c.scenario, 2, /*short_windows=*/false, c.sim_args);
  ASSERT_EQ(stack.error(), "");
  std::set<std::string> prom, vmalert, alertmanager;
  testing::WaitFor(
      [&] {
        prom = Identities(vm::FiringAlerts(stack.prometheus_port()), c.alert);
        vmalert = Identities(vm::FiringAlerts(stack.vmalert_port()), c.alert);
        alertmanager = Identities(
            vm::AlertmanagerAlerts(stack.alertmanager_port()), c.alert);
        return !prom.empty() && prom == vmalert && vmalert == alertmanager;
      },
      c.timeout, std::chrono::milliseconds(500));
  ASSERT_FALSE(prom.empty()) << c.alert << " never fired under Prometheus";
  EXPECT_EQ(vmalert, prom);
  EXPECT_EQ(alertmanager, vmalert);
  for (const auto& id : vmalert) std::printf("vmalert: %s\n", id.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    FastScenarios, VmAlertTest,
    ::testing::Values(
        AlertCase{"congestion-hotspot", "FabricPortCongestionHotspot"},
        AlertCase{"link-degraded", "FabricPortLinkDegraded"},
        AlertCase{"counter-saturation", "FabricPortCounterSaturated"},
        // The host side of the dying cable (RoCE PHY counters from the
        // ethtool dumps); its switch side needs the simulator's MADs. Its
        // BER passes 1e-6 30 s into the scenario (1e-9, ten times per 10 s),
        // and the 5 m rate the rule reads later: it fired after 62 s here.
        AlertCase{"dying-cable", "FabricPortHighBer", {}, seconds(120)},
        // A 10 s storm every 20 s, so a whole storm is seen whenever the
        // stack becomes ready (alerts_e2e_test's PfcStorm case says why).
        AlertCase{"pfc-storm",
                  "FabricPfcPauseStorm",
                  {"--burst-length", "10s", "--burst-period", "20s"}}),
    [](const auto& info) {
      std::string name = info.param.alert;
      return name;
    });

}  // namespace
}  // namespace fabric
