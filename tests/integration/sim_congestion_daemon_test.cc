// Congestion trees end to end on the in-house simulator (issue 42): a real
// `fabricmon-sim --mad-socket` plays a congestion scenario routed by its
// LFTs; a real fabricmon daemon reading host0's tree sweeps the simulated
// switches through that socket (fabric collector) and must export the
// right root, its cause and its victims (fabric_congestion_root,
// fabric_congestion_victim). The oracle is the model (simulator/model.h):
// which switch port faces the slow HCA, which uplink the LFT loads.
#include <gtest/gtest.h>

#include <cinttypes>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "simulator/model.h"
#include "tests/integration/fabricmon_run.h"
#include "tests/integration/sim_support.h"
#include "tests/support/paths.h"
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
    daemon_.reset();
    sim_.reset();
  }

  // Starts fabricmon-sim on `timeline` and a daemon sweeping its switches
  // every second; returns the daemon's HTTP port (0 on failure).
  int Start(const std::string& timeline) {
    const fs::path file = dir_ / "timeline.yaml";
    std::ofstream(file) << timeline;
    const fs::path sock = dir_ / "mad.sock", root = dir_ / "sim/host0";
    sim_ = std::make_unique<sim::Session>(
        Binary("fabricmon-sim") + " --out " + (dir_ / "sim").string() +
            " --hosts " + std::to_string(kHosts) + " --timeline " +
            file.string() + " --mad-socket " + sock.string(),
        (dir_ / "sim.log").string());
    if (!WaitFor([&] { return fs::exists(sock) && fs::exists(root); },
                 std::chrono::seconds(30))) {
      ADD_FAILURE() << "no simulator: " << ReadFile(dir_ / "sim.log");
      return 0;
    }
    const fs::path config = dir_ / "fabricmon.yaml";
    std::ofstream(config) << SimHostConfig(root)
                          << "  sm:\n    interval: 1s\n    timeout: 900ms\n"
                          << "  fabric:\n    enabled: true\n"
                          << "    interval: 1s\n    timeout: 900ms\n"
                          << "    discovery_interval: 10s\n";
    const fs::path log = dir_ / "fabricmon.log";
    daemon_ = std::make_unique<sim::Session>(
        Binary("fabricmon") + " --config " + config.string() +
            " --sysfs.root " + root.string() + " --sim.mad-socket " +
            sock.string() + " --web.listen-address 127.0.0.1:0",
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
  std::unique_ptr<sim::Session> sim_, daemon_;
};

TEST_F(SimCongestion, SlowReceiverIsTheRootAndItsFeedersItsVictims) {
  const int port = Start(
      "fabric: {switch_asic: generic}\ntraffic: {load: 0.1}\n"
      "events:\n  - scenario: steady\n  - scenario: slow-receiver\n");
  ASSERT_GT(port, 0);
  ::fabric::sim::SimConfig config;
  config.hosts = kHosts;
  config.timeline.quantum_switches = false;
  const ::fabric::sim::Cluster model(config);  // the fabric fabricmon-sim runs
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
  const std::vector<std::string> roots = Prefixed(s, "fabric_congestion_root{");
  ASSERT_EQ(roots.size(), 1u) << ::testing::PrintToString(roots);
  EXPECT_NE(roots[0].find("cause=\"slow_receiver\""), std::string::npos)
      << roots[0];
  EXPECT_NE(roots[0].find("port=\"1\""), std::string::npos) << roots[0];
  EXPECT_NE(roots[0].find("switch_guid=\"" + Guid(root.guid) + "\""),
            std::string::npos)
      << roots[0];
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
  const int port = Start(
      "fabric: {uplinks: 2, switch_asic: generic}\ntraffic: {load: 0.1}\n"
      "events:\n  - scenario: steady\n  - scenario: unbalanced-links\n");
  ASSERT_GT(port, 0);
  ::fabric::sim::SimConfig config;
  config.hosts = kHosts;
  config.timeline.uplinks = 2;
  config.timeline.quantum_switches = false;
  const ::fabric::sim::Cluster model(config);
  const auto& loaded = SwitchPort(model, "ib-leaf0", kHosts + 2);
  const Samples s = Roots(port);
  const std::vector<std::string> roots = Prefixed(s, "fabric_congestion_root{");
  ASSERT_EQ(roots.size(), 1u) << ::testing::PrintToString(roots);
  EXPECT_NE(roots[0].find("cause=\"unbalanced\""), std::string::npos)
      << roots[0];
  EXPECT_NE(roots[0].find("port=\"" + std::to_string(kHosts + 2) + "\""),
            std::string::npos)
      << roots[0];
  EXPECT_NE(roots[0].find("switch_guid=\"" + Guid(loaded.guid) + "\""),
            std::string::npos)
      << roots[0];
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

}  // namespace
}  // namespace fabric::testing
