// The shipped inhibit rules (dashboards/alertmanager/inhibit_rules.yml) in a
// real Alertmanager (Debian package prometheus-alertmanager): the alerts
// one fault raises are posted with the real `amtool alert add`, and
// Alertmanager's own API says which are suppressed. One fault, one
// notification: a port that is down inhibits its link, error and
// congestion alerts, a degraded link its transmit-wait hotspot, a link
// flap its recoveries, no master SM the failover alert, a switch-port
// flap that port's errors, a congestion root its victims' alerts (IB and
// RoCE switch ports); the same alerts on another port, or a switch port
// that only retrained, stay active. Everything on 127.0.0.1, in a
// temp dir removed at the end; Alertmanager is stopped by pid.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/ci.h"
#include "tests/support/fake_http_server.h"
#include "tests/support/http.h"
#include "tests/support/paths.h"

namespace fabric {
namespace {

namespace fs = std::filesystem;
namespace pt = boost::property_tree;
using namespace std::chrono_literals;

constexpr const char* kAlertmanager = "/usr/bin/prometheus-alertmanager";

int RunShell(const std::string& command, std::string* output) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe) != nullptr) *output += buf;
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// One posted alert: name and labels; key() names it in failure messages.
struct Posted {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string key() const {
    std::string k = name;
    for (const auto& [l, v] : labels) k += " " + l + "=" + v;
    return k;
  }
};

class InhibitAlertmanagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Start(
        "route:\n  receiver: default\n  group_wait: 1h\n"
        "receivers:\n  - name: default\n");
  }

  // Starts Alertmanager with `head` (route and receivers) and the shipped
  // inhibit rules.
  void Start(const std::string& head) {
    if (access(kAlertmanager, X_OK) != 0 ||
        std::system("command -v amtool >/dev/null") != 0) {
      MISSING_DEPENDENCY("prometheus-alertmanager/amtool not installed");
    }
    dir_ = fs::temp_directory_path() /
           ("fabricmon_inhibit_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ifstream rules(testing::SourceDir() +
                        "/dashboards/alertmanager/inhibit_rules.yml");
    std::stringstream text;
    text << rules.rdbuf();
    std::ofstream(dir_ / "alertmanager.yml") << head << text.str();
    port_ = testing::FreeLoopbackPort();
    pid_ = fork();
    if (pid_ == 0) {
      const std::string log = (dir_ / "alertmanager.log").string();
      freopen(log.c_str(), "w", stdout);
      dup2(fileno(stdout), 2);
      const std::string config =
          "--config.file=" + (dir_ / "alertmanager.yml").string();
      const std::string storage = "--storage.path=" + (dir_ / "data").string();
      const std::string listen =
          "--web.listen-address=127.0.0.1:" + std::to_string(port_);
      execl(kAlertmanager, kAlertmanager, config.c_str(), storage.c_str(),
            listen.c_str(), "--cluster.listen-address=", nullptr);
      _exit(127);
    }
    for (int i = 0; i < 100 && !testing::HttpGetOk(port_, "/-/ready"); ++i) {
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_TRUE(testing::HttpGetOk(port_, "/-/ready"))
        << "Alertmanager did not start; see " << (dir_ / "alertmanager.log");
  }
  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
    fs::remove_all(dir_);
  }

  void Post(const Posted& a) {
    std::string command =
        "amtool alert add --alertmanager.url=http://127.0.0.1:" +
        std::to_string(port_) + " alertname=" + a.name;
    for (const auto& [l, v] : a.labels) command += " " + l + "=" + v;
    std::string output;
    ASSERT_EQ(RunShell(command, &output), 0) << command << "\n" << output;
  }

  // alert key -> state ("active" or "suppressed") as Alertmanager reports.
  std::map<std::string, std::string> States() {
    std::map<std::string, std::string> out;
    auto body = testing::HttpGetOk(port_, "/api/v2/alerts");
    if (!body) return out;
    pt::ptree tree;
    std::istringstream in(*body);
    pt::read_json(in, tree);
    for (const auto& [_, a] : tree) {
      Posted p;
      for (const auto& [k, v] : a.get_child("labels")) {
        if (k == "alertname") {
          p.name = v.data();
        } else {
          p.labels[k] = v.data();
        }
      }
      out[p.key()] = a.get<std::string>("status.state");
    }
    return out;
  }

  // Waits until every expected suppression shows (the inhibitor sees the
  // source alerts asynchronously; bounded), then compares everything.
  void ExpectStates(const std::vector<std::pair<Posted, bool>>& cases) {
    std::map<std::string, std::string> states;
    for (int i = 0; i < 100; ++i) {
      states = States();
      bool settled = states.size() == cases.size();
      for (const auto& [alert, suppressed] : cases) {
        if (suppressed) settled &= states[alert.key()] == "suppressed";
      }
      if (settled) break;
      std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(states.size(), cases.size());
    for (const auto& [alert, suppressed] : cases) {
      EXPECT_EQ(states[alert.key()], suppressed ? "suppressed" : "active")
          << alert.key();
    }
  }

  fs::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

using Labels = std::map<std::string, std::string>;

TEST_F(InhibitAlertmanagerTest, OneFaultOneNotification) {
  const Labels down = {{"job", "fabricmon"},
                       {"instance", "h1:10915"},
                       {"device", "mlx5_1"},
                       {"port", "1"}};
  Labels other = down;
  other["device"] = "mlx5_4";
  Labels degraded = down;
  degraded["device"] = "mlx5_5";
  const Labels job = {{"job", "fabricmon"}};
  const Labels flap = {{"job", "fabricmon"},
                       {"switch_guid", "0x000000000000000a"},
                       {"switch", "ib-leaf0"},
                       {"port", "3"}};
  Labels retrain = flap;
  retrain["port"] = "4";
  auto with = [](Labels l, const std::string& k, const std::string& v) {
    l[k] = v;
    return l;
  };
  // {alert, whether the shipped rules suppress it}
  const std::vector<std::pair<Posted, bool>> cases = {
      // Port down: one page.
      {{"FabricPortDown", down}, false},
      {{"FabricPortLinkDowned", down}, true},
      {{"FabricPortLinkErrorRecovery", down}, true},
      {{"FabricPortSymbolErrors", down}, true},
      {{"FabricPortCongestionHotspot", down}, true},
      {{"FabricPortTransmitDiscards", down}, true},
      // The same symptoms on a port that is up: their own alerts; the
      // flap explains its recoveries.
      {{"FabricPortSymbolErrors", other}, false},
      {{"FabricPortLinkDowned", other}, false},
      {{"FabricPortLinkErrorRecovery", other}, true},
      // A degraded link's transmit wait.
      {{"FabricPortLinkDegraded", degraded}, false},
      {{"FabricPortCongestionHotspot", degraded}, true},
      // Subnet manager.
      {{"FabricSmNoMaster", job}, false},
      {{"FabricSmFailover", job}, true},
      // A switch port that flapped, and one that only retrained.
      {{"FabricSwitchPortLinkDowned", with(flap, "error", "link_downed")},
       false},
      {{"FabricSwitchPortSymbolErrors", flap}, true},
      {{"FabricSwitchPortLinkDowned",
        with(retrain, "error", "link_error_recovery")},
       false},
      {{"FabricSwitchPortSymbolErrors", retrain}, false},
  };
  for (const auto& [alert, _] : cases) Post(alert);

  ExpectStates(cases);
}

// Congestion trees (issue 42): the root pages once; the per-port congestion
// alerts of its victims (switch ports, and a host port whose traffic waits
// behind the same root) are suppressed through the FabricCongestionVictim
// markers, which the root itself suppresses; a congested port of another
// tree, and a victim of a root that does not fire, still page. A RoCE host
// paused by a PFC origin: its FabricRoceCongestion and hotspot too.
TEST_F(InhibitAlertmanagerTest, OneCongestionRootOnePage) {
  const Labels root = {{"job", "fabricmon"},
                       {"switch_guid", "0x0002c90300b00010"},
                       {"switch", "leaf1"},
                       {"port", "1"},
                       {"root_guid", "0x0002c90300b00010"},
                       {"root_port", "1"},
                       {"cause", "slow_receiver"}};
  auto victim = [](const std::string& guid, const std::string& port,
                   const std::string& root_guid) {
    return Labels{{"job", "fabricmon"},     {"switch_guid", guid},
                  {"switch", "sw"},         {"port", port},
                  {"root_guid", root_guid}, {"root_port", "1"}};
  };
  auto port_alert = [](const std::string& guid, const std::string& port) {
    return Labels{{"job", "fabricmon"},
                  {"switch_guid", guid},
                  {"switch", "sw"},
                  {"port", port}};
  };
  const Labels host = {{"job", "fabricmon"},
                       {"instance", "h3:10915"},
                       {"device", "mlx5_0"},
                       {"port", "1"}};
  Labels host_marker = host;
  host_marker["root_guid"] = "0x0002c90300b00010";
  host_marker["root_port"] = "1";
  const std::string spine = "0x0002c90300b00020";
  const std::string leaf0 = "0x0002c90300b00011";
  // RoCE: a PFC origin, and a host it pauses (the tour's pfc-storm).
  const Labels pfc_root = {
      {"job", "fabricmon"},      {"instance", "h1:10915"},
      {"device", "mlx5_bond_0"}, {"port", "1"},
      {"root_guid", "h1:10915"}, {"root_port", "mlx5_bond_0"},
      {"cause", "pfc_origin"}};
  const Labels paused = {{"job", "fabricmon"},
                         {"instance", "h2:10915"},
                         {"device", "mlx5_bond_0"},
                         {"port", "1"}};
  Labels paused_marker = paused;
  paused_marker["root_guid"] = "h1:10915";
  paused_marker["root_port"] = "mlx5_bond_0";
  const std::vector<std::pair<Posted, bool>> cases = {
      {{"FabricCongestionRoot", root}, false},
      // The root port's own per-port alert: the root page says more.
      {{"FabricSwitchPortCongestion", port_alert("0x0002c90300b00010", "1")},
       true},
      // Victims: their markers and their per-port alerts, all suppressed.
      {{"FabricCongestionVictim", victim(spine, "2", "0x0002c90300b00010")},
       true},
      {{"FabricSwitchPortCongestion", port_alert(spine, "2")}, true},
      {{"FabricCongestionVictim", victim(leaf0, "3", "0x0002c90300b00010")},
       true},
      {{"FabricSwitchPortCongestion", port_alert(leaf0, "3")}, true},
      {{"FabricCongestionVictim", host_marker}, true},
      {{"FabricPortCongestionHotspot", host}, true},
      // A congested port that is no victim of this tree pages.
      {{"FabricSwitchPortCongestion", port_alert(spine, "7")}, false},
      // A victim marker of a root whose alert does not fire is not
      // suppressed (it cannot be: the rule requires the root firing).
      {{"FabricCongestionVictim", victim(leaf0, "9", "0x00000000000000ff")},
       false},
      // The paused host's RoCE congestion and hotspot are the storm's.
      {{"FabricCongestionRoot", pfc_root}, false},
      {{"FabricCongestionVictim", paused_marker}, true},
      {{"FabricRoceCongestion", paused}, true},
      {{"FabricPortCongestionHotspot", paused}, true},
  };
  for (const auto& [alert, _] : cases) Post(alert);
  ExpectStates(cases);
}

// RoCE switch ports streamed over gNMI (issue 45) have no switch_guid: the
// root and its markers hold back the per-port alerts of their own switch
// and port, not every switch's port of the same name.
TEST_F(InhibitAlertmanagerTest, OneRoceSwitchRootOnePage) {
  auto at = [](const std::string& sw, const std::string& port) {
    return Labels{{"job", "fabricmon"}, {"switch", sw}, {"port", port}};
  };
  auto rooted = [](Labels l) {
    l["root_guid"] = "leaf1";
    l["root_port"] = "swp1";
    return l;
  };
  Labels root = rooted(at("leaf1", "swp1"));
  root["cause"] = "oversubscribed";
  const std::vector<std::pair<Posted, bool>> cases = {
      {{"FabricCongestionRoot", root}, false},
      {{"FabricSwitchPortCongestion", at("leaf1", "swp1")}, true},
      {{"FabricCongestionVictim", rooted(at("spine1", "swp1"))}, true},
      {{"FabricSwitchPortCongestion", at("spine1", "swp1")}, true},
      {{"FabricCongestionVictim", rooted(at("leaf2", "swp31"))}, true},
      {{"FabricSwitchPortCongestion", at("leaf2", "swp31")}, true},
      // Another switch's swp1, and the same port name on another switch
      // than a victim's: their own pages.
      {{"FabricSwitchPortCongestion", at("leaf3", "swp1")}, false},
      {{"FabricSwitchPortCongestion", at("leaf3", "swp31")}, false},
  };
  for (const auto& [alert, _] : cases) Post(alert);
  ExpectStates(cases);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The shipped route (dashboards/alertmanager/route.yml, group_wait
// shortened) with a webhook receiver that records every notification: per
// fault the tour plays, the alerts the rules raise (labels as the rules
// make them, `cable` included) are posted, and Alertmanager must notify
// exactly one group per fault, holding only the fault's cause (what the
// inhibit rules leave). Before: a flapping cable was four notified
// alerts, a degraded link two.
TEST_F(InhibitAlertmanagerTest, OneNotificationGroupPerCable) {
  std::mutex mu;
  std::map<std::string, std::set<std::string>> groups;  // key -> alerts
  fabric::testing::FakeHttpServer webhook(
      [&](const std::string&, const std::string& body)
          -> std::optional<fabric::testing::FakeHttpAnswer> {
        pt::ptree tree;
        std::istringstream in(body);
        try {
          pt::read_json(in, tree);
        } catch (const pt::ptree_error&) {
          return fabric::testing::FakeHttpAnswer{400};
        }
        std::lock_guard<std::mutex> lock(mu);
        auto& alerts = groups[tree.get<std::string>("groupKey")];
        for (const auto& [_, a] : tree.get_child("alerts")) {
          std::string where = a.get<std::string>("labels.alertname");
          for (const char* l : {"instance", "switch_guid", "device", "port"}) {
            if (auto v =
                    a.get_optional<std::string>(std::string("labels.") + l)) {
              where += std::string(" ") + l + "=" + *v;
            }
          }
          alerts.insert(where);
        }
        return fabric::testing::FakeHttpAnswer{200};
      });
  ASSERT_NE(webhook.port(), 0);
  Stop();
  fs::remove_all(dir_);
  std::string route =
      Slurp(testing::SourceDir() + "/dashboards/alertmanager/route.yml");
  route = std::regex_replace(route, std::regex("group_wait: \\S+"),
                             "group_wait: 1s");
  Start(route + "receivers:\n  - name: fabric\n    webhook_configs:\n" +
        "      - url: http://127.0.0.1:" + std::to_string(webhook.port()) +
        "/\n        send_resolved: false\n");

  const Labels h1 = {{"job", "fabricmon"},
                     {"instance", "h1:10915"},
                     {"host", "h1"},
                     {"port", "1"}};
  const Labels leaf = {{"job", "fabricmon"},
                       {"switch_guid", "0x000000000000000a"},
                       {"switch", "ib-leaf0"}};
  auto at =
      [](Labels l,
         std::initializer_list<std::pair<std::string, std::string>> more) {
        for (const auto& [k, v] : more) l[k] = v;
        return l;
      };
  // {fault, alerts the rules raise for it}
  const std::vector<std::pair<std::string, std::vector<Posted>>> faults = {
      {"link flap on cable leaf0/3",
       {{"FabricPortLinkDowned", at(h1, {{"device", "mlx5_1"},
                                         {"error", "link_downed"},
                                         {"cable", "0x000000000000000a/3"}})},
        {"FabricPortFlapping", at(h1, {{"device", "mlx5_1"},
                                       {"error", "link_downed"},
                                       {"cable", "0x000000000000000a/3"}})},
        {"FabricSwitchPortLinkDowned",
         at(leaf, {{"port", "3"},
                   {"error", "link_downed"},
                   {"cable", "0x000000000000000a/3"}})},
        {"FabricPortFlapping",
         at(leaf, {{"port", "3"}, {"cable", "0x000000000000000a/3"}})}}},
      {"link degraded on cable leaf0/5",
       {{"FabricPortLinkDegraded",
         at(h1, {{"device", "mlx5_5"}, {"cable", "0x000000000000000a/5"}})},
        {"FabricPortCongestionHotspot",
         at(h1, {{"device", "mlx5_5"}, {"cable", "0x000000000000000a/5"}})},
        {"FabricPortLinkDowngraded",
         at(h1, {{"device", "mlx5_5"}, {"cable", "0x000000000000000a/5"}})},
        {"FabricPortLinkDowngraded",
         at(leaf, {{"port", "5"}, {"cable", "0x000000000000000a/5"}})}}},
      {"saturated counters on cable leaf0/6",
       {{"FabricPortCounterSaturated",
         at(h1, {{"device", "mlx5_6"}, {"cable", "0x000000000000000a/6"}})},
        {"FabricPortTransportRetries",
         at(h1, {{"device", "mlx5_6"}, {"cable", "0x000000000000000a/6"}})}}},
      {"symbol errors on cable leaf0/4",
       {{"FabricPortSymbolErrors",
         at(h1, {{"device", "mlx5_4"}, {"cable", "0x000000000000000a/4"}})},
        {"FabricSwitchPortSymbolErrors",
         at(leaf, {{"port", "4"}, {"cable", "0x000000000000000a/4"}})}}},
      {"PFC storm on a RoCE port (no cable)",
       {{"FabricPfcPauseStorm",
         at(h1, {{"device", "mlx5_bond_0"}, {"netdev", "bond0"}})},
        {"FabricRoceCongestion", at(h1, {{"device", "mlx5_bond_0"}})},
        {"FabricPortCongestionHotspot", at(h1, {{"device", "mlx5_bond_0"}})}}},
      {"SM failover",
       {{"FabricSmNoMaster", {{"job", "fabricmon"}}},
        {"FabricSmFailover", {{"job", "fabricmon"}}}}},
      {"a switch-to-switch link flapping (no cable label: one switch port)",
       {{"FabricSwitchPortLinkDowned",
         at(leaf, {{"port", "40"}, {"error", "link_downed"}})},
        {"FabricPortFlapping", at(leaf, {{"port", "40"}})}}},
  };
  for (const auto& [_, alerts] : faults) {
    for (const auto& a : alerts) Post(a);
  }
  // Each fault's cause, as the one alert its group notifies.
  const std::set<std::set<std::string>> want = {
      {"FabricPortFlapping instance=h1:10915 device=mlx5_1 port=1"},
      {"FabricPortLinkDegraded instance=h1:10915 device=mlx5_5 port=1",
       "FabricPortLinkDowngraded instance=h1:10915 device=mlx5_5 port=1"},
      {"FabricPortCounterSaturated instance=h1:10915 device=mlx5_6 port=1",
       "FabricPortTransportRetries instance=h1:10915 device=mlx5_6 port=1"},
      {"FabricPortSymbolErrors instance=h1:10915 device=mlx5_4 port=1"},
      {"FabricPfcPauseStorm instance=h1:10915 device=mlx5_bond_0 port=1"},
      {"FabricSmNoMaster"},
      {"FabricPortFlapping switch_guid=0x000000000000000a port=40"},
  };
  // Notifications arrive group_wait (1 s) after the alerts: wait, bounded,
  // until every fault's group came, then a little longer for any extra.
  auto snapshot = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return groups;
  };
  for (int i = 0; i < 300 && snapshot().size() < faults.size(); ++i) {
    std::this_thread::sleep_for(100ms);
  }
  std::this_thread::sleep_for(3s);
  const auto got = snapshot();
  std::set<std::set<std::string>> notified;
  std::string listing;
  for (const auto& [key, alerts] : got) {
    notified.insert(alerts);
    listing += key + ":";
    for (const auto& a : alerts) listing += "\n    " + a;
    listing += "\n";
  }
  EXPECT_EQ(got.size(), faults.size()) << listing;
  EXPECT_EQ(notified, want) << listing;
}

}  // namespace
}  // namespace fabric
