// scripts/demo.sh starts its cluster (simulator, daemons, Prometheus with
// the shipped rules, Alertmanager), prints alerts as they fire with their
// runbook, stops cleanly at the end of --duration, on SIGTERM or on Ctrl-C
// (SIGINT), leaves no process of its session behind and removes its temp
// dir; a port taken between its check and the bind moves the process to
// the next free port (--auto-ports) or fails clearly (a port given).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/paths.h"

namespace fabric::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A directory the demo printed: "sysfs: <dir>/host<i>" or "logs: <dir>".
std::string PrintedDir(const std::string& log, const std::string& pattern) {
  std::smatch m;
  const std::string text = Slurp(log);
  if (std::regex_search(text, m, std::regex(pattern))) return m[1];
  return "";
}
std::string SimDir(const std::string& log) {
  return PrintedDir(log, "sysfs: +(\\S+)/host<i>");
}
std::string LogDir(const std::string& log) {
  return PrintedDir(log, "logs: +(\\S+)");
}

class SimDemo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/prometheus")) {
      MISSING_DEPENDENCY("/usr/bin/prometheus not installed");
    }
    log_ = fs::temp_directory_path() /
           ("sim_demo_test." + std::to_string(getpid()) + ".log");
    ports_file_ = log_ + ".ports";
  }
  void TearDown() override {
    std::remove(ports_file_.c_str());
    // Keep the log only when something failed (its path is in the message).
    if (!HasFailure() && !log_.empty()) std::remove(log_.c_str());
  }
  // demo.sh with two hosts, choosing its ports itself (it reports them in
  // ports_file_), and `more`.
  std::string DemoCommand(const std::string& more) const {
    return SourceDir() + "/scripts/demo.sh --build " + BinaryDir() +
           " --hosts 2" + sim::DemoPortArgs(0, ports_file_) + more;
  }
  // Waits for the demo's ports, then until both daemons answer and
  // Prometheus is ready.
  bool WaitUp(sim::Session& demo) {
    auto ports = sim::WaitDemoPorts(demo, ports_file_, 90s);
    if (!ports || ports->daemons.size() != 2) return false;
    port0_ = ports->daemons[0];
    port1_ = ports->daemons[1];
    prom_port_ = ports->prometheus;
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < end && demo.running()) {
      if (fabric::testing::HttpGetOk(port0_, "/metrics") &&
          fabric::testing::HttpGetOk(port1_, "/metrics") &&
          fabric::testing::HttpGetOk(prom_port_, "/-/ready")) {
        return true;
      }
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }
  int port0_ = -1, port1_ = -1, prom_port_ = -1;
  std::string log_, ports_file_;
};

TEST_F(SimDemo, StopsOnSigtermAndLeavesNothing) {
  sim::Session demo(DemoCommand(""), log_);
  const pid_t sid = demo.pid();
  ASSERT_TRUE(WaitUp(demo)) << Slurp(log_);
  // Serving starts before the first poll has published (slow under a
  // sanitizer or a loaded CI machine), so wait for the first samples.
  const std::string series =
      "fabric_port_transmit_bytes_total{device=\"mlx5_0\"";
  std::optional<std::string> metrics;
  const auto until = std::chrono::steady_clock::now() + 20s;
  do {
    metrics = fabric::testing::HttpGetOk(port1_, "/metrics");
    if (metrics && metrics->find(series) != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  } while (std::chrono::steady_clock::now() < until);
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->find(series), std::string::npos);
  const std::string simdir = SimDir(log_), logs = LogDir(log_);
  ASSERT_FALSE(simdir.empty()) << Slurp(log_);
  ASSERT_FALSE(logs.empty()) << Slurp(log_);
  EXPECT_TRUE(fs::exists(simdir + "/host1/class/infiniband/mlx5_0"));
  EXPECT_GE(sim::SessionProcesses(sid).size(), 5u);  // sh, sim, 2 daemons, prom

  demo.Signal(SIGTERM);
  EXPECT_NE(demo.Wait(30s), -1) << "demo.sh did not stop";
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(sim::SessionProcesses(sid).empty());
  EXPECT_FALSE(fs::exists(simdir));
  EXPECT_FALSE(fs::exists(logs));
  EXPECT_FALSE(fabric::testing::HttpGetOk(port0_, "/metrics"));
  EXPECT_FALSE(fabric::testing::HttpGetOk(prom_port_, "/-/ready"));
  EXPECT_NE(Slurp(log_).find("Prometheus: http://127.0.0.1:" +
                             std::to_string(prom_port_)),
            std::string::npos);
}

