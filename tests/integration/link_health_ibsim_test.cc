// Issue 28's link-health alerts on a real fabric: ibsim (FatTreeNetfile(4,
// 6): leaf0..leaf2, spine0, hca0..hca5; hca2 and hca5 on leaf2, every leaf's
// port 3 to spine0) with a real OpenSM, the real fabricmon daemon attached as
// hca1 sweeping every second, and a real Prometheus scraping it every second
// with the shipped recording and alerting rules. The rules are a TEST COPY:
// every `for:` is shortened to 2s and every group runs every second (as
// tests/integration/alerts_e2e_test.cc and scripts/demo.sh do), so an alert
// fires within seconds of its condition instead of minutes; the expressions
// and thresholds are the shipped ones.
//
//  - LinkDowngraded: one uplink (leaf2[3] - spine0[3]) whose ends' enabled
//    speeds differ in the topology file trains at SDR while both ends can do
//    DDR; FabricPortLinkDowngraded fires for its two ports and no other.
//    The daemon's own host link (hca1[1] - leaf1[1]) gets different enabled
//    speeds too: collector ib_link reads both of its ends (the far end one
//    hop out) as the sweep reads the switch end. It cannot be made to run
//    below them on ibsim: OpenSM's PortInfo Set to a CA port makes ibsim
//    0.10 retrain the link at the CA's own fastest enabled speed (checked
//    with smpquery before and after OpenSM: SDR, then QDR), so it runs AT
//    the host's best and the rules must stay quiet for it. The host-side
//    downgrade fires on the simulator (alerts_e2e_test) and in promtool
//    (host_link_health_test.yml). ibsim has no PESC: the host's PMA is
//    counted unsupported.
//  - Flapping: leaf2[1] unlinked and relinked three times fires
//    FabricPortFlapping for that port only, from the link-downs the sweep
//    itself saw (ibsim never counts LinkDownedCounter): the test waits for
//    the sweep to see each down before relinking, so a 1 s sweep sees all
//    three.
//  - Unresponsive: `Error "leaf2" 100` makes leaf2 drop every MAD;
//    FabricSwitchUnresponsive fires for leaf2 only, and the other switches
//    keep answering every sweep.
//
// Waits poll with generous bounds (against a hung stack, not timing).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "tests/integration/fabricmon_run.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
using Samples = std::map<std::string, double>;
// (switch, port) of an alert; port "" for a per-switch alert.
using Where = std::set<std::pair<std::string, std::string>>;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

// FatTreeNetfile(4, 6) with leaf2's uplink (leaf2[3] - spine0[3]) given
// different enabled speeds at its two ends: leaf2[3] `s=5` (SDR|QDR),
// spine0[3] `s=3` (SDR|DDR). ibsim (sim_net.c parse_port_opt: w= width,
// s= speed, e= extended speed, each the PortInfo *Enabled mask) trains a
// link at the best speed both ends enable, SDR here, while each end's
// Supported & Enabled says QDR and DDR: the best both support is DDR, so the
// link runs below it. Width cannot do this in ibsim 0.10: `w=9` (1x|12x)
// against `w=3` (1x|4x) does train 1x, but OpenSM's PortInfo Set echoes
// LinkWidthEnabled back and ibsim's Set handler (sim_mad.c) then retrains
// the link at the widest width of the port being set, 4x here, which is
// what both ends support: checked with smpquery after OpenSM came up.
// Speed survives OpenSM, whose Set carries LinkSpeedEnabled 15 ("set to
// supported"), which ibsim ignores.
//
// The daemon's own link (hca1[1] - leaf1[1]) gets the same masks, hca1[1]
// `s=5`, leaf1[1] `s=3`: OpenSM's Set then retrains it at QDR (above).
std::string DowngradedNetfile() {
  std::string net = FatTreeNetfile(4, 6);
  const auto add = [&](const std::string& line, const std::string& opt) {
    const auto at = net.find(line);
    EXPECT_NE(at, std::string::npos) << line;
    if (at != std::string::npos) net.insert(at + line.size(), opt);
  };
  add("[3]\t\"spine0\"[3]", "\ts=5");  // in leaf2's section
  add("[3]\t\"leaf2\"[3]", "\ts=3");   // in spine0's section
  add("[1]\t\"leaf1\"[1]", "\ts=5");   // in hca1's section
  add("[1]\t\"hca1\"[1]", "\ts=3");    // in leaf1's section
  return net;
}

class LinkHealthIbsim : public ::testing::Test {
 protected:
  explicit LinkHealthIbsim(std::string netfile = FatTreeNetfile(4, 6))
      : fabric_(std::move(netfile)) {}

