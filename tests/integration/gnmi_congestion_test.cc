// RoCE switch ports in the congestion trees (issue 45 item 3), end to end:
// three Ethernet switches served by the Node.js gNMI target
// (tests/gnmi/server.js, @grpc/grpc-js: not fabricmon's gRPC), cabled by
// LLDP as a leaf-spine, their counters rising as the test set them; the real
// fabricmon streams them and a real Prometheus scrapes it and evaluates the
// shipped rules (every `for:` 2 s, windows 20 s). leaf1's swp1 egress, to a
// host, marks ECN at 96 % of line rate and leaf1 pauses spine1; spine1's
// port to leaf1 is paused and spine1 pauses leaf2; leaf2's uplink is paused.
// One FabricCongestionRoot must fire, for leaf1 swp1 (oversubscribed, two
// paused switch ports), and one FabricCongestionVictim for each paused port,
// naming that root; leaf2's port that marks a little is no root. Then every
// panel, rule and runbook expression over RoCE switch ports
// (ReadsGnmiSwitchPortsOnly: alerts_e2e_test's NeedsGnmiSwitches exemption)
// must return data here. Everything on 127.0.0.1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "tests/integration/fabricmon_run.h"
#include "tests/integration/gnmi_target.h"
#include "tests/integration/rule_exprs.h"
#include "tests/integration/runbook_queries.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/prom_api.h"
#include "tests/support/temp_dir.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;

std::string If(const std::string& port) {
  return "/interfaces/interface[name=" + port + "]";
}
std::string Ecn(const std::string& port) {
  return "/qos/interfaces/interface[interface-id=" + port +
         "]/output/queues/queue[name=3]/state/ecn-marked-pkts";
}
// PFC pause time on priority 3, µs: "in" = this port was paused.
std::string Pause(const std::string& port, const std::string& dir) {
  return "/qos/interfaces/interface[interface-id=" + port +
         "]/switch-priority[priority=3]/state/" + dir + "-pause-duration";
}
std::string Lldp(const std::string& port, const std::string& leaf) {
  return "/lldp/interfaces/interface[name=" + port +
         "]/neighbors/neighbor[id=1]/state/" + leaf;
}

// A port that is up at 400 Gb/s, cabled (LLDP) to `name`'s `remote_port`.
void Port(GnmiTarget& t, const std::string& port, const std::string& name,
          const std::string& remote_port) {
  ASSERT_TRUE(t.Set(If(port) + "/state/oper-status", "string", "UP"));
  ASSERT_TRUE(
      t.Set(If(port) + "/ethernet/state/port-speed", "string", "SPEED_400GB"));
  ASSERT_TRUE(t.Set(Lldp(port, "system-name"), "string", name));
  ASSERT_TRUE(t.Set(Lldp(port, "port-id"), "string", remote_port));
  ASSERT_TRUE(t.Set(Lldp(port, "port-description"), "string", remote_port));
}

bool Grow(GnmiTarget& t, const std::string& path, double per_second) {
  return t.Command("grow " + path + " " + std::to_string(per_second));
}

class GnmiCongestionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/prometheus"))
      MISSING_DEPENDENCY("/usr/bin/prometheus not installed");
    if (std::string why = InstallGnmiTarget(); !why.empty())
      MISSING_DEPENDENCY(why);
    ASSERT_FALSE(dir_.path().empty());
    std::filesystem::create_directories(dir_.path() + "/sys");
  }
  void TearDown() override {
    prometheus_.reset();
    daemon_.reset();
  }

  std::unique_ptr<GnmiTarget> Target(const std::string& name) {
    auto t = std::make_unique<GnmiTarget>(dir_.path() + "/" + name + ".log");
    EXPECT_GT(t->port(), 0) << name << ": " << t->log();
    return t;
  }

  // The daemon streaming `switches` ({name, address}), a Prometheus on the
  // shipped rules scraping it.
  void Start(const std::map<std::string, std::string>& switches) {
    const int daemon_port = FreeLoopbackPort();
    std::ofstream config(dir_.path() + "/fabricmon.yaml");
    config << "collectors:\n  gnmi:\n    enabled: true\n    insecure: true\n"
           << "    interval: 500ms\n    sample_interval: 200ms\n"
           << "    switches:\n";
    for (const auto& [name, address] : switches)
      config << "      - {name: " << name << ", address: " << address << "}\n";
    config.close();
    daemon_ = std::make_unique<sim::Session>(
        Binary("fabricmon") + " --config " + dir_.path() +
            "/fabricmon.yaml --sysfs.root " + dir_.path() +
            "/sys --web.listen-address 127.0.0.1:" +
            std::to_string(daemon_port),
        dir_.path() + "/fabricmon.log");
    const std::filesystem::path dir = dir_.path();
    prom::WriteFastRules(dir, /*short_windows=*/true);
    std::ofstream(dir / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "rule_files:\n  - recording_rules.yml\n  - alerting_rules.yml\n"
        << "scrape_configs:\n  - job_name: fabricmon\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << daemon_port << "']\n";
    prom_port_ = FreeLoopbackPort();
    prometheus_ = sim::StartPrometheus(dir, prom_port_);
  }

  std::vector<prom::Alert> Firing(const std::string& name) {
    std::vector<prom::Alert> out;
    for (const auto& a : prom::Alerts(prom_port_)) {
      if (a.name == name && a.state == "firing") out.push_back(a);
    }
    return out;
  }

  std::string Logs() {
    return "daemon:\n" + ReadFile(dir_.path() + "/fabricmon.log") +
           "\nprometheus:\n" + ReadFile(dir_.path() + "/prometheus.log");
  }

  TempDir dir_{"gnmi-congestion-test"};
  int prom_port_ = 0;
  std::unique_ptr<sim::Session> daemon_, prometheus_;
};