// The demo loads the shipped rules into its Prometheus, runs Alertmanager
// with the shipped inhibit rules, and prints each alert as it fires with
// the runbook to open (scripts/demo_alerts.py) and the Slurm jobs on its
// host: the simulator's default jobs (simulator/slurm.h), 4711 on host0.
TEST_F(SimDemo, PrintsAlertsAsTheyFireWithTheirRunbook) {
  sim::Session demo(DemoCommand("--scenario congestion-hotspot"), log_);
  const pid_t sid = demo.pid();
  ASSERT_TRUE(WaitUp(demo)) << Slurp(log_);
  const std::regex am("Alertmanager: http://127.0.0.1:(\\d+)");
  std::smatch m;
  const std::string banner = Slurp(log_);
  ASSERT_TRUE(std::regex_search(banner, m, am)) << banner;
  EXPECT_TRUE(fabric::testing::HttpGetOk(std::stoi(m[1]), "/-/ready"));
  // Printed whether or not the congestion root fired first and inhibits it
  // (then marked "(inhibited: its cause is alerting)").
  const std::regex fired(
      "FIRING +FabricPortCongestionHotspot +host=host0 mlx5_0/1"
      "( +\\(inhibited: [^)\n]*\\))?\n.*\n +"
      "runbook: docs/runbooks/FabricPortCongestionHotspot.md\n"
      " +jobs: 4711 \\(alice: llama-70b\\)\n");
  bool printed = false;
  const auto until = std::chrono::steady_clock::now() + 150s;
  while (!printed && std::chrono::steady_clock::now() < until &&
         demo.running()) {
    std::this_thread::sleep_for(1s);
    const std::string text = Slurp(log_);
    printed = std::regex_search(text, fired);
  }
  EXPECT_TRUE(printed) << Slurp(log_);
  demo.Signal(SIGINT);
  EXPECT_NE(demo.Wait(30s), -1) << "demo.sh did not stop on SIGINT";
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(sim::SessionProcesses(sid).empty());
}

