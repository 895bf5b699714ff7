// Congestion trees end to end on the in-house simulator (issue 42): a real
// `fabricmon-sim --mad-socket` plays a congestion scenario routed by its
// LFTs; a real fabricmon daemon reading host0's tree sweeps the simulated
// switches through that socket (fabric collector) and must export the
// right root, its cause and its victims (fabric_congestion_root,
// fabric_congestion_victim). The oracle is the model (simulator/model.h):
// which switch port faces the slow HCA, which uplink the LFT loads. RoCE:
// the PFC storm scenario with a daemon per host and a real Prometheus
// evaluating the shipped rules names the NIC that started it
// (FabricCongestionRoot, cause pfc_origin).
#include <gtest/gtest.h>

#include <cinttypes>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "simulator/model.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/paths.h"
#include "tests/support/prom_api.h"
#include "tests/support/sim_host_config.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace fabric::testing {
namespace {

namespace fs = std::filesystem;
using Samples = std::map<std::string, double>;

constexpr int kHosts = 3;

std::string Guid(std::uint64_t g) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, g);
  return buf;
}

// The model's switch port `num` of `sw`.
const ::fabric::sim::Port& SwitchPort(const ::fabric::sim::Cluster& c,
                                      const std::string& sw, int num) {
  for (const auto& p : c.ports()) {
    if (p.host < 0 && p.device == sw && p.port_num == num) return p;
  }
  ADD_FAILURE() << sw << " port " << num;
  return c.ports()[0];
}

