// The sm and fabric collectors in the real fabricmon binary, attached to
// ibsim as hca1 under umad2sim, against real OpenSM and infiniband-diags:
// `--once` agrees with sminfo / ibswitches / ibnetdiscover and passes
// `promtool check metrics`; the daemon's sweeps see PerformanceSet values
// exactly (data x4), a PortXmitWait stuck at 2^32-1 as saturated, and an
// Unlinked port within port_info_every sweeps (no re-discovery; ibsim's
// LinkDownedCounter never counts, so the port's PortInfo turn is what sees
// it, sources/mad/sweep.h); a killed master SM
// shows up as a failover to the standby with the collector still healthy.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "tests/integration/fabricmon_run.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

using Samples = std::map<std::string, double>;

std::optional<double> Get(const Samples& s, const std::string& series) {
  auto it = s.find(series);
  if (it == s.end()) return std::nullopt;
  return it->second;
}

std::string SminfoGuid(IbsimFabric& fabric) {
  const std::string out = fabric.Run({"sminfo"}, "hca2").out;
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("sm guid 0x([0-9a-f]+),"))) {
    return "";
  }
  char g[24];
  std::snprintf(g, sizeof(g), "0x%016llx",
                std::stoull(m[1].str(), nullptr, 16));
  return g;
}

class SmFabricIbsim : public ::testing::Test {
 protected:
  SmFabricIbsim() : fabric_(FatTreeNetfile(4, 6)) {}

  void SetUp() override { FABRIC_START_IBSIM(fabric_); }

  // discovery_interval 10m: a test sees sweeps only, no re-discovery.
  std::string WriteConfig(int port, const std::string& discovery = "10m") {
    const std::string path = fabric_.dir() + "/fabricmon.yaml";
    std::ofstream(path) << SmFabricConfig(port, discovery);
    return path;
  }

  // Starts the daemon and waits for a scrape satisfying `until`.
  int StartDaemon(const std::string& discovery = "10m") {
    const int port = FreeLoopbackPort();
    daemon_ = fabric_.StartClient(
        {Binary("fabricmon"), "--config", WriteConfig(port, discovery)}, "hca1",
        fabric_.dir() + "/fabricmon.log");
    EXPECT_GT(daemon_, 0);
    return port;
  }

  // Scrapes until `pred` holds (tests/integration/fabricmon_run.h).
  Samples ScrapeUntil(int port, const std::function<bool(const Samples&)>& pred,
                      std::chrono::seconds bound = std::chrono::seconds(90)) {
    if (auto s = testing::ScrapeUntil(port, pred, bound)) return *s;
    ADD_FAILURE() << "condition not reached; log:\n"
                  << fabric_.Run({"cat", fabric_.dir() + "/fabricmon.log"}).out;
    return {};
  }

  IbsimFabric fabric_;
  pid_t daemon_ = -1;
};