// The demo's daemons ask the simulated fabric's SMs through fabricmon-sim's
// MAD socket and probe each other through its relay, so the timeline's SM
// and probe faults fire their shipped alerts, printed with the runbook
// (before, the demo had no fabric_sm_* series and no lossy path at all).
TEST_F(SimDemo, SmAndProbeLossAlertsFire) {
  const std::string timeline = log_ + ".yaml";
  {
    std::ofstream out(timeline);
    out << "events:\n"
           "  - scenario: steady\n"
           "  - scenario: probe-loss\n"  // host0 -> host1
           "    start: 5s\n"
           // Hung long enough for stall_after (15 s) + the alert's 20 s
           // `for:` + sm interval and rule evaluation, with room for a
           // loaded machine (40 s was not always enough in the full suite).
           "  - scenario: sm-hung\n"
           "    start: 5s\n"
           "    duration: 90s\n"
           "  - scenario: sm-failover\n"
           "    start: 100s\n";
  }
  sim::Session demo(DemoCommand("--timeline " + timeline), log_);
  const pid_t sid = demo.pid();
  ASSERT_TRUE(WaitUp(demo)) << Slurp(log_);
  auto fired = [](const std::string& alert, const std::string& where) {
    return std::regex("FIRING +" + alert + " +" + where + "\n.*\n +" +
                      "runbook: docs/runbooks/" + alert + ".md\n");
  };
  const std::vector<std::pair<std::string, std::regex>> want = {
      {"FabricProbeLoss",
       fired("FabricProbeLoss", "host=host0 peer=127\\.0\\.0\\.1:\\d+")},
      {"FabricSmHung", fired("FabricSmHung", "sm_guid=0x[0-9a-f]{16}")},
      {"FabricSmFailover", fired("FabricSmFailover", "")},
  };
  std::set<std::string> seen;
  const auto until = std::chrono::steady_clock::now() + 240s;
  while (seen.size() < want.size() &&
         std::chrono::steady_clock::now() < until && demo.running()) {
    std::this_thread::sleep_for(1s);
    const std::string text = Slurp(log_);
    for (const auto& [name, re] : want) {
      if (std::regex_search(text, re)) seen.insert(name);
    }
  }
  for (const auto& [name, re] : want) {
    EXPECT_TRUE(seen.count(name)) << name << " not printed:\n" << Slurp(log_);
  }
  // Both daemons counted the master change (the alert fires on the first
  // one scraped, so its printed count may be 1).
  std::optional<double> nodes;
  const auto counted = std::chrono::steady_clock::now() + 30s;
  while (nodes != 2.0 && std::chrono::steady_clock::now() < counted) {
    const auto r = sim::PromQuery(
        prom_port_, "count(increase(fabric_sm_master_changes_total[10m]) > 0)");
    if (r && r->size() == 1) nodes = (*r)[0].value;
    std::this_thread::sleep_for(1s);
  }
  EXPECT_EQ(nodes, 2.0);
  demo.Signal(SIGTERM);
  EXPECT_NE(demo.Wait(30s), -1) << "demo.sh did not stop";
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(sim::SessionProcesses(sid).empty());
  std::remove(timeline.c_str());
}

TEST_F(SimDemo, EndsAfterDurationWithStatusZero) {
  sim::Session demo(DemoCommand("--duration 3"), log_);
  const pid_t sid = demo.pid();
  const int status = demo.Wait(60s);
  ASSERT_NE(status, -1) << "demo.sh --duration 3 did not end";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << Slurp(log_);
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(sim::SessionProcesses(sid).empty());
  const std::string simdir = SimDir(log_), logs = LogDir(log_);
  ASSERT_FALSE(simdir.empty()) << Slurp(log_);
  EXPECT_FALSE(fs::exists(simdir));
  EXPECT_FALSE(fs::exists(logs));
}

// A port taken between demo.sh's check and the daemon's bind (a socket
// bound but not listening looks free to the check, as a port another test
// binds a moment later does): with --auto-ports the daemon starts again on
// the next free port, which the ports file reports; without, a port given
// explicitly fails with the daemon's own error.
TEST_F(SimDemo, PortTakenBeforeTheBindMovesOnOrFailsClearly) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int taken = ntohs(addr.sin_port);
  {
    sim::Session demo(
        DemoCommand("--quiet --port-base " + std::to_string(taken)), log_);
    ASSERT_TRUE(WaitUp(demo)) << Slurp(log_);
    EXPECT_NE(port0_, taken);
    EXPECT_NE(Slurp(log_).find("fabricmon host0: port " +
                               std::to_string(taken) + " was taken meanwhile"),
              std::string::npos)
        << Slurp(log_);
    std::string why;
    EXPECT_TRUE(sim::StopDemo(demo, &why)) << why;
  }
  const std::string explicit_port =
      SourceDir() + "/scripts/demo.sh --build " + BinaryDir() +
      " --hosts 2 --quiet --port-base " + std::to_string(taken);
  sim::Session demo(explicit_port, log_);
  const int status = demo.Wait(90s);
  close(fd);
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << Slurp(log_);
  EXPECT_NE(Slurp(log_).find("fabricmon host0 did not start on port " +
                             std::to_string(taken)),
            std::string::npos)
      << Slurp(log_);
  EXPECT_NE(Slurp(log_).find("Address already in use"), std::string::npos)
      << Slurp(log_);
}

TEST_F(SimDemo, RejectsBadArguments) {
  sim::Session demo(DemoCommand("--hosts zero"), log_);
  const int status = demo.Wait(30s);
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2);
}

}  // namespace
}  // namespace fabric::testing