  // ibsim, OpenSM (on hca0, under leaf0), the daemon (hca1, under leaf1:
  // its MADs to leaf0 and spine0 never pass through leaf2) and Prometheus.
  void SetUp() override {
    FABRIC_START_IBSIM(fabric_);
    if (!std::filesystem::exists("/usr/bin/prometheus")) {
      MISSING_DEPENDENCY("/usr/bin/prometheus not installed");
    }
    fabric_.StartOpenSm({.sim_host = "hca0", .priority = 10});
    ASSERT_TRUE(fabric_.WaitForMaster(60s, "hca1"));
    daemon_port_ = FreeLoopbackPort();
    const std::string config = fabric_.dir() + "/fabricmon.yaml";
    // discovery_interval 10m: one topology for the whole test, so a switch
    // that stops answering stays in it (what FabricSwitchUnresponsive is
    // about).
    std::ofstream(config) << SmFabricConfig(daemon_port_, "10m");
    daemon_ = fabric_.StartClient({Binary("fabricmon"), "--config", config},
                                  "hca1", fabric_.dir() + "/fabricmon.log");
    ASSERT_GT(daemon_, 0);
    // Every linked switch port swept once: 6 HCA cables + 3 uplinks x 2.
    ScrapeUntil([](const Samples& s) {
      int linked = 0;
      for (const auto& [k, v] : s) {
        linked += k.rfind("fabric_switch_port_link_info{", 0) == 0;
      }
      return linked == 12;
    });
    StartPrometheus();
  }

  void StartPrometheus() {
    const std::string dir = fabric_.dir();
    // TEST COPY of the shipped rules: `for:` 2s, every group every 1s.
    for (const char* f : {"recording_rules.yml", "alerting_rules.yml"}) {
      std::string text = ReadText(SourceDir() + "/dashboards/prometheus/" + f);
      text = std::regex_replace(text, std::regex(R"(\bfor: \w+)"), "for: 2s");
      text = std::regex_replace(text, std::regex(R"(\binterval: \w+)"),
                                "interval: 1s");
      std::ofstream(dir + "/" + f) << text;
    }
    std::ofstream(dir + "/prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "rule_files:\n  - recording_rules.yml\n  - alerting_rules.yml\n"
        << "scrape_configs:\n  - job_name: fabricmon\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << daemon_port_ << "']\n";
    prom_port_ = FreeLoopbackPort();
    prometheus_ = sim::StartPrometheus(dir, prom_port_);
    ASSERT_TRUE(PromUntil("up{job=\"fabricmon\"} == 1", [](const auto& r) {
      return r.size() == 1;
    })) << ReadText(dir + "/prometheus.log");
  }

  void TearDown() override {
    prometheus_.reset();  // kills its session
    if (daemon_ > 0) fabric_.StopClient(daemon_);
  }

  Samples ScrapeUntil(const std::function<bool(const Samples&)>& pred,
                      std::chrono::seconds bound = 120s) {
    if (auto s = testing::ScrapeUntil(daemon_port_, pred, bound)) return *s;
    ADD_FAILURE() << "condition not reached; log:\n"
                  << ReadText(fabric_.dir() + "/fabricmon.log");
    return {};
  }

  // Polls an instant query until `pred` holds for its result; nullopt after
  // `bound`.
  std::optional<std::vector<sim::Sample>> PromUntil(
      const std::string& expr,
      const std::function<bool(const std::vector<sim::Sample>&)>& pred,
      std::chrono::seconds bound = 150s) {
    const auto end = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < end) {
      if (auto r = sim::PromQuery(prom_port_, expr); r && pred(*r)) return r;
      std::this_thread::sleep_for(500ms);
    }
    return std::nullopt;
  }

  // Where `alert` is firing now: (switch, port), or for a host port
  // ("host " + device, port).
  Where Firing(const std::string& alert) {
    Where out;
    const auto r = sim::PromQuery(prom_port_, "ALERTS{alertname=\"" + alert +
                                                  "\",alertstate=\"firing\"}");
    if (!r) return {{"<prometheus did not answer>", ""}};
    for (const auto& s : *r) {
      const auto sw = s.labels.find("switch");
      const auto device = s.labels.find("device");
      const auto port = s.labels.find("port");
      out.insert({sw != s.labels.end()       ? sw->second
                  : device != s.labels.end() ? "host " + device->second
                                             : "<no switch or device label>",
                  port == s.labels.end() ? "" : port->second});
    }
    return out;
  }

  // Waits until `alert` fires for `want`, then checks it fires nowhere
  // else.
  void ExpectFiresExactly(const std::string& alert, const Where& want) {
    const auto fired =
        PromUntil("ALERTS{alertname=\"" + alert + "\",alertstate=\"firing\"}",
                  [&](const auto& r) { return r.size() >= want.size(); });
    ASSERT_TRUE(fired) << alert << " never fired; prometheus log:\n"
                       << ReadText(fabric_.dir() + "/prometheus.log");
    EXPECT_EQ(Firing(alert), want) << alert;
  }