class SimCongestion : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tmp_.path(); }
  void TearDown() override {
    prometheus_.reset();
    daemon_.reset();
    others_.clear();
    sim_.reset();
  }

  // Starts fabricmon-sim on `timeline` and a daemon sweeping its switches
  // every second; returns the daemon's HTTP port (0 on failure).
  int Start(const std::string& timeline) {
    if (!StartSim(timeline)) return 0;
    return StartDaemon(0, &daemon_, /*fabric=*/true);
  }

  // Start() on the shipped scenarios/`name`.yaml (their switches are
  // Quantum-2s: the per-ASIC PortXmitWait tick, 64-bit counter).
  int StartScenario(const std::string& name) {
    timeline_ = ReadFile(SourceDir() + "/scenarios/" + name + ".yaml");
    return Start(timeline_);
  }
  // The simulator's model of what StartScenario() plays.
  ::fabric::sim::SimConfig Model() const {
    ::fabric::sim::SimConfig config;
    config.hosts = kHosts;
    std::string error;
    auto timeline = ::fabric::sim::ParseTimeline(timeline_, &error);
    EXPECT_TRUE(timeline) << error;
    if (timeline) config.timeline = *timeline;
    EXPECT_TRUE(config.timeline.quantum_switches)
        << "the shipped scenarios play Quantum-2 switches (DeviceID 54002)";
    return config;
  }

  // fabricmon-sim on `timeline` (YAML text), kHosts hosts, MADs on a
  // socket; false (and a failure) when it does not come up.
  bool StartSim(const std::string& timeline) {
    const fs::path file = dir_ / "timeline.yaml";
    std::ofstream(file) << timeline;
    sim_ = std::make_unique<sim::Session>(
        Binary("fabricmon-sim") + " --out " + (dir_ / "sim").string() +
            " --hosts " + std::to_string(kHosts) + " --timeline " +
            file.string() + " --mad-socket " + Socket().string(),
        (dir_ / "sim.log").string());
    if (!WaitFor(
            [&] {
              return fs::exists(Socket()) &&
                     fs::exists(dir_ / "sim" /
                                ("host" + std::to_string(kHosts - 1)));
            },
            std::chrono::seconds(30))) {
      ADD_FAILURE() << "no simulator: " << ReadFile(dir_ / "sim.log");
      return false;
    }
    return true;
  }

  // A daemon reading host `host`'s tree (into `*session`); with `fabric`
  // it also sweeps the simulated switches every second. Its HTTP port, 0
  // on failure.
  int StartDaemon(int host, std::unique_ptr<sim::Session>* session,
                  bool fabric) {
    const std::string name = "host" + std::to_string(host);
    const fs::path root = dir_ / "sim" / name;
    const fs::path config = dir_ / ("fabricmon-" + name + ".yaml");
    std::ofstream(config) << SimHostConfig(root)
                          << "  sm:\n    interval: 1s\n    timeout: 900ms\n"
                          << "  fabric:\n    enabled: "
                          << (fabric ? "true" : "false") << "\n"
                          << "    interval: 1s\n    timeout: 900ms\n"
                          << "    discovery_interval: 10s\n";
    const fs::path log = Log(host);
    *session = std::make_unique<sim::Session>(
        Binary("fabricmon") + " --config " + config.string() +
            " --sysfs.root " + root.string() + " --sim.mad-socket " +
            Socket().string() + " --web.listen-address 127.0.0.1:0",
        log.string());
    int port = 0;
    WaitFor(
        [&] {
          std::smatch m;
          const std::string text = ReadFile(log);
          if (!std::regex_search(text, m,
                                 std::regex(R"(listening on [^\s]*:(\d+))"))) {
            return false;
          }
          port = std::stoi(m[1]);
          return true;
        },
        std::chrono::seconds(30));
    if (port == 0) ADD_FAILURE() << "no daemon: " << ReadFile(log);
    return port;
  }

  fs::path Socket() const { return dir_ / "mad.sock"; }
  fs::path Log(int host) const {
    return host == 0
               ? dir_ / "fabricmon.log"
               : dir_ / ("fabricmon-host" + std::to_string(host) + ".log");
  }

  // Scrapes until a root is exported and every series in `want` (a
  // substring of one series each) is there: the victims' tables are read
  // after their roots' (collectors/fabric_tree.h), a sweep or two later.
  Samples Roots(int port, const std::vector<std::string>& want = {}) {
    const auto s = ScrapeUntil(
        port,
        [&](const Samples& x) {
          bool root = false;
          std::size_t seen = 0;
          for (const auto& [k, v] : x) {
            if (v != 1) continue;
            root |= k.rfind("fabric_congestion_root{", 0) == 0;
            for (const auto& w : want) seen += k.find(w) != std::string::npos;
          }
          return root && seen >= want.size();
        },
        std::chrono::seconds(120));
    if (!s) {
      ADD_FAILURE() << "no root exported; log:\n"
                    << ReadFile(dir_ / "fabricmon.log");
      return {};
    }
    return *s;
  }

  // Exactly one root in `s`: `root`, with `cause`.
  static void ExpectOneRoot(const Samples& s, const std::string& cause,
                            const ::fabric::sim::Port& root) {
    const std::vector<std::string> roots =
        Prefixed(s, "fabric_congestion_root{");
    ASSERT_EQ(roots.size(), 1u) << ::testing::PrintToString(roots);
    EXPECT_NE(roots[0].find("cause=\"" + cause + "\""), std::string::npos)
        << roots[0];
    EXPECT_NE(roots[0].find("port=\"" + std::to_string(root.port_num) + "\""),
              std::string::npos)
        << roots[0];
    EXPECT_NE(roots[0].find("switch_guid=\"" + Guid(root.guid) + "\""),
              std::string::npos)
        << roots[0];
  }

  static std::vector<std::string> Prefixed(const Samples& s,
                                           const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& [k, v] : s) {
      if (k.rfind(prefix, 0) == 0 && v == 1) out.push_back(k);
    }
    return out;
  }
  testing::TempDir tmp_{"fabricmon-sim-congestion"};

  fs::path dir_;
  std::unique_ptr<sim::Session> sim_, daemon_, prometheus_;
  std::vector<std::unique_ptr<sim::Session>> others_;  // hosts 1.. daemons
  std::string timeline_;                               // StartScenario()'s
};

