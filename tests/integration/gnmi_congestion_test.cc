// RoCE switch ports in the congestion trees (issue 45 item 3), end to end:
// four Ethernet switches served by the Node.js gNMI target
// (tests/gnmi/server.js, @grpc/grpc-js: not fabricmon's gRPC), cabled by
// LLDP as a three-tier Clos, their counters rising as the test set them; the
// real fabricmon streams them and a real Prometheus scrapes it and evaluates
// the shipped rules (every `for:` 2 s, windows 20 s).
//   gpu-node-01 <- leaf1 swp1: marks ECN at 96 % of line rate; leaf1 pauses
//                  spine1 (swp31);
//   spine1 swp1 -> leaf1: paused; spine1 pauses super1 (swp9);
//   super1 swp1 -> spine1: paused; super1 pauses spine2 (swp2);
//   spine2 swp9 -> super1: paused; spine2 swp1 marks 10 packets/s (calm);
//   spine2 swp5 -> gpu-node-09 eth0: paused by that host, which sends PFC
//                  pauses and receives none (a stand-in exporter serves its
//                  fabric_pfc_pause_duration_seconds_total, as the host's
//                  daemon does:
//                  SimCongestion.PfcStormOriginIsTheRootInPrometheus).
// The RoCE switch root must be leaf1 swp1 alone (oversubscribed, three
// paused switch ports: hops 1 to 3), each paused port its victim, and
// spine2 swp5 the victim of the host's pfc_origin root. Then every panel,
// rule and runbook expression over RoCE switch ports
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
#include "tests/support/fake_http_server.h"
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
    if (std::string why = GnmiStackMissing(); !why.empty())
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
  // shipped rules scraping it and `host` as gpu-node-09:10915.
  void Start(const std::map<std::string, std::string>& switches, int host) {
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
        << "      - targets: ['127.0.0.1:" << daemon_port << "']\n"
        << "      - targets: ['127.0.0.1:" << host << "']\n"
        << "        labels: {instance: 'gpu-node-09:10915'}\n";
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
  auto super1 = Target("super1");
  auto spine2 = Target("spine2");
  // leaf1 swp1: 48 of 50 GB/s, 50,000 ECN marks/s (the threshold at
  // 400 Gb/s is 5,000/s). Each pausing port pauses 25 % of the time.
  Port(*leaf1, "swp1", "gpu-node-01", "eth0");
  ASSERT_TRUE(Grow(*leaf1, If("swp1") + "/state/counters/out-octets", 48e9));
  ASSERT_TRUE(Grow(*leaf1, Ecn("swp1"), 50000));
  ASSERT_TRUE(
      leaf1->Set("/qos/interfaces/interface[interface-id=swp1]/output/queues/"
                 "queue[name=3]/state/max-queue-len",
                 "uint", "9000000"));
  Port(*leaf1, "swp31", "spine1", "swp1");
  ASSERT_TRUE(Grow(*leaf1, Pause("swp31", "out"), 250000));
  Port(*spine1, "swp1", "leaf1", "swp31");
  ASSERT_TRUE(Grow(*spine1, Pause("swp1", "in"), 250000));
  Port(*spine1, "swp9", "super1", "swp1");
  ASSERT_TRUE(Grow(*spine1, Pause("swp9", "out"), 250000));
  Port(*super1, "swp1", "spine1", "swp9");
  ASSERT_TRUE(Grow(*super1, Pause("swp1", "in"), 250000));
  Port(*super1, "swp2", "spine2", "swp9");
  ASSERT_TRUE(Grow(*super1, Pause("swp2", "out"), 250000));
  Port(*spine2, "swp9", "super1", "swp2");
  ASSERT_TRUE(Grow(*spine2, Pause("swp9", "in"), 250000));
  Port(*spine2, "swp1", "gpu-node-02", "eth0");
  ASSERT_TRUE(Grow(*spine2, Ecn("swp1"), 10));
  Port(*spine2, "swp5", "gpu-node-09", "eth0");
  ASSERT_TRUE(Grow(*spine2, Pause("swp5", "in"), 250000));
  // gpu-node-09's PFC pause time: sends 20 %, receives none.
  const auto began = std::chrono::steady_clock::now();
  FakeHttpServer host([&](const std::string&) {
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
            .count();
    const std::string labels =
        "device=\"mlx5_0\",port=\"1\",netdev=\"eth0\",priority=\"3\",";
    FakeHttpAnswer a;
    a.content_type = "text/plain; version=0.0.4";
    a.body = "fabric_pfc_pause_duration_seconds_total{" + labels +
             "direction=\"tx\"} " + std::to_string(0.2 * t) +
             "\nfabric_pfc_pause_duration_seconds_total{" + labels +
             "direction=\"rx\"} 0\n";
    return a;
  });
  Start({{"leaf1", leaf1->address()},
         {"spine1", spine1->address()},
         {"super1", super1->address()},
         {"spine2", spine2->address()}},
        host.port());

  // Root -> cause, victim -> its root, as the firing alerts say. The
  // expected state is waited for: until the stand-in host's pause rate is
  // known, spine2 swp5 is briefly a root of its own (the host behind it
  // pauses it), as it would be for a host without a daemon.
  const std::map<std::string, std::string> want_roots = {
      {"leaf1/swp1", "oversubscribed"},
      {"gpu-node-09:10915/mlx5_0", "pfc_origin"}};
  const std::map<std::string, std::string> want_victims = {
      {"spine1/swp1", "leaf1/swp1"},
      {"super1/swp1", "leaf1/swp1"},
      {"spine2/swp9", "leaf1/swp1"},
      {"spine2/swp5", "gpu-node-09:10915/mlx5_0"}};
  std::map<std::string, std::string> roots, victims;
  const bool settled = WaitFor(
      [&] {
        roots.clear();
        victims.clear();
        for (const auto& r : Firing("FabricCongestionRoot")) {
          const auto& l = r.labels;
          EXPECT_EQ(l.count("switch_guid"), 0u);
          if (l.count("switch")) {
            EXPECT_EQ(l.at("root_guid"), l.at("switch"));
            EXPECT_EQ(l.at("root_port"), l.at("port"));
          }
          roots[l.at("root_guid") + "/" + l.at("root_port")] = l.at("cause");
        }
        for (const auto& v : Firing("FabricCongestionVictim")) {
          victims[v.labels.at("switch") + "/" + v.labels.at("port")] =
              v.labels.at("root_guid") + "/" + v.labels.at("root_port");
        }
        return roots == want_roots && victims == want_victims;
      },
      120s, 500ms);
  EXPECT_EQ(roots, want_roots);
  EXPECT_EQ(victims, want_victims);
  ASSERT_TRUE(settled) << Logs();
  const auto count = prom::Query(
      prom_port_,
      "fabric:roce_switch_congestion_root_victims:count{root_guid=\"leaf1\"}");
  ASSERT_TRUE(count && count->size() == 1);
  EXPECT_EQ(count->front().value, 3);
  // The paused ports page on their own too (held back by the markers in
  // Alertmanager: inhibit_alertmanager_test).
  EXPECT_TRUE(WaitFor(
      [&] { return Firing("FabricSwitchPortCongestion").size() >= 4; }, 30s));

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