TEST_F(GnmiCongestionTest, RoceSwitchRootAndUpstreamVictimsThroughTheRules) {
  auto leaf1 = Target("leaf1");
  auto spine1 = Target("spine1");
  auto leaf2 = Target("leaf2");
  // leaf1: swp1 to a host, at 48 of 50 GB/s, 50,000 ECN marks/s (the
  // threshold at 400 Gb/s is 5,000/s); swp31 up to spine1, pausing it 25 %
  // of the time.
  Port(*leaf1, "swp1", "gpu-node-01", "eth0");
  ASSERT_TRUE(Grow(*leaf1, If("swp1") + "/state/counters/out-octets", 48e9));
  ASSERT_TRUE(Grow(*leaf1, Ecn("swp1"), 50000));
  Port(*leaf1, "swp31", "spine1", "swp1");
  ASSERT_TRUE(Grow(*leaf1, Pause("swp31", "out"), 250000));
  // spine1: swp1 paused by leaf1; swp2 pauses leaf2.
  Port(*spine1, "swp1", "leaf1", "swp31");
  ASSERT_TRUE(Grow(*spine1, Pause("swp1", "in"), 250000));
  Port(*spine1, "swp2", "leaf2", "swp31");
  ASSERT_TRUE(Grow(*spine1, Pause("swp2", "out"), 250000));
  // leaf2: its uplink paused by spine1; swp1 marks 10 packets/s.
  Port(*leaf2, "swp31", "spine1", "swp2");
  ASSERT_TRUE(Grow(*leaf2, Pause("swp31", "in"), 250000));
  Port(*leaf2, "swp1", "gpu-node-02", "eth0");
  ASSERT_TRUE(Grow(*leaf2, Ecn("swp1"), 10));
  Start({{"leaf1", leaf1->address()},
         {"spine1", spine1->address()},
         {"leaf2", leaf2->address()}});

  std::vector<prom::Alert> roots, victims;
  const bool fired = WaitFor(
      [&] {
        roots = Firing("FabricCongestionRoot");
        victims = Firing("FabricCongestionVictim");
        return !roots.empty() && victims.size() >= 2;
      },
      120s, 500ms);
  ASSERT_TRUE(fired) << roots.size() << " roots, " << victims.size()
                     << " victims\n"
                     << Logs();
  ASSERT_EQ(roots.size(), 1u);
  const auto& root = roots[0].labels;
  EXPECT_EQ(root.at("switch"), "leaf1");
  EXPECT_EQ(root.at("port"), "swp1");
  EXPECT_EQ(root.at("cause"), "oversubscribed");
  EXPECT_EQ(root.at("root_guid"), "leaf1");
  EXPECT_EQ(root.at("root_port"), "swp1");
  EXPECT_EQ(root.count("switch_guid"), 0u);
  const auto count = prom::Query(
      prom_port_,
      "fabric:roce_switch_congestion_root_victims:count{root_guid=\"leaf1\"}");
  ASSERT_TRUE(count && count->size() == 1);
  EXPECT_EQ(count->front().value, 2);
  std::map<std::string, std::string> named;  // victim -> its root
  for (const auto& v : victims) {
    named[v.labels.at("switch") + "/" + v.labels.at("port")] =
        v.labels.at("root_guid") + "/" + v.labels.at("root_port");
  }
  EXPECT_EQ(named, (std::map<std::string, std::string>{
                       {"spine1/swp1", "leaf1/swp1"},
                       {"leaf2/swp31", "leaf1/swp1"}}));
  // The paused ports page on their own too (held back by the markers in
  // Alertmanager: inhibit_alertmanager_test).
  EXPECT_TRUE(WaitFor(
      [&] { return Firing("FabricSwitchPortCongestion").size() >= 2; }, 30s));

  // Every expression over RoCE switch ports returns data here.
  std::vector<std::pair<std::string, std::string>> exprs;
  for (const auto& [where, expr] : AllExprs()) {
    if (ReadsGnmiSwitchPortsOnly(expr)) exprs.emplace_back(where, expr);
  }
  for (const auto& [file, query] : RunbookQueries()) {
    if (ReadsGnmiSwitchPortsOnly(query))
      exprs.emplace_back("docs/runbooks/" + file, ForPrometheus(query));
  }
  EXPECT_GE(exprs.size(), 10u);
  for (const auto& [where, expr] : exprs) {
    const std::string q = ForQuery(expr);
    bool ok = true;
    const bool data = WaitFor(
        [&] {
          const auto r = prom::Query(prom_port_, q);
          ok = r.has_value();
          return !ok || !r->empty();
        },
        30s, 500ms);
    EXPECT_TRUE(ok) << where << ": query failed: " << q;
    EXPECT_TRUE(data) << where << " returns no data: " << q;
  }
}

}  // namespace
}  // namespace fabric::testing