TEST_F(SimCongestion, SlowReceiverIsTheRootAndItsFeedersItsVictims) {
  const int port = StartScenario("congestion-slow-receiver");
  ASSERT_GT(port, 0);
  const ::fabric::sim::Cluster model(Model());  // what fabricmon-sim runs
  const auto& root = SwitchPort(model, "ib-leaf0", 1);  // faces host0 mlx5_0
  // Its victims on the LFT route from ib-leaf1's hosts: the spine's port
  // to ib-leaf0 and ib-leaf1's uplink, each naming the root.
  std::vector<std::string> victims;
  for (const auto* victim : {&SwitchPort(model, "ib-spine", 1),
                             &SwitchPort(model, "ib-leaf1", kHosts + 1)}) {
    victims.push_back("fabric_congestion_victim{port=\"" +
                      std::to_string(victim->port_num) + "\",root_guid=\"" +
                      Guid(root.guid) + "\",root_port=\"1\",switch=\"" +
                      victim->device + "\"");
  }
  const Samples s = Roots(port, victims);
  ExpectOneRoot(s, "slow_receiver", root);
  for (const std::string& want : victims) {
    bool found = false;
    for (const auto& v : Prefixed(s, "fabric_congestion_victim{")) {
      found |= v.rfind(want, 0) == 0;
    }
    EXPECT_TRUE(found) << want << "\n"
                       << ::testing::PrintToString(
                              Prefixed(s, "fabric_congestion_victim{"));
  }
}

TEST_F(SimCongestion, UnbalancedUplinkIsTheRootTheIdleOneIsNot) {
  const int port = StartScenario("congestion-unbalanced");
  ASSERT_GT(port, 0);
  const ::fabric::sim::Cluster model(Model());
  ExpectOneRoot(Roots(port), "unbalanced",
                SwitchPort(model, "ib-leaf0", kHosts + 2));
}

// All of every host's mlx5_0 traffic goes up ib-leaf0's one uplink: it runs
// at line rate and waits; nothing past it does.
TEST_F(SimCongestion, OversubscribedUplinkIsTheRoot) {
  const int port = StartScenario("congestion-oversubscribed");
  ASSERT_GT(port, 0);
  const ::fabric::sim::Cluster model(Model());
  ExpectOneRoot(Roots(port), "oversubscribed",
                SwitchPort(model, "ib-leaf0", kHosts + 1));
}

// The simulator's default Quantum-2 switches count a PortXmitWait tick per
// 8 bytes: a root facing a slow receiver at NDR passes 2^32 ticks within a
// second, where the 32-bit PortCounters field saturates. The simulator's
// PMA advertises IsAddlPortCountersExtendedSupported (ClassPortInfo
// CapabilityMask2 bit 1), so the daemon exports the 64-bit PortXmitWait of
// PortCountersExtended: beyond 2^32, no saturation flag, and the port's
// wait seconds keep growing past the 0.69 s that 2^32 ticks hold at NDR.
TEST_F(SimCongestion, QuantumRootWaitPasses2To32WithoutSaturating) {
  const int port = Start(
      "traffic: {load: 0.1}\n"
      "events:\n  - scenario: steady\n  - scenario: slow-receiver\n");
  ASSERT_GT(port, 0);
  ::fabric::sim::SimConfig config;
  config.hosts = kHosts;
  ASSERT_TRUE(config.timeline.quantum_switches);
  const ::fabric::sim::Cluster model(config);
  const auto& root = SwitchPort(model, "ib-leaf0", 1);
  const std::string labels = "{port=\"1\",switch=\"ib-leaf0\",switch_guid=\"" +
                             Guid(root.guid) + "\"}";
  const std::string ticks = "fabric_switch_port_transmit_wait_total" + labels;
  const std::string secs =
      "fabric_switch_port_transmit_wait_seconds_total" + labels;
  constexpr double kTwo32 = 4294967296.0;
  const auto s = ScrapeUntil(
      port,
      [&](const Samples& x) {
        auto t = x.find(ticks), w = x.find(secs);
        return t != x.end() && t->second > 4 * kTwo32 && w != x.end() &&
               w->second > 2.0;
      },
      std::chrono::seconds(120));
  ASSERT_TRUE(s) << "no wait beyond 2^32 exported; log:\n"
                 << ReadFile(dir_ / "fabricmon.log");
  for (const auto& [k, v] : *s) {
    if (k.rfind("fabric_switch_port_counters_saturated{counter=\"port_xmit_"
                "wait\"",
                0) == 0) {
      ADD_FAILURE() << "PortXmitWait exported as saturated: " << k;
    }
  }
}

