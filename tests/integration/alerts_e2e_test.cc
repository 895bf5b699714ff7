// End to end: the simulator renders live sysfs trees for two hosts, one
// fabricmon daemon per host serves /metrics, and a real Prometheus (Debian
// package) scrapes both every second and evaluates the shipped recording and
// alerting rules (with every `for:` shortened to 2 s and every rule group
// evaluated every second). Alerts are read from
// Prometheus' /api/v1/alerts.
//
//  - congestion-hotspot fires FabricPortCongestionHotspot for host0
//    mlx5_0/1 and for no other port;
//  - every dashboard and rule expression returns data in at least one
//    scenario (congestion-hotspot with the InfiniBand side, device-removed,
//    symbol-errors);
//    one that returns nothing in all of them fails (no skipping for a
//    missing metric: the simulator must produce it). The InfiniBand side:
//    a real ibsim fabric mirroring the simulated cluster's first two rails
//    (same node GUIDs, leaf and spine names), a real OpenSM on it with
//    PerfMgr and libfabricmon_osm.so, and a third fabricmon attached to it
//    with the sm, fabric and opensm collectors: SM, switch-port, sweep and
//    OpenSM expressions are evaluated on real data, and the host-port-to-
//    switch-port joins match the simulated hosts' ports. The two
//    daemons probe each other and one runs a bench agent. Exempt, with the
//    reason: the bench results pushed by fabricmon-bench (PushedBenchResults),
//    the day-long probe latency baseline (NeedsTheProbeBaseline) and a
//    saturated switch counter, which the IB side's PerfMgr clears
//    (ClearedByPerfMgr), RoCE switch ports over gNMI (NeedsGnmiSwitches:
//    gnmi_congestion_test runs those). The simulated hosts run Slurm jobs
//    (simulator/slurm.h: the default two), so the job expressions have
//    data too;
//  - steady fires no alert at all over the same observation time.
//  - link-degraded fires FabricPortLinkDegraded for host0 mlx5_5/1, and,
//    with the daemons on the simulator's MADs, FabricPortLinkDowngraded for
//    that host port (its ib_link collector reads both ends of the cable).
//  - killing the IB side's master OpenSM fires one FabricSmFailover.
//  - counter-saturation fires one FabricPortCounterSaturated for the port,
//    not one per saturated field, and no alert twice for that port.
//  - link-degraded with Slurm jobs declared: the alerts on both ends of the
//    degraded cable (host port and switch port) name, in their `jobs`
//    annotation, the job running on the cable's host, not the job on the
//    other host nor a job that ended;
//  - pfc-storm fires one FabricPfcPauseStorm, for host0's RoCE netdev
//    (mlx5_bond_0, bond0); the pause frames that moved are priority 3 tx. PFC
//    counters come from ethtool, not sysfs: each daemon reads the `ethtool -S`
//    dumps the simulator writes next to its tree (config ethtool_dir =
//    <host>/ethtool), and its DCB dumps (collectors.roce.dcb_dir = <host>/dcb).
//
// Everything binds to 127.0.0.1 and lives in a temporary directory that is
// removed at the end. Bounded: each case gives up after kFireTimeout.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/rule_exprs.h"
#include "tests/integration/runbook_queries.h"
#include "tests/integration/sim_support.h"
#include "tests/support/ci.h"
#include "tests/support/http.h"
#include "tests/support/ibsim_fabric.h"
#include "tests/support/paths.h"
#include "tests/support/prom_api.h"
#include "tests/support/sim_host_config.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace fabric {
namespace {

namespace fs = std::filesystem;
namespace pt = boost::property_tree;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr auto kFireTimeout = seconds(40);
constexpr auto kSteadyWatch = seconds(25);

std::string Src(const std::string& rel) {
  return testing::SourceDir() + "/" + rel;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A child process, stopped with SIGTERM (then SIGKILL) when destroyed.
class Child {
 public:
  Child(std::vector<std::string> argv, const fs::path& log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) !=
        0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Child() { Stop(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  bool ok() const { return pid_ > 0; }
  bool Running() {
    if (pid_ <= 0) return false;
    return waitpid(pid_, &status_, WNOHANG) == 0;
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, &status_, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
};

// The InfiniBand side of the stack: a real ibsim fabric that mirrors the
// simulated cluster's rails 0 and 1 for hosts 0 and 1 (the same HCA node
// GUIDs as the simulator renders, fabricmon-sim's leaf and spine names), a
// real OpenSM on it (attached as host0's mlx5_0) with PerfMgr and
// libfabricmon_osm.so, and a fabricmon attached as host1's mlx5_0 running
// only the sm, fabric and opensm collectors. Children are killed by pid
// and the temp dir removed by IbsimFabric's destructor.
class IbSide {
 public:
  // `standby_sm`: a second OpenSM (priority 1, attached as host1's mlx5_1)
  // that takes over when KillMaster() kills the first.
  IbSide(const fs::path& dir, bool standby_sm) : fabric_(Netfile()) {
    if (!fabric_.Start(&error_)) return;
    const std::string socket = fabric_.dir() + "/osm-events.sock";
    const int port = testing::FreeLoopbackPort();
    target_ = "127.0.0.1:" + std::to_string(port);
    const fs::path config = dir / "fabricmon-ib.yaml";
    std::ofstream(config)
        << "listen_address: \"" << target_ << "\"\n"
        << "collectors:\n"
        << "  ib_port: {enabled: false}\n  hw_counters: {enabled: false}\n"
        << "  congestion: {enabled: false}\n  roce: {enabled: false}\n"
        << "  nic_identity: {enabled: false}\n"
        << "  sm: {interval: 1s, timeout: 5s, mad_timeout: 200ms}\n"
        << "  fabric: {enabled: true, interval: 1s, timeout: 5s, "
        << "mad_timeout: 200ms, discovery_interval: 5s}\n"
        << "  opensm: {enabled: true, socket: " << socket << "}\n";
    // OpenSM first: the sm and fabric collectors find their local port
    // only if it is ACTIVE when the daemon starts (see the report of this
    // change). The plugin drops and counts events until the daemon's socket
    // exists; the link flap after start-up makes OpenSM sweep again.
    testing::IbsimFabric::OpenSmOptions sm;
    sm.sim_host = "host0-mlx5_0";
    sm.priority = 15;
    sm.sweep_interval = 1;
    sm.config_lines = {"event_plugin_name fabricmon_osm",
                       "event_plugin_options " + socket, "perfmgr TRUE",
                       "perfmgr_sweep_time_s 1"};
    sm.env = {"LD_LIBRARY_PATH=" + testing::BinaryDir() + "/lib"};
    master_ = fabric_.StartOpenSm(sm);
    if (!fabric_.WaitForMaster(seconds(60), "host1-mlx5_0")) {
      error_ = "OpenSM did not become master on the ibsim fabric";
      return;
    }
    if (standby_sm) {
      fabric_.StartOpenSm({.sim_host = "host1-mlx5_1", .priority = 1});
    }
    daemon_ = fabric_.StartClient(
        {testing::Binary("fabricmon"), "--config", config.string()},
        "host1-mlx5_0", (dir / "fabricmon-ib.log").string());
    if (daemon_ <= 0) {
      error_ = "could not start the IB-side fabricmon";
      return;
    }
    if (!WaitForSocket(socket)) {
      error_ = "IB-side fabricmon did not create " + socket + ": " +
               ReadFile(dir / "fabricmon-ib.log");
    }
  }
  ~IbSide() {
    if (daemon_ > 0) fabric_.StopClient(daemon_);
  }
  const std::string& error() const { return error_; }
  const std::string& target() const { return target_; }

  // SIGKILL to the master OpenSM (the standby, if any, takes over).
  void KillMaster() { fabric_.KillOpenSm(master_); }

  // Unlinks and relinks ib-leaf0's uplink to ib-spine.
  void FlapUplink() {
    fabric_.Console("Unlink \"ib-leaf0\"[3]");
    std::this_thread::sleep_for(seconds(3));
    fabric_.Console("ReLink \"ib-leaf0\"[3]");
  }

  // The simulator's node GUID of host h's IB device index d (simulator/
  // model.cc: 0xa088c203 << 32 | h << 16 | d; mlx5_0 is d 0, mlx5_1 d 1).
  static std::string HcaGuid(int h, int d) {
    char text[24];
    std::snprintf(text, sizeof(text), "0xa088c203%04x%04x", h, d);
    return text;
  }

 private:
  // ibnetdiscover format; caguid/switchguid lines set the node GUIDs.
  static std::string Netfile() {
    std::ostringstream out;
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < 2; ++r) {
        out << "caguid=" << HcaGuid(h, r) << "\nCa\t1 \"host" << h << "-mlx5_"
            << r << "\"\n[1]\t\"ib-leaf" << r << "\"[" << h + 1 << "]\n\n";
      }
    }
    for (int r = 0; r < 2; ++r) {
      out << "switchguid=0xb83fd203fffe000" << r << "\nSwitch\t4 \"ib-leaf" << r
          << "\"\n";
      for (int h = 0; h < 2; ++h) {
        out << "[" << h + 1 << "]\t\"host" << h << "-mlx5_" << r << "\"[1]\n";
      }
      out << "[3]\t\"ib-spine\"[" << r + 1 << "]\n\n";
    }
    out << "switchguid=0xb83fd203ffff0001\nSwitch\t4 \"ib-spine\"\n"
        << "[1]\t\"ib-leaf0\"[3]\n[2]\t\"ib-leaf1\"[3]\n\n";
    return out.str();
  }

  static bool WaitForSocket(const std::string& path) {
    for (int i = 0; i < 80; ++i) {
      if (fs::exists(path)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return false;
  }

  testing::IbsimFabric fabric_;
  std::string error_, target_;
  pid_t daemon_ = -1;
  int master_ = -1;
};

using testing::prom::Alert;

// The whole stack for one scenario.
class Stack {
 public:
  // `sim_args` are appended to fabricmon-sim's command line. `with_ib` adds
  // the InfiniBand side (IbSide below) as a third scrape target. `sim_mad`:
  // the daemons reach the simulated fabric's MADs (fabricmon-sim
  // --mad-socket) and host0's sweeps its switches (fabric collector): the
  // switch-port PESC, width and speed series come from the simulator, which
  // answers PortExtendedSpeedsCounters where ibsim does not.
  explicit Stack(const std::string& scenario,
                 const std::vector<std::string>& sim_args = {},
                 bool with_ib = false, bool standby_sm = false,
                 bool sim_mad = false, bool dead_probe_peer = false) {
    dir_ = tmp_.path();
    // The simulator: two hosts, live trees under dir/sim/host<i>.
    std::vector<std::string> sim_argv = {testing::Binary("fabricmon-sim"),
                                         "--out",
                                         (dir_ / "sim").string(),
                                         "--scenario",
                                         scenario,
                                         "--hosts",
                                         "2",
                                         "--tick",
                                         "100ms"};
    sim_argv.insert(sim_argv.end(), sim_args.begin(), sim_args.end());
    const fs::path mad_socket = dir_ / "mad.sock";
    if (sim_mad) {
      sim_argv.insert(sim_argv.end(), {"--mad-socket", mad_socket.string()});
    }
    sim_ = std::make_unique<Child>(sim_argv, dir_ / "sim.log");
    // The two daemons probe each other over loopback (UDP) and daemon 0
    // runs a bench agent (TCP), so the probe and bench-agent expressions
    // are evaluated on real data.
    // With `dead_probe_peer`, daemon 1 also probes probe_base + 3, where
    // nothing listens (a probe port with no responder), so
    // FabricProbePeerUnanswered's series (fabric_probe_peer_unanswered_seconds)
    // has data; only the expression checks ask for it (its 100 % loss would
    // fire FabricProbeLoss in the scenarios that count alerts).
    const int probe_base =
        testing::sim::FreePortRange(testing::sim::PidSpread(37915), 4);
    const fs::path key = dir_ / "probe.key";
    std::ofstream(key) << std::string(64, 'e') << "\n";
    fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write);
    if (!testing::sim::WaitRendered(dir_ / "sim.log", seconds(30))) {
      error_ = "simulator did not render: " + ReadFile(dir_ / "sim.log");
      return;
    }
    for (int h = 0; h < 2; ++h) {
      const fs::path root = dir_ / "sim" / ("host" + std::to_string(h));
      const fs::path config =
          dir_ / ("fabricmon" + std::to_string(h) + ".yaml");
      std::ofstream(config)
          << testing::SimHostConfig(root)
          << "  probe:\n    enabled: true\n    interval: 100ms\n"
          << "    listen_address: \"127.0.0.1:" << probe_base + h << "\"\n"
          << "    key_file: " << key.string()
          << "\n    peers: [\"127.0.0.1:" << probe_base + 1 - h << "\""
          << (h == 1 && dead_probe_peer
                  ? ", \"127.0.0.1:" + std::to_string(probe_base + 3) + "\""
                  : std::string())
          << "]\n"
          << "  bench_agent:\n    enabled: " << (h == 0 ? "true" : "false")
          << "\n    listen_address: \"127.0.0.1:" << probe_base + 2
          << "\"\n    key_file: " << key.string() << "\n";
      std::vector<std::string> argv = {testing::Binary("fabricmon"),
                                       "--config",
                                       config.string(),
                                       "--sysfs.root",
                                       root.string(),
                                       "--web.listen-address",
                                       "127.0.0.1:0"};
      if (sim_mad) {
        if (!WaitFor([&] { return fs::exists(mad_socket); }, seconds(10))) {
          error_ = "simulator did not create " + mad_socket.string();
          return;
        }
        std::ofstream(config, std::ios::app)
            << "  sm:\n    interval: 1s\n    timeout: 900ms\n"
            << "  fabric:\n    enabled: " << (h == 0 ? "true" : "false")
            << "\n    interval: 1s\n    timeout: 900ms\n"
            << "    discovery_interval: 5s\n";
        argv.insert(argv.end(), {"--sim.mad-socket", mad_socket.string()});
      }
      const fs::path log = dir_ / ("fabricmon" + std::to_string(h) + ".log");
      daemons_.push_back(std::make_unique<Child>(argv, log));
      int port = 0;
      WaitFor(
          [&] {
            std::smatch m;
            const std::string text = ReadFile(log);
            if (!std::regex_search(
                    text, m, std::regex(R"(listening on [^\s]*:(\d+))"))) {
              return false;
            }
            port = std::stoi(m[1]);
            return true;
          },
          seconds(10));
      if (port == 0) {
        error_ = "fabricmon did not report its port: " + ReadFile(log);
        return;
      }
      targets_.push_back("127.0.0.1:" + std::to_string(port));
    }
    if (with_ib) {
      ib_ = std::make_unique<IbSide>(dir_, standby_sm);
      if (!ib_->error().empty()) {
        error_ = ib_->error();
        return;
      }
      targets_.push_back(ib_->target());
    }
    // Prometheus with the shipped rules, `for:` shortened.
    testing::prom::WriteFastRules(dir_);
    std::string targets;
    for (const auto& t : targets_) {
      targets += (targets.empty() ? "'" : ", '") + t + "'";
    }
    std::ofstream(dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "rule_files:\n  - recording_rules.yml\n  - alerting_rules.yml\n"
        << "scrape_configs:\n  - job_name: fabricmon\n    static_configs:\n"
        << "      - targets: [" << targets << "]\n";
    prom_port_ = testing::FreeLoopbackPort();
    prometheus_ = std::make_unique<Child>(
        std::vector<std::string>{
            "/usr/bin/prometheus",
            "--config.file=" + (dir_ / "prometheus.yml").string(),
            "--storage.tsdb.path=" + (dir_ / "data").string(),
            "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_),
            "--log.level=warn"},
        dir_ / "prometheus.log");
    // Ready once every target was scraped and the rules evaluated once.
    if (!WaitFor(
            [&] {
              auto r = Query("count(up{job=\"fabricmon\"} == 1)");
              return r && r->size() == 1 &&
                     r->front().text == std::to_string(targets_.size());
            },
            seconds(20))) {
      error_ = "prometheus never scraped every daemon: " +
               ReadFile(dir_ / "prometheus.log");
      return;
    }
    // A link flap on the IB side: ibsim sends trap 128 to OpenSM (the
    // plugin's trap events), and the sweep sees the port go down and up.
    if (ib_) ib_->FlapUplink();
  }

  ~Stack() {
    prometheus_.reset();
    ib_.reset();
    daemons_.clear();
    sim_.reset();
  }

  const std::string& error() const { return error_; }
  const std::string& target(int host) const { return targets_[host]; }
  IbSide* ib() { return ib_.get(); }

  // Instant query (tests/support/prom_api.h).
  std::optional<std::vector<testing::prom::Sample>> Query(
      const std::string& expr) {
    return testing::prom::Query(prom_port_, expr);
  }

  std::vector<Alert> Alerts() { return testing::prom::Alerts(prom_port_); }

  template <typename F>
  static bool WaitFor(F&& done, Clock::duration timeout) {
    const auto end = Clock::now() + timeout;
    while (Clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    return done();
  }

  // Waits until `alert` fires; returns all firing alerts of that name.
  std::vector<Alert> WaitFiring(const std::string& alert,
                                Clock::duration timeout = kFireTimeout) {
    std::vector<Alert> firing;
    WaitFor(
        [&] {
          firing.clear();
          for (auto& a : Alerts()) {
            if (a.name == alert && a.state == "firing") firing.push_back(a);
          }
          return !firing.empty();
        },
        timeout);
    return firing;
  }

 private:
  testing::TempDir tmp_{"fabricmon-e2e"};
  fs::path dir_;
  std::string error_;
  std::unique_ptr<Child> sim_, prometheus_;
  std::vector<std::unique_ptr<Child>> daemons_;
  std::unique_ptr<IbSide> ib_;
  std::vector<std::string> targets_;
  int prom_port_ = 0;
};

bool Prerequisites(std::string* why) {
  for (const auto& bin :
       {testing::Binary("fabricmon"), testing::Binary("fabricmon-sim"),
        std::string("/usr/bin/prometheus")}) {
    if (access(bin.c_str(), X_OK) != 0) {
      *why = bin + " is not built/installed";
      return false;
    }
  }
  return true;
}

std::string Describe(const std::vector<Alert>& alerts) {
  std::string s;
  for (const auto& a : alerts) {
    s += a.name + "[" + a.state + "]{";
    for (const auto& [k, v] : a.labels) s += k + "=" + v + ",";
    s += "} ";
  }
  return s;
}

#define REQUIRE_STACK()                                \
  do {                                                 \
    std::string why;                                   \
    if (!Prerequisites(&why)) MISSING_DEPENDENCY(why); \
  } while (0)

// --- expressions: every dashboard/rule expression returns data ----------

using testing::AllExprs;
using testing::ForQuery;

// Every rule and panel expression must return data in at least one of the
// scenarios below: an expression that returns nothing in all of them fails
// the test, whether its metric is missing (the simulator must produce it)
// or the expression is wrong. Each scenario's stack runs until every
// expression still without data has returned some, or kExprTimeout.
//  - congestion-hotspot: everything a healthy-but-busy fabric exports;
//  - device-removed, as an 8 s removal every 16 s: a port that was seen and
//    is gone while its exporter answers (FabricPortMissing's expression);
//  - symbol-errors: a host port whose errors rise (the host error rates are
//    recorded only where above 0, and the hotspot fabric has none), with
//    the daemons on the simulator's MADs: host0 sweeps the simulated
//    switches, whose PMAs answer PortExtendedSpeedsCounters (ibsim's do
//    not), so the switch-port FEC/BER and link-width expressions have data;
//  - link-degraded, on the simulator's MADs too: a switch port that runs
//    below what both ends support (fabric:switch_port_link_downgraded, which
//    a runbook queries as is);
//  - link-flap, on the simulator's MADs: a host port and the switch port at
//    the other end of its cable go down and retrain (the link events are
//    recorded only where above 0, fabric_link_events and
//    fabric_switch_port_link_events).
constexpr auto kExprTimeout = seconds(45);

// The results fabricmon-bench pushes to a Pushgateway (issue 16) come from
// an on-demand run, never from the daemons: the bench dashboard's result
// panels are exempt (their queries are checked by the dashboard tests; the
// push by bench_local_test against a real Pushgateway). Every other
// expression must return data here (the OpenSM ones included: the IB side
// runs a real OpenSM with the plugin; the probe ones: the daemons probe each
// other).
// The probe latency baseline (a subquery sampled every 15 minutes over a
// day) has no point within a scenario's minute: it and what divides by it
// are exempt too; promtool tests them (probe_latency_test.yml).
// The inventory dashboard's per-class bench panel reads the same pushed
// results.
bool PushedBenchResults(const std::string& where, const std::string& expr) {
  const bool agent = expr.find("fabric_bench_agent_") != std::string::npos;
  return !agent && (where == "fabricmon-bench.json" ||
                    expr.find("fabric_bench_") != std::string::npos);
}
// A saturated switch counter cannot be held on this stack's IB side: its
// OpenSM runs PerfMgr, which clears a port's counters once a field passes
// 3/4 of its maximum (osm_perfmgr's overflow check) within its 1 s sweep.
// promtool tests the alert (switch_ports_test.yml); sm_fabric_ibsim_test
// the metric, on a fabric without PerfMgr.
bool ClearedByPerfMgr(const std::string& where, const std::string& expr) {
  return where == "FabricSwitchPortCounterSaturated" ||
         expr.find("fabric_switch_port_counters_saturated") !=
             std::string::npos;
}
// Victims of a congestion tree need a root with ports routed into it from
// another leaf: this stack's two hosts give roots but no victims.
// sim_congestion_daemon_test plays slow-receiver and unbalanced-links on
// three hosts and checks every victim series against the model.
bool NeedsCongestionVictims(const std::string&, const std::string& expr) {
  return expr.find("fabric_congestion_victim") != std::string::npos;
}
// The alerts on transmit discards (host and switch ports) and on switch-port
// symbol errors read the error rates recorded only where above 0
// (fabric:{port,switch_port}_errors:rate5m_nonzero, issue 39 item 9); no
// scenario raises a port_xmit_discards counter or a switch port's symbol
// errors (the simulator's error scenarios target host ports; the saturated
// counters it raises are left out by the alerts). The recording rules' own
// expressions read every error series and have data here; promtool tests the
// alerts on values (errors_test.yml, switch_ports_test.yml).
bool NeedsErrorsNoScenarioRaises(const std::string&, const std::string& expr) {
  return expr.find(
             "fabric:port_errors:rate5m_nonzero{error=\"port_xmit_"
             "discards\"}") != std::string::npos ||
         expr.find("fabric:switch_port_errors:rate5m_nonzero{error=") !=
             std::string::npos;
}
bool NeedsTheProbeBaseline(const std::string& where, const std::string& expr) {
  return where == "fabric:probe_rtt_seconds:mean5m_baseline" ||
         expr.find("fabric:probe_rtt_seconds:mean5m_baseline") !=
             std::string::npos;
}

// Probe pairs labelled with their ends' fabric classes (issue 31) join
// fabric_probe_pair_info, which names the fabric ports a pair's probes use;
// the simulated hosts probe each other over loopback, which is no fabric
// port, so no pair info exists here. promtool tests those rules
// (fabric_class_test.yml); probe_netns_test the pair info itself.
bool NeedsFabricPortProbes(const std::string&, const std::string& expr) {
  return expr.find("fabric:probe_pair:") != std::string::npos ||
         expr.find("fabric_probe_pair_info") != std::string::npos;
}

// RoCE switch ports come from Ethernet switches over gNMI (issue 45); the
// simulated fabric has none. gnmi_congestion_test runs every one of these
// expressions (the same predicate) on the shipped rules against the
// daemon streaming from a Node.js gNMI target and requires data from each.
bool NeedsGnmiSwitches(const std::string&, const std::string& expr) {
  return testing::ReadsGnmiSwitchPortsOnly(expr);
}

struct ScenarioRun {
  std::string scenario;
  std::vector<std::string> sim_args;
  bool with_ib = false;
  bool sim_mad = false;
};

// Runs the scenarios below until each of `all` ({where, expr}) has
// returned data in one of them; fails each that never does or does not
// parse.
void ExpectDataInSomeScenario(
    const std::vector<std::pair<std::string, std::string>>& all) {
  std::vector<bool> found(all.size(), false);
  for (std::size_t i = 0; i < all.size(); ++i) {
    found[i] = PushedBenchResults(all[i].first, all[i].second) ||
               NeedsTheProbeBaseline(all[i].first, all[i].second) ||
               NeedsFabricPortProbes(all[i].first, all[i].second) ||
               ClearedByPerfMgr(all[i].first, all[i].second) ||
               NeedsCongestionVictims(all[i].first, all[i].second) ||
               NeedsErrorsNoScenarioRaises(all[i].first, all[i].second) ||
               NeedsGnmiSwitches(all[i].first, all[i].second);
  }
  const std::string missing_ib = testing::MissingIbTools();
  if (!missing_ib.empty()) {
    MISSING_DEPENDENCY("InfiniBand side needs: " + missing_ib);
  }
  std::map<std::string, int> found_in;
  for (const ScenarioRun& run :
       {ScenarioRun{"congestion-hotspot", {}, /*with_ib=*/true},
        ScenarioRun{"device-removed",
                    {"--burst-length", "8s", "--burst-period", "16s"}},
        ScenarioRun{"symbol-errors", {}, /*with_ib=*/false, /*sim_mad=*/true},
        ScenarioRun{"link-degraded", {}, /*with_ib=*/false, /*sim_mad=*/true},
        ScenarioRun{"link-flap", {}, /*with_ib=*/false, /*sim_mad=*/true}}) {
    if (std::all_of(found.begin(), found.end(), [](bool f) { return f; })) {
      break;
    }
    Stack stack(run.scenario, run.sim_args, run.with_ib, /*standby_sm=*/false,
                run.sim_mad, /*dead_probe_peer=*/true);
    ASSERT_EQ(stack.error(), "") << run.scenario;
    Stack::WaitFor(
        [&] {
          bool all_found = true;
          for (std::size_t i = 0; i < all.size(); ++i) {
            if (found[i]) continue;
            const auto r = stack.Query(ForQuery(all[i].second));
            if (!r.has_value()) {
              // Invalid PromQL: report once, do not retry.
              ADD_FAILURE() << all[i].first
                            << ": query failed: " << ForQuery(all[i].second);
              found[i] = true;
              continue;
            }
            if (!r->empty()) {
              found[i] = true;
              ++found_in[run.scenario];
            } else {
              all_found = false;
            }
          }
          return all_found;
        },
        kExprTimeout);
  }
  int missing = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (found[i]) continue;
    ++missing;
    ADD_FAILURE() << all[i].first << " returns no data in any scenario: "
                  << ForQuery(all[i].second);
  }
  for (const auto& [scenario, n] : found_in) {
    std::printf("expressions first with data in %s: %d\n", scenario.c_str(), n);
    ::testing::Test::RecordProperty("with_data_" + scenario, n);
  }
  std::printf("expressions: %zu, without data in every scenario: %d\n",
              all.size(), missing);
}

TEST(AlertsE2eTest, EveryRuleAndPanelExpressionReturnsDataInSomeScenario) {
  REQUIRE_STACK();
  const auto all = AllExprs();
  ASSERT_GT(all.size(), 100u);
  ExpectDataInSomeScenario(all);
}

// Every PromQL line of the runbooks (```promql blocks, docs/runbooks/
// README.md), placeholders matching any value, through the same scenarios:
// a runbook query that does not parse, or names a metric or label the
// stack never has, fails here.
TEST(AlertsE2eTest, EveryRunbookQueryReturnsDataInSomeScenario) {
  REQUIRE_STACK();
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& [file, query] : testing::RunbookQueries()) {
    all.emplace_back("docs/runbooks/" + file, testing::ForPrometheus(query));
  }
  ASSERT_GT(all.size(), 60u);
  ExpectDataInSomeScenario(all);
}

TEST(AlertsE2eTest, CongestionHotspotFiresForVictimOnly) {
  REQUIRE_STACK();
  Stack stack("congestion-hotspot");
  ASSERT_EQ(stack.error(), "");
  const auto firing = stack.WaitFiring("FabricPortCongestionHotspot");
  ASSERT_FALSE(firing.empty())
      << "not firing within the timeout; alerts: " << Describe(stack.Alerts());
  for (const auto& a : firing) {
    EXPECT_EQ(a.labels.at("instance"), stack.target(0)) << Describe(firing);
    EXPECT_EQ(a.labels.at("device"), "mlx5_0") << Describe(firing);
    EXPECT_EQ(a.labels.at("port"), "1") << Describe(firing);
  }
  // The peak gauge shows the victim; the 30 s rate of the raw counter is
  // the averaged view.
  auto peak = stack.Query(
      "fabric_port_transmit_wait_peak_ratio{device=\"mlx5_0\",instance=\"" +
      stack.target(0) + "\"}");
  ASSERT_TRUE(peak && peak->size() == 1);
  EXPECT_GT(peak->front().value, 0.3);
}

TEST(AlertsE2eTest, SteadyFiresNothing) {
  REQUIRE_STACK();
  Stack stack("steady");
  ASSERT_EQ(stack.error(), "");
  std::vector<Alert> seen;
  Stack::WaitFor(
      [&] {
        for (auto& a : stack.Alerts()) seen.push_back(a);
        return false;  // watch the whole time
      },
      kSteadyWatch);
  EXPECT_TRUE(seen.empty()) << Describe(seen);
  // And it was really evaluating: the congestion peaks are there.
  auto peaks = stack.Query("count(fabric_port_transmit_wait_peak_ratio)");
  ASSERT_TRUE(peaks && peaks->size() == 1);
  EXPECT_EQ(peaks->front().text, "18");  // 2 hosts x 9 ports
}

TEST(AlertsE2eTest, LinkDegradedFiresForTheDegradedPort) {
  REQUIRE_STACK();
  Stack stack("link-degraded");
  ASSERT_EQ(stack.error(), "");
  const auto firing = stack.WaitFiring("FabricPortLinkDegraded");
  ASSERT_FALSE(firing.empty()) << Describe(stack.Alerts());
  for (const auto& a : firing) {
    EXPECT_EQ(a.labels.at("instance"), stack.target(0)) << Describe(firing);
    EXPECT_EQ(a.labels.at("device"), "mlx5_5") << Describe(firing);
    EXPECT_EQ(a.labels.at("port"), "1") << Describe(firing);
  }
}

// link-degraded on the simulator's MADs (issue 28): host0 mlx5_5 runs 2 of
// its 4 lanes. Its own ib_link collector reads both ends of the cable (4x
// each: PortInfo, the far end one hop out) and sysfs says 2x, so
// FabricPortLinkDowngraded fires for that host port; the sweep fires it
// for the switch port at the other end. Nothing else fires it.
TEST(AlertsE2eTest, LinkDegradedOnMadsFiresDowngradedForItsLinkOnly) {
  REQUIRE_STACK();
  Stack stack("link-degraded", {}, /*with_ib=*/false, /*standby_sm=*/false,
              /*sim_mad=*/true);
  ASSERT_EQ(stack.error(), "");
  std::vector<Alert> firing;
  const bool host_fired = Stack::WaitFor(
      [&] {
        firing.clear();
        bool host = false;
        for (auto& a : stack.Alerts()) {
          if (a.name != "FabricPortLinkDowngraded" || a.state != "firing") {
            continue;
          }
          host = host || a.labels.count("device") > 0;
          firing.push_back(a);
        }
        return host;
      },
      kFireTimeout);
  ASSERT_TRUE(host_fired) << Describe(stack.Alerts());
  for (const auto& a : firing) {
    if (a.labels.count("device")) {
      EXPECT_EQ(a.labels.at("instance"), stack.target(0)) << Describe(firing);
      EXPECT_EQ(a.labels.at("device"), "mlx5_5") << Describe(firing);
      EXPECT_EQ(a.labels.at("port"), "1") << Describe(firing);
    } else {
      EXPECT_EQ(a.labels.count("switch_guid"), 1u) << Describe(firing);
    }
  }
  // One host port and at most the one switch port at its other end.
  EXPECT_LE(firing.size(), 2u) << Describe(firing);
}

// Which jobs a bad cable hurts (issue 43), end to end on the simulator:
// host0 runs job 501 (alice), host1 job 502 (bob), and host0 ran job 503,
// which ends 60 s after the simulator started: long enough that a stack slow
// to start on a loaded machine still sees it running (with 20 s, CI's
// overlapped run saw it end before Prometheus' first scrape). link-degraded
// trains host0 mlx5_5's cable down to 2X; with the daemons on the simulator's
// MADs FabricPortLinkDowngraded fires for the host port and for the ib-leaf5
// port at its other end (the sweep). Both alerts' `jobs` annotation (the
// shipped template, through fabric:host_jobs:info and, for the switch end,
// fabric:switch_port:host) names job 501, and neither names 502 (on the other
// host, which Prometheus has) nor 503 once it has ended (seen first, then gone
// from the jobs).
TEST(AlertsE2eTest, BadCableAlertsNameTheJobsOnItsHost) {
  REQUIRE_STACK();
  testing::TempDir tmp("fabricmon-e2e-jobs");
  const fs::path timeline = fs::path(tmp.path()) / "jobs.yaml";
  std::ofstream(timeline)
      << "slurm:\n  jobs:\n"
      << "    - {id: 501, name: llama-70b, user: alice, hosts: [0]}\n"
      << "    - {id: 502, name: bert-ft, user: bob, hosts: [1]}\n"
      << "    - {id: 503, name: warmup, user: carol, hosts: [0], "
      << "duration: 60s}\n"
      << "events:\n  - scenario: link-degraded\n";
  Stack stack("link-degraded", {"--timeline", timeline.string()},
              /*with_ib=*/false, /*standby_sm=*/false, /*sim_mad=*/true);
  ASSERT_EQ(stack.error(), "");
  auto has_job = [&](const std::string& id) {
    const auto r = stack.Query("fabric:host_jobs:info{job_id=\"" + id + "\"}");
    return r && !r->empty();
  };
  // The daemons export what the simulated slurmd lays out: 501 and 503 on
  // host0 with their users and names, 502 on host1. Each read is waited
  // for: on a loaded machine a scrape that misses its 1 s timeout marks the
  // host's series stale until the next one.
  const std::set<std::string> running = {"501 alice llama-70b host0",
                                         "503 carol warmup host0"};
  std::set<std::string> host0_jobs;
  const bool seen = Stack::WaitFor(
      [&] {
        host0_jobs.clear();
        const auto on_host0 = stack.Query("fabric_node_job_info{instance=\"" +
                                          stack.target(0) + "\"}");
        for (const auto& s :
             on_host0.value_or(std::vector<testing::prom::Sample>{})) {
          host0_jobs.insert(s.labels.at("job_id") + " " + s.labels.at("user") +
                            " " + s.labels.at("job_name") + " " +
                            s.labels.at("nodelist"));
        }
        return host0_jobs == running && has_job("503") && has_job("502");
      },
      kFireTimeout);
  EXPECT_EQ(host0_jobs, running);
  ASSERT_TRUE(seen) << "jobs 501, 502 and 503 never seen together";
  // 503 ends: gone from the series while host0 is scraped (501 is there).
  ASSERT_TRUE(Stack::WaitFor([&] { return !has_job("503") && has_job("501"); },
                             seconds(90)))
      << "job 503 never disappeared";
  std::vector<Alert> ends;
  const bool both = Stack::WaitFor(
      [&] {
        ends.clear();
        bool host = false, sw = false;
        for (auto& a : stack.Alerts()) {
          if (a.name != "FabricPortLinkDowngraded" || a.state != "firing") {
            continue;
          }
          host = host || a.labels.count("device") > 0;
          sw = sw || a.labels.count("switch_guid") > 0;
          ends.push_back(a);
        }
        // Both ends, each with its annotation evaluated after 503 ended
        // (an annotation is rendered at every evaluation) and with the
        // jobs series present: on a loaded machine a missed scrape leaves
        // fabric:host_jobs:info empty for an evaluation, and the
        // annotation "" until the next (seen with 4 tests overlapped).
        return host && sw &&
               std::all_of(ends.begin(), ends.end(), [](const Alert& a) {
                 return a.annotations.count("jobs") &&
                        !a.annotations.at("jobs").empty() &&
                        a.annotations.at("jobs").find("503") ==
                            std::string::npos;
               });
      },
      seconds(90));
  ASSERT_TRUE(both) << "not both ends of the cable: " << Describe(ends);
  std::set<std::string> cables;
  for (const auto& a : ends) {
    cables.insert(a.labels.count("cable") ? a.labels.at("cable") : "");
  }
  EXPECT_EQ(cables.size(), 1u) << "one cable: " << Describe(ends);
  for (const auto& a : ends) {
    EXPECT_EQ(a.annotations.at("jobs"), "501 (alice: llama-70b)")
        << Describe({a});
  }
}

TEST(AlertsE2eTest, PfcStormFiresForTheStormingPort) {
  REQUIRE_STACK();
  // pfc-storm is one storm from t = 0: 100 ms in the NIC's storm warning,
  // 8 s in its storm error (it gives up pausing). That could all happen
  // before Prometheus' first scrape, so the storm is repeated as a 10 s
  // burst every 20 s: a whole storm is always seen, whenever the stack
  // becomes ready.
  Stack stack("pfc-storm", {"--burst-length", "10s", "--burst-period", "20s"});
  ASSERT_EQ(stack.error(), "");
  // The PFC series exist on both hosts (read from the ethtool dumps).
  auto pfc = stack.Query("count(fabric_pfc_pause_frames_total)");
  ASSERT_TRUE(pfc && pfc->size() == 1) << "no fabric_pfc_pause_frames_total";
  EXPECT_EQ(pfc->front().text, "32");  // 2 hosts x 8 priorities x rx/tx
  const auto firing = stack.WaitFiring("FabricPfcPauseStorm");
  ASSERT_FALSE(firing.empty()) << Describe(stack.Alerts());
  std::printf("FabricPfcPauseStorm firing: %s\n", Describe(firing).c_str());
  // One storm = one alert: host0's BlueField netdev, whichever triggers
  // (paused fraction, pause-frame rate, the NIC's storm events) see it and
  // however many priorities/directions pause; no priority label.
  EXPECT_EQ(firing.size(), 1u) << Describe(firing);
  for (const auto& a : firing) {
    EXPECT_EQ(a.labels.at("instance"), stack.target(0)) << Describe(firing);
    EXPECT_EQ(a.labels.at("device"), "mlx5_bond_0") << Describe(firing);
    EXPECT_EQ(a.labels.at("netdev"), "bond0") << Describe(firing);
    EXPECT_EQ(a.labels.at("port"), "1") << Describe(firing);
    EXPECT_EQ(a.labels.count("priority"), 0u) << Describe(firing);
    EXPECT_EQ(a.labels.count("level"), 0u) << Describe(firing);
  }
  // The priority: on the storming host the only pause frames it sent are
  // on the RoCE priority 3 (the pauses its peer relays back along the ring
  // arrive as rx, issue 42's hop-by-hop spread).
  auto moved =
      stack.Query("increase(fabric_pfc_pause_frames_total{instance=\"" +
                  stack.target(0) + "\",direction=\"tx\"}[2m]) > 0");
  ASSERT_TRUE(moved.has_value());
  ASSERT_EQ(moved->size(), 1u);
  const auto& labels = moved->front().labels;
  EXPECT_EQ(labels.at("device"), "mlx5_bond_0");
  EXPECT_EQ(labels.at("netdev"), "bond0");
  EXPECT_EQ(labels.at("priority"), "3");
  EXPECT_EQ(labels.at("direction"), "tx");
}

// counter-saturation sticks seven PortCounters fields of host0 mlx5_6 at
// their maximum within a second: one FabricPortCounterSaturated for the
// port (no `counter` label), not one per field, and no alert name fires
// twice for that port.
TEST(AlertsE2eTest, CounterSaturationFiresOneAlertPerPort) {
  REQUIRE_STACK();
  Stack stack("counter-saturation");
  ASSERT_EQ(stack.error(), "");
  const auto firing = stack.WaitFiring("FabricPortCounterSaturated");
  ASSERT_EQ(firing.size(), 1u) << Describe(stack.Alerts());
  EXPECT_EQ(firing[0].labels.at("instance"), stack.target(0));
  EXPECT_EQ(firing[0].labels.at("device"), "mlx5_6");
  EXPECT_EQ(firing[0].labels.count("counter"), 0u) << Describe(firing);
  std::map<std::string, int> per_name;
  for (const auto& a : stack.Alerts()) {
    if (a.state == "firing" && a.labels.count("device") &&
        a.labels.at("device") == "mlx5_6") {
      ++per_name[a.name];
    }
  }
  for (const auto& [name, n] : per_name) {
    EXPECT_EQ(n, 1) << name << ": " << Describe(stack.Alerts());
  }
}

// dying-cable (simulator/model.cc): host0's RoCE link and the ib-leaf0
// port 3 -- ib-spine port 1 uplink degrade as a failing cable does: pre-FEC
// errors rise (switch side: PESC through the simulator's MADs, host side:
// rx_corrected_bits_phy), the RoCE module warms past its own warning, the
// links flap, then stay down. The alerts come in that order on the RoCE
// port: FabricPortHighBer, then FabricPortFlapping, then FabricPortDown (a
// host port; switch ports have no down alert of their own), and Flapping on
// the switch link (its BER is not read: both its ends host an SM, which
// gets no PESC); no port-health, transceiver or down
// alert fires for any other port. The order is the order in which the
// polls first saw each alert firing, not a timing.
TEST(AlertsE2eTest, DyingCableAlertsInOrderOnlyOnItsLinks) {
  REQUIRE_STACK();
  Stack stack("dying-cable", {}, /*with_ib=*/false, /*standby_sm=*/false,
              /*sim_mad=*/true);
  ASSERT_EQ(stack.error(), "");
  const std::string host0 = stack.target(0);
  constexpr const char* kLeaf0 = "0xb83fd203fffe0000";
  constexpr const char* kSpine = "0xb83fd203ffff0001";
  auto on_dying_link = [&](const Alert& a) {
    auto label = [&](const char* k) {
      auto it = a.labels.find(k);
      return it == a.labels.end() ? std::string() : it->second;
    };
    if (!label("device").empty()) {
      return label("instance") == host0 && label("device") == "mlx5_bond_0";
    }
    if (!label("switch_guid").empty()) {
      return (label("switch_guid") == kLeaf0 && label("port") == "3") ||
             (label("switch_guid") == kSpine && label("port") == "1");
    }
    return true;  // not about one port
  };
  const std::set<std::string> kWatched = {
      "FabricPortHighBer",      "FabricPortFecUncorrectable",
      "FabricPortFlapping",     "FabricPortLinkDowngraded",
      "FabricTransceiverAlarm", "FabricSwitchUnresponsive",
      "FabricPortDown"};
  // "<alert> host" / "<alert> switch" -> the poll that first saw it firing.
  std::map<std::string, int> first_poll;
  std::vector<Alert> stray;
  int poll = 0;
  Stack::WaitFor(
      [&] {
        ++poll;
        for (const Alert& a : stack.Alerts()) {
          if (a.state != "firing" || !kWatched.count(a.name)) continue;
          if (!on_dying_link(a)) {
            stray.push_back(a);
            continue;
          }
          first_poll.emplace(
              a.name + (a.labels.count("switch_guid") ? " switch" : " host"),
              poll);
        }
        // The switch link's flaps are swept, not read from sysfs: its
        // alert may come a few polls after the host port is down.
        return first_poll.count("FabricPortDown host") > 0 &&
               first_poll.count("FabricPortFlapping switch") > 0;
      },
      seconds(180));
  std::string seen;
  for (const auto& [k, p] : first_poll) {
    seen += k + " @poll " + std::to_string(p) + "; ";
  }
  std::printf("dying-cable alerts first seen: %s\n", seen.c_str());
  EXPECT_TRUE(stray.empty()) << "on healthy links: " << Describe(stray);
  // Strictly earlier polls: two alerts first seen in one poll prove no
  // order.
  auto at = [&](const std::string& k) {
    auto it = first_poll.find(k);
    return it == first_poll.end() ? -1 : it->second;
  };
  for (const char* k : {"FabricPortHighBer host", "FabricPortFlapping host",
                        "FabricPortDown host", "FabricPortFlapping switch"}) {
    ASSERT_GT(at(k), 0) << k << " never fired; " << seen;
  }
  EXPECT_LT(at("FabricPortHighBer host"), at("FabricPortFlapping host"))
      << seen;
  EXPECT_LT(at("FabricPortFlapping host"), at("FabricPortDown host")) << seen;
  // The switch ends of this cable are ib-leaf0 and ib-spine, where the
  // simulator runs the standby and the master SM: the sweep sends no PESC
  // to an SM's LID (docs/mad-broker.md, "Never to a subnet manager"), so
  // their FEC counters, and a switch-end BER alert, do not exist.
  EXPECT_EQ(at("FabricPortHighBer switch"), -1) << seen;
  // The module's own warning: temperature past its threshold.
  EXPECT_GT(at("FabricTransceiverAlarm host"), 0) << seen;
}

// The master OpenSM of the IB side is killed; the standby takes over (about
// 20 s on ibsim): FabricSmFailover fires once for the job, not once per
// node, with no instance label. Bounded at 120 s (the takeover's own time).
TEST(AlertsE2eTest, SmFailoverFiresOnceWhenTheMasterIsKilled) {
  REQUIRE_STACK();
  const std::string missing_ib = testing::MissingIbTools();
  if (!missing_ib.empty()) MISSING_DEPENDENCY("needs: " + missing_ib);
  Stack stack("steady", {}, /*with_ib=*/true, /*standby_sm=*/true);
  ASSERT_EQ(stack.error(), "");
  for (const auto& a : stack.Alerts()) {
    EXPECT_NE(a.name, "FabricSmFailover")
        << "before the kill: " << Describe({a});
  }
  stack.ib()->KillMaster();
  const auto firing = stack.WaitFiring("FabricSmFailover", seconds(120));
  ASSERT_EQ(firing.size(), 1u) << Describe(stack.Alerts());
  EXPECT_EQ(firing[0].labels.at("job"), "fabricmon");
  EXPECT_EQ(firing[0].labels.count("instance"), 0u) << Describe(firing);
  // The new master is the standby: one MASTER again.
  auto masters = stack.Query("max(fabric_sm_masters)");
  ASSERT_TRUE(masters && masters->size() == 1);
  EXPECT_EQ(masters->front().text, "1");
}

}  // namespace
}  // namespace fabric