TEST_F(SmFabricIbsim, OnceAgreesWithSminfoIbswitchesIbnetdiscover) {
  fabric_.StartOpenSm({.sim_host = "hca0", .priority = 10});
  ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca1"));
  const ToolOutput once = fabric_.Run(
      {Binary("fabricmon"), "--once", "--config", WriteConfig(0)}, "hca1");
  ASSERT_EQ(once.exit_code, 0) << once.err;
  const Samples s = ParseSamples(once.out);
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"sm\"}"), 1);
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"fabric\"}"), 1);

  const std::string guid = SminfoGuid(fabric_);
  ASSERT_FALSE(guid.empty());
  EXPECT_EQ(Get(s, "fabric_sm_state{sm_guid=\"" + guid + "\"}"), 3);
  EXPECT_EQ(Get(s, "fabric_sm_priority{sm_guid=\"" + guid + "\"}"), 10);
  EXPECT_EQ(Get(s, "fabric_sm_info{node=\"hca0\",sm_guid=\"" + guid +
                       "\",sm_lid=\"1\"}"),
            1)
      << once.out;

  // fabric_switch_info = ibswitches (GUID, name, LID).
  const std::string ibswitches = fabric_.Run({"ibswitches"}, "hca2").out;
  const std::regex sw(
      R"re(Switch\s*: 0x([0-9a-f]+) ports \d+ "([^"]*)" base port 0 lid (\d+))re");
  int switches = 0;
  for (std::sregex_iterator it(ibswitches.begin(), ibswitches.end(), sw), e;
       it != e; ++it, ++switches) {
    char series[160];
    std::snprintf(series, sizeof(series),
                  "fabric_switch_info{lid=\"%s\",switch=\"%s\","
                  "switch_guid=\"0x%016llx\"}",
                  (*it)[3].str().c_str(), (*it)[2].str().c_str(),
                  std::stoull((*it)[1].str(), nullptr, 16));
    EXPECT_EQ(Get(s, series), 1) << series;
  }
  EXPECT_EQ(switches, 4);
  int links = 0;
  for (const auto& [series, v] : s) {
    links += series.rfind("fabric_switch_port_link_info{", 0) == 0;
  }
  EXPECT_EQ(links, 12);  // 6 HCA cables + 3 uplinks seen from both ends
  EXPECT_EQ(Get(s, "fabric_sweep_mads_total{result=\"timeout\"}"), 0);
  EXPECT_EQ(Get(s, "fabric_sweep_unreachable_nodes"), 0);

  if (RunCommand("command -v promtool >/dev/null").exit_code == 0) {
    const std::string file = fabric_.dir() + "/once.prom";
    std::ofstream(file) << once.out;
    const auto check = RunCommand("promtool check metrics < " + file + " 2>&1");
    EXPECT_EQ(check.exit_code, 0) << check.out;
  }
}

TEST_F(SmFabricIbsim, SweepsSeePerformanceSetAndUnlinkWithinPortInfoEvery) {
  // No light sweeps: nothing but fabricmon moves the counters.
  fabric_.StartOpenSm(
      {.sim_host = "hca0", .priority = 10, .sweep_interval = 0});
  ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca1"));
  const int port = StartDaemon();
  const std::string leaf2_p1 = "port=\"1\",switch=\"leaf2\"";
  // First sweep done (discovery is behind us): leaf2 port 1 is there.
  Samples s = ScrapeUntil(port, [&](const Samples& x) {
    for (const auto& [k, v] : x) {
      if (k.rfind("fabric_switch_port_state{" + leaf2_p1, 0) == 0) return true;
    }
    return false;
  });
  // hca2's cable (leaf2 port 1) carries none of the sweep's MADs.
  fabric_.Console(
      "PerformanceSet \"leaf2\"[1] PortCountersExtended.PortXmitData="
      "123456789");
  fabric_.Console(
      "PerformanceSet \"leaf2\"[1] PortCounters.SymbolErrorCounter=77");
  s = ScrapeUntil(port, [&](const Samples& x) {
    for (const auto& [k, v] : x) {
      if (k.rfind("fabric_switch_port_transmit_bytes_total{" + leaf2_p1, 0) ==
              0 &&
          v == 4.0 * 123456789) {
        return true;
      }
    }
    return false;
  });
  bool symbol = false;
  for (const auto& [k, v] : s) {
    if (k.rfind("fabric_switch_port_errors_total{error=\"symbol_error\"," +
                    leaf2_p1,
                0) == 0) {
      EXPECT_EQ(v, 77);
      symbol = true;
    }
  }
  EXPECT_TRUE(symbol);

  // PortXmitWait stuck at its 32-bit maximum (hours of congestion): the
  // value as it is, and the saturation flag for that port and field only.
  fabric_.Console(
      "PerformanceSet \"leaf2\"[1] PortCounters.PortXmitWait=4294967295");
  const std::string stuck =
      "fabric_switch_port_counters_saturated{counter=\"port_xmit_wait\"," +
      leaf2_p1;
  s = ScrapeUntil(port, [&](const Samples& x) {
    for (const auto& [k, v] : x) {
      if (k.rfind(stuck, 0) == 0) return true;
    }
    return false;
  });
  int saturated = 0;
  for (const auto& [k, v] : s) {
    if (k.rfind("fabric_switch_port_counters_saturated{", 0) == 0) {
      ++saturated;
      EXPECT_EQ(k.rfind(stuck, 0), 0u) << k;  // symbol_error 77 is not
      EXPECT_EQ(v, 1);
    }
    if (k.rfind("fabric_switch_port_transmit_wait_total{" + leaf2_p1, 0) == 0) {
      EXPECT_EQ(v, 4294967295.0);
    }
  }
  EXPECT_EQ(saturated, 1);

  // ibsim never counts LinkDownedCounter, so the sweep sees the Unlink at
  // the port's PortInfo turn: within port_info_every (4, the default)
  // sweeps, plus the one under way at the Unlink. Sweeps are counted by
  // their completion times as the scrapes see them (a scrape that misses
  // one only lowers the count).
  fabric_.Console("Unlink \"leaf2\"[1]");
  std::set<double> sweeps;
  s = ScrapeUntil(port, [&](const Samples& x) {
    sweeps.insert(Get(x,
                      "fabric_collector_last_success_timestamp_seconds{"
                      "collector=\"fabric\"}")
                      .value_or(0));
    for (const auto& [k, v] : x) {
      if (k.rfind("fabric_switch_port_state{" + leaf2_p1, 0) == 0 && v != 4) {
        return true;
      }
    }
    return false;
  });
  EXPECT_LE(sweeps.size(), 4u + 2u);  // + the sweep seen before the Unlink
  for (const auto& [k, v] : s) {
    if (k.rfind("fabric_switch_port_link_info{port=\"1\",", 0) == 0 &&
        k.find("switch=\"leaf2\"") != std::string::npos) {
      ADD_FAILURE() << "a down port still has a link: " << k;
    }
  }
  EXPECT_EQ(Get(s, "fabric_collector_success{collector=\"fabric\"}"), 1);
}

TEST_F(SmFabricIbsim, KilledMasterFailsOverToTheStandby) {
  const int master = fabric_.StartOpenSm({.sim_host = "hca0", .priority = 10});
  ASSERT_TRUE(fabric_.WaitForMaster(std::chrono::seconds(60), "hca1"));
  const std::string g0 = SminfoGuid(fabric_);
  fabric_.StartOpenSm({.sim_host = "hca5", .priority = 1});
  // The standby comes up while the daemon runs: re-discover often.
  const int port = StartDaemon("2s");
  // Both SMs (the fabric collector's discovery finds the standby), one
  // MASTER.
  ScrapeUntil(port, [&](const Samples& x) {
    int sms = 0;
    for (const auto& [k, v] : x) sms += k.rfind("fabric_sm_state{", 0) == 0;
    return Get(x, "fabric_sm_state{sm_guid=\"" + g0 + "\"}") == 3.0 &&
           Get(x, "fabric_sm_masters") == 1.0 && sms == 2;
  });
  fabric_.KillOpenSm(master);
  const Samples s = ScrapeUntil(port, [&](const Samples& x) {
    return Get(x, "fabric_sm_master_changes_total") == 1.0 &&
           Get(x, "fabric_collector_success{collector=\"sm\"}") == 1.0;
  });
  const std::string g1 = SminfoGuid(fabric_);
  ASSERT_FALSE(g1.empty());
  EXPECT_NE(g1, g0);
  EXPECT_EQ(Get(s, "fabric_sm_state{sm_guid=\"" + g1 + "\"}"), 3);
  EXPECT_EQ(Get(s, "fabric_sm_priority{sm_guid=\"" + g1 + "\"}"), 1);
  EXPECT_EQ(Get(ScrapeUntil(port,
                            [](const Samples& x) {
                              return Get(x, "fabric_sm_masters") == 1.0;
                            }),
                "fabric_sm_masters"),
            1);
}

}  // namespace
}  // namespace fabric::testing