  IbsimFabric fabric_;
  pid_t daemon_ = -1;
  int daemon_port_ = 0;
  int prom_port_ = 0;
  std::unique_ptr<sim::Session> prometheus_;
};

// The switch_guid label of switch `name` in a scrape.
std::string SwitchGuid(const Samples& s, const std::string& name) {
  const std::regex re("^fabric_switch_info\\{.*switch=\"" + name +
                      "\",switch_guid=\"([^\"]+)\"");
  for (const auto& [k, v] : s) {
    std::smatch m;
    if (std::regex_search(k, m, re)) return m[1];
  }
  return "<no fabric_switch_info for " + name + ">";
}

class LinkHealthDowngradedIbsim : public LinkHealthIbsim {
 protected:
  LinkHealthDowngradedIbsim() : LinkHealthIbsim(DowngradedNetfile()) {}
};

TEST_F(LinkHealthDowngradedIbsim, SpeedBelowBothEndsFiresForThatLinkOnly) {
  // What the sweep and ib_link read (lane rates in bytes/s: SDR 2.5 Gb/s,
  // DDR 5, QDR 10): the uplink at SDR, leaf2's end capable of QDR,
  // spine0's of DDR; the host link at QDR (ibsim's retrain), hca1's end
  // capable of QDR, leaf1's of DDR, read by the host one hop out.
  const auto has = [](const Samples& x, const std::string& prefix) {
    for (const auto& [k, v] : x) {
      if (k.rfind(prefix, 0) == 0) return true;
    }
    return false;
  };
  const Samples s = ScrapeUntil([&](const Samples& x) {
    return has(x,
               "fabric_switch_port_lane_rate_capable_bytes_per_second{"
               "port=\"3\",switch=\"spine0\"") &&
           has(x, "fabric_port_remote_lane_rate_capable_bytes_per_second{");
  });
  std::string device;  // the daemon's CA as libibumad names it
  for (const auto& [k, v] : s) {
    const bool leaf2 = k.find("port=\"3\",switch=\"leaf2\"") != k.npos;
    const bool spine = k.find("port=\"3\",switch=\"spine0\"") != k.npos;
    const bool leaf1 = k.find("port=\"1\",switch=\"leaf1\"") != k.npos;
    if (k.rfind("fabric_switch_port_lane_rate_bytes_per_second{", 0) == 0 &&
        (leaf2 || spine || leaf1)) {
      EXPECT_EQ(v, leaf1 ? 10e9 / 8 : 2.5e9 / 8) << k;
    }
    if (k.rfind("fabric_switch_port_lane_rate_capable_bytes_per_second{", 0) ==
        0) {
      EXPECT_EQ(v, leaf2              ? 10e9 / 8
                   : (spine || leaf1) ? 5e9 / 8
                                      : 2.5e9 / 8)
          << k;
    }
    // The host's own port: ib_link.
    std::smatch m;
    static const std::regex kHostRate(
        R"re(^fabric_port_lane_rate_bytes_per_second\{device="([^"]+)",port="1"\})re");
    if (std::regex_search(k, m, kHostRate)) {
      device = m[1];
      EXPECT_EQ(v, 10e9 / 8) << k;
    }
    if (k.rfind("fabric_port_lane_rate_capable_bytes_per_second{", 0) == 0) {
      EXPECT_EQ(v, 10e9 / 8) << k;
    }
    if (k.rfind("fabric_port_remote_lane_rate_capable_bytes_per_second{", 0) ==
        0) {
      EXPECT_EQ(v, 5e9 / 8) << k;
    }
    // ibsim's PMA has no PESC: counted, nothing exported.
    EXPECT_EQ(k.rfind("fabric_port_fec_", 0), std::string::npos) << k;
  }
  ASSERT_FALSE(device.empty()) << "no fabric_port_lane_rate_bytes_per_second";
  const auto unsupported = s.find("fabric_ib_link_pesc_unsupported_ports");
  ASSERT_NE(unsupported, s.end());
  EXPECT_EQ(unsupported->second, 1);
  // The rules had every linked switch port to judge (its expected rate
  // recorded), so "no other port" below is a verdict, not missing data.
  ASSERT_TRUE(
      PromUntil("fabric:switch_port_expected_lane_rate_bytes_per_second",
                [](const auto& r) { return r.size() >= 12; }));
  // The host's port was judged too: the lower of its two ends' best.
  ASSERT_TRUE(
      PromUntil("fabric:port_expected_lane_rate_bytes_per_second{device=\"" +
                    device + "\"} == 625000000",
                [](const auto& r) { return r.size() == 1; }));
  ExpectFiresExactly("FabricPortLinkDowngraded",
                     {{"leaf2", "3"}, {"spine0", "3"}});
  const auto what =
      sim::PromQuery(prom_port_, "fabric:switch_port_link_downgraded");
  ASSERT_TRUE(what);
  for (const auto& r : *what) EXPECT_EQ(r.labels.at("what"), "speed");
  const auto host = sim::PromQuery(prom_port_, "fabric:port_link_downgraded");
  ASSERT_TRUE(host);
  EXPECT_TRUE(host->empty());
}

TEST_F(LinkHealthIbsim, RepeatedUnlinkReLinkFiresFlappingForThatPortOnly) {
  const std::string sel = "port=\"1\",switch=\"leaf2\"";
  const std::string state = "fabric_switch_port_state{" + sel;
  const auto port_state = [&](const Samples& x) -> std::optional<double> {
    for (const auto& [k, v] : x) {
      if (k.rfind(state, 0) == 0) return v;
    }
    return std::nullopt;
  };
  // Prometheus holds the sweep's count at 0 before the first flap, so
  // increase() sees all three.
  ASSERT_TRUE(PromUntil(
      "fabric_switch_port_link_down_transitions_total{switch=\"leaf2\","
      "port=\"1\"} == 0",
      [](const auto& r) { return r.size() == 1; }));
  for (int flap = 1; flap <= 3; ++flap) {
    fabric_.Console("Unlink \"leaf2\"[1]");
    // The sweep sees the port go down (PortInfo by directed route, at the
    // port's turn: within port_info_every sweeps, as ibsim's own counter
    // says nothing) and counts it; ibsim (0.10 and upstream HEAD) never
    // touches LinkDownedCounter on Unlink, so the switch's own count stays
    // 0. Once seen down, the port is read every sweep until it is back.
    const Samples down = ScrapeUntil([&](const Samples& x) {
      const auto v = port_state(x);
      return v && *v != 4;
    });
    const auto seen =
        down.find("fabric_switch_port_link_down_transitions_total{" + sel +
                  "," + "switch_guid=\"" + SwitchGuid(down, "leaf2") + "\"}");
    ASSERT_NE(seen, down.end());
    EXPECT_EQ(seen->second, flap);
    fabric_.Console("ReLink \"leaf2\"[1]");
    // OpenSM brings it back to ACTIVE (trap 128, then its sweep).
    ScrapeUntil([&](const Samples& x) { return port_state(x) == 4.0; });
  }
  ExpectFiresExactly("FabricPortFlapping", {{"leaf2", "1"}});
}

TEST_F(LinkHealthIbsim, ErrorOnOneSwitchFiresUnresponsiveAndSweepGoesOn) {
  const std::string answer = fabric_.Console("Error \"leaf2\" 100");
  EXPECT_EQ(answer.find("not found"), std::string::npos) << answer;
  ExpectFiresExactly("FabricSwitchUnresponsive", {{"leaf2", ""}});

  // The same sweep that counts leaf2 unanswered read every other switch:
  // each answered in the latest sweep (unanswered_sweeps 0) with every port.
  const Samples s = ScrapeUntil([](const Samples& x) {
    for (const auto& [k, v] : x) {
      if (k.rfind("fabric_switch_unanswered_sweeps{", 0) == 0 &&
          k.find("switch=\"leaf2\"") != k.npos) {
        return v >= 3;
      }
    }
    return false;
  });
  std::map<std::string, int> port_series;
  int switches = 0;
  for (const auto& [k, v] : s) {
    const std::smatch m = [&] {
      std::smatch r;
      std::regex_search(k, r, std::regex("switch=\"([a-z0-9]+)\""));
      return r;
    }();
    if (m.empty()) continue;
    const std::string sw = m[1];
    if (k.rfind("fabric_switch_unanswered_sweeps{", 0) == 0) {
      ++switches;
      if (sw != "leaf2") {
        EXPECT_EQ(v, 0) << k;
      }
    }
    if (k.rfind("fabric_switch_port_state{", 0) == 0) ++port_series[sw];
    if (k.rfind("fabric_switch_mad_failures_total{", 0) == 0) {
      if (sw == "leaf2") {
        EXPECT_GT(v, 0) << k;
      }
    }
  }
  EXPECT_EQ(switches, 4);
  EXPECT_EQ(port_series["leaf0"], 3);
  EXPECT_EQ(port_series["leaf1"], 3);
  EXPECT_EQ(port_series["spine0"], 3);
  EXPECT_EQ(port_series.count("leaf2"), 0u);  // nothing it did not answer
  const auto ok = s.find("fabric_collector_success{collector=\"fabric\"}");
  ASSERT_NE(ok, s.end());
  EXPECT_EQ(ok->second, 1);
}

}  // namespace
}  // namespace fabric::testing