// RoCE: the simulator's PFC storm (the shipped scenarios/pfc-storm-relay.yaml):
// host0's NIC stalls and pauses its switch port; the hosts that port then
// pauses relay weaker pauses of their own, hop by hop. A host's pause
// counters are only in its own daemon, so the origin is found in
// Prometheus: one daemon per host, a real Prometheus scraping them and
// evaluating the shipped rules (`for:` 2 s, windows 20 s). Exactly one
// FabricCongestionRoot with cause pfc_origin fires, for host0's RoCE port
// (mlx5_bond_0, the scenario's target), none for the relaying hosts, and
// its value counts the hosts that are paused.
TEST_F(SimCongestion, PfcStormOriginIsTheRootInPrometheus) {
  if (access("/usr/bin/prometheus", X_OK) != 0) {
    MISSING_DEPENDENCY("no /usr/bin/prometheus");
  }
  ASSERT_TRUE(
      StartSim(ReadFile(SourceDir() + "/scenarios/pfc-storm-relay.yaml")));
  std::vector<std::string> targets;
  for (int h = 0; h < kHosts; ++h) {
    std::unique_ptr<sim::Session>* session = &daemon_;
    if (h > 0) session = &others_.emplace_back();
    const int port = StartDaemon(h, session, /*fabric=*/false);
    ASSERT_GT(port, 0);
    targets.push_back("127.0.0.1:" + std::to_string(port));
  }
  prom::WriteFastRules(dir_, /*short_windows=*/true);
  std::ofstream(dir_ / "prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "rule_files:\n  - recording_rules.yml\n  - alerting_rules.yml\n"
      << "scrape_configs:\n  - job_name: fabricmon\n    static_configs:\n"
      << "      - targets: ['" << targets[0] << "', '" << targets[1] << "', '"
      << targets[2] << "']\n";
  const int prom_port = FreeLoopbackPort();
  prometheus_ = sim::StartPrometheus(dir_, prom_port);
  // The storm lasts 8 s of every 30 s; the root's alert fires within the
  // first storm or the next.
  std::vector<prom::Alert> roots;
  const bool fired = WaitFor(
      [&] {
        roots.clear();
        for (const auto& a : prom::Alerts(prom_port)) {
          if (a.name == "FabricCongestionRoot" && a.state == "firing") {
            roots.push_back(a);
          }
        }
        return !roots.empty();
      },
      std::chrono::seconds(120));
  ASSERT_TRUE(fired) << "FabricCongestionRoot never fired; prometheus:\n"
                     << ReadFile(dir_ / "prometheus.log");
  ASSERT_EQ(roots.size(), 1u);
  const auto& l = roots[0].labels;
  EXPECT_EQ(l.at("cause"), "pfc_origin");
  EXPECT_EQ(l.at("instance"), targets[0]);
  EXPECT_EQ(l.at("device"), "mlx5_bond_0");
  EXPECT_EQ(l.at("port"), "1");
  // root_guid/root_port carry its identity for the inhibit rules.
  EXPECT_EQ(l.at("root_guid"), targets[0]);
  EXPECT_EQ(l.at("root_port"), "mlx5_bond_0");
  // The relays are paused (their victims' side) and send pauses too, but
  // fewer than they receive: not origins.
  const auto origins =
      prom::Query(prom_port, "fabric:congestion_pfc_origin:ratio");
  ASSERT_TRUE(origins);
  for (const auto& o : *origins) {
    EXPECT_EQ(o.labels.at("instance"), targets[0]) << o.labels.at("instance");
  }
  const auto paused =
      prom::Query(prom_port, "fabric:pfc_pause_rx_ratio:rate5m{instance=\"" +
                                 targets[1] + "\"}");
  ASSERT_TRUE(paused && !paused->empty());
  double most = 0;
  for (const auto& p : *paused) most = std::max(most, p.value);
  EXPECT_GT(most, 0.01) << "host1 is not paused";
  const auto count =
      prom::Query(prom_port, "fabric:congestion_pfc_paused_hosts:count");
  ASSERT_TRUE(count && count->size() == 1);
  EXPECT_GE(count->front().value, 1) << "no paused host counted";
}

}  // namespace
}  // namespace fabric::testing
