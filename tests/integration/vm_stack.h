// The VictoriaMetrics deployment of deploy/victoriametrics/ on loopback, with
// the real binaries: simulated daemons (one fabricmon-sim, one fabricmon per
// simulated host) listed in a file_sd file -> two vmagents in cluster mode
// (their flags taken from vmagent-fabricmon@.service) -> single-node
// victoria-metrics -> vmalert (flags from vmalert-fabricmon.service) with the
// shipped rules -> Alertmanager. Beside it, the alternative: a real Prometheus
// on the same file_sd file with the shipped prometheus-remote-write.yml (one
// server: modulus 1) evaluating the same rules and remote-writing to a second
// victoria-metrics. Rules as in alerts_e2e_test (prom::WriteFastRules):
// every `for:` 2 s, every group every 1 s; scrapes every 1 s.
// Thread-safety: none needed (test-only, single thread).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/sim_support.h"
#include "tests/support/http.h"
#include "tests/support/paths.h"
#include "tests/support/prom_api.h"
#include "tests/support/sim_host_config.h"
#include "tests/support/wait.h"

namespace fabric::testing::vm {

namespace fs = std::filesystem;
using std::chrono::seconds;

inline std::string Src(const std::string& rel) {
  return SourceDir() + "/" + rel;
}

// The ExecStart (or another `key`: ExecStartPre) of a shipped unit as argv:
// continuation lines joined, every `from` of `subst` replaced by its `to`
// (${VAR}s, %i, %t, paths). "" when a ${VAR} or %t is left unreplaced.
inline std::vector<std::string> UnitCommand(
    const std::string& unit,
    const std::vector<std::pair<std::string, std::string>>& subst,
    const std::string& key = "ExecStart") {
  std::string text = ReadFile(Src("deploy/victoriametrics/" + unit));
  text = std::regex_replace(text, std::regex(R"(\\\n)"), " ");
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("(?:^|\n)" + key + "=([^\n]*)"))) {
    return {};
  }
  std::string command = m[1];
  for (const auto& [from, to] : subst) {
    for (auto at = command.find(from); at != std::string::npos;
         at = command.find(from, at + to.size())) {
      command.replace(at, from.size(), to);
    }
  }
  if (command.find("${") != std::string::npos ||
      command.find("%t") != std::string::npos) {
    return {};
  }
  std::vector<std::string> argv;
  std::istringstream words(command);
  for (std::string w; words >> w;) argv.push_back(w);
  return argv;
}

inline std::string Join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Runs vmalert-fabricmon.service's ExecStartPre as the unit does: the
// MetricsQL flavour of the rules in `rules` written into `out` (the unit's
// runtime directory). "" on success, else what failed.
inline std::string WriteMetricsqlRules(const std::string& rules,
                                       const std::string& out) {
  const auto pre = UnitCommand("vmalert-fabricmon.service",
                               {{"%t/fabricmon-vmalert", out},
                                {"/usr/share/fabricmon/victoriametrics/",
                                 Src("deploy/victoriametrics/")},
                                {"/usr/share/fabricmon/rules", rules}},
                               "ExecStartPre");
  if (pre.empty()) return "vmalert-fabricmon.service: no ExecStartPre";
  if (std::system(Join(pre).c_str()) != 0) {
    return "vmalert-fabricmon.service's ExecStartPre failed: " + Join(pre);
  }
  return "";
}

// Labels -> value of an instant query's vector result.
using Series = std::map<std::map<std::string, std::string>, double>;

inline std::optional<Series> Query(int port, const std::string& expr) {
  auto r = prom::Query(port, expr);
  if (!r) return std::nullopt;
  Series out;
  for (auto& s : *r) out[s.labels] = s.value;
  return out;
}

using prom::Alert;

// The firing ones of `alerts`.
inline std::vector<Alert> Firing(std::vector<Alert> alerts) {
  std::erase_if(alerts, [](const Alert& a) { return a.state != "firing"; });
  return alerts;
}

// Firing alerts from a Prometheus-style /api/v1/alerts (Prometheus, vmalert).
inline std::vector<Alert> FiringAlerts(int port) {
  return Firing(prom::Alerts(port));
}

// Active alerts Alertmanager received (/api/v2/alerts).
inline std::vector<Alert> AlertmanagerAlerts(int port) {
  const auto json =
      prom::GetJson(port, "/api/v2/alerts?active=true&silenced=false");
  return json ? Firing(prom::ParseAlerts(*json, "")) : std::vector<Alert>{};
}

// "instance" values of a vmagent's active targets (/api/v1/targets).
inline std::optional<std::set<std::string>> ActiveTargets(int port) {
  const auto json = prom::GetJson(port, "/api/v1/targets?state=active");
  if (!json) return std::nullopt;
  try {
    std::set<std::string> out;
    for (const auto& [_, t] : json->get_child("data.activeTargets")) {
      out.insert(t.get<std::string>("labels.instance"));
    }
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Binaries the stack runs; "" when all are there, else the first missing.
inline std::string MissingBinary() {
  for (const auto& bin :
       {Binary("fabricmon"), Binary("fabricmon-sim"),
        std::string("/usr/bin/prometheus"), std::string("/usr/bin/vmagent"),
        std::string("/usr/bin/vmalert"),
        std::string("/usr/bin/victoria-metrics"),
        std::string("/usr/bin/prometheus-alertmanager")}) {
    if (access(bin.c_str(), X_OK) != 0) return bin;
  }
  return "";
}

class Stack {
 public:
  static constexpr int kVmagents = 2;

  // `short_windows`: every range selector of the rules reads 20 s (not
  // 5 m, 1 h, ...), so a stack that has run for a minute has full windows:
  // with less data than its window, Prometheus' rate() divides by the whole
  // window and MetricsQL's by the data's span, which is a start-up artefact,
  // not a difference in meaning. `sim_args` are appended to fabricmon-sim's
  // command line.
  Stack(const std::string& scenario, int hosts, bool short_windows = false,
        const std::vector<std::string>& sim_args = {}) {
    dir_ = fs::temp_directory_path() /
           ("fabricmon_vm_" + std::to_string(getpid()) + "_" + scenario);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "rules");
    if (!StartDaemons(scenario, hosts, sim_args)) return;
    prom::WriteFastRules(dir_ / "rules", short_windows);
    vm_port_ = StartVictoriaMetrics("vm", &vm_);
    prom_vm_port_ = StartVictoriaMetrics("vm-prometheus", &prom_vm_);
    // vmalert restores its alerts' state from VictoriaMetrics at start.
    WaitFor([&] { return HttpGetOk(vm_port_, "/health").has_value(); },
            seconds(20));
    am_port_ = FreeLoopbackPort();
    std::ofstream(dir_ / "alertmanager.yml")
        << "route:\n  receiver: default\n  group_wait: 1s\n"
        << "receivers:\n  - name: default\n";
    am_ = Start("alertmanager",
                {"/usr/bin/prometheus-alertmanager",
                 "--config.file=" + (dir_ / "alertmanager.yml").string(),
                 "--storage.path=" + (dir_ / "am-data").string(),
                 "--web.listen-address=127.0.0.1:" + std::to_string(am_port_),
                 "--cluster.listen-address="});
    WriteScrapeConfig();
    for (int i = 0; i < kVmagents; ++i) {
      vmagent_ports_.push_back(FreeLoopbackPort());
      vmagents_.push_back(nullptr);
      StartVmagent(i);
    }
    vmalert_port_ = FreeLoopbackPort();
    // As the unit runs it: its ExecStartPre writes the MetricsQL flavour of
    // the rules into its runtime directory, which ExecStart reads.
    const std::string runtime = (dir_ / "vmalert-rules").string();
    error_ = WriteMetricsqlRules((dir_ / "rules").string(), runtime);
    if (!error_.empty()) return;
    const auto vmalert = UnitCommand("vmalert-fabricmon.service",
                                     {{"${VM_URL}", Url(vm_port_)},
                                      {"${ALERTMANAGER_URL}", Url(am_port_)},
                                      {"${EVALUATION_INTERVAL}", "1s"},
                                      {"%t/fabricmon-vmalert", runtime}});
    if (vmalert.empty()) {
      error_ = "vmalert-fabricmon.service: no ExecStart or unset ${VAR}";
      return;
    }
    vmalert_ =
        Start("vmalert", Append(vmalert, {"-httpListenAddr=127.0.0.1:" +
                                          std::to_string(vmalert_port_)}));
    StartPrometheus();
    if (!WaitFor([&] { return Ready(); }, seconds(60))) {
      error_ = "the stack never became ready; see the logs in " + dir_.string();
    }
  }

  ~Stack() {
    // VM_STACK_HOLD=N keeps the stack up N s more, to query it by hand.
    if (const char* hold = std::getenv("VM_STACK_HOLD")) {
      std::this_thread::sleep_for(seconds(std::atoi(hold)));
    }
    // Stop the scrapers and evaluators before what they talk to.
    prometheus_.reset();
    vmalert_.reset();
    vmagents_.clear();
    am_.reset();
    vm_.reset();
    prom_vm_.reset();
    daemons_.clear();
    sim_.reset();
    if (!::testing::Test::HasFailure()) fs::remove_all(dir_);
  }

  const std::string& error() const { return error_; }
  const std::vector<std::string>& targets() const { return targets_; }
  int vm_port() const { return vm_port_; }
  int prometheus_port() const { return prom_port_; }
  int prometheus_vm_port() const { return prom_vm_port_; }
  int vmalert_port() const { return vmalert_port_; }
  int alertmanager_port() const { return am_port_; }
  int vmagent_port(int i) const { return vmagent_ports_[i]; }

  // SIGTERM to vmagent `i` (waits for it to exit), then the same command
  // again.
  void RestartVmagent(int i) {
    vmagents_[i].reset();
    StartVmagent(i);
  }

 private:
  static std::string Url(int port) {
    return "http://127.0.0.1:" + std::to_string(port);
  }
  static std::vector<std::string> Append(std::vector<std::string> argv,
                                         const std::vector<std::string>& more) {
    argv.insert(argv.end(), more.begin(), more.end());
    return argv;
  }

  std::unique_ptr<sim::Session> Start(const std::string& name,
                                      const std::vector<std::string>& argv) {
    return std::make_unique<sim::Session>(Join(argv),
                                          (dir_ / (name + ".log")).string());
  }

  bool StartDaemons(const std::string& scenario, int hosts,
                    const std::vector<std::string>& sim_args) {
    sim_ = Start("sim",
                 Append({Binary("fabricmon-sim"), "--out",
                         (dir_ / "sim").string(), "--scenario", scenario,
                         "--hosts", std::to_string(hosts), "--tick", "100ms"},
                        sim_args));
    if (!sim::WaitRendered(dir_ / "sim.log", seconds(30))) {
      error_ = "simulator did not render: " + ReadFile(dir_ / "sim.log");
      return false;
    }
    std::string json;
    for (int h = 0; h < hosts; ++h) {
      const fs::path root = dir_ / "sim" / ("host" + std::to_string(h));
      const fs::path config =
          dir_ / ("fabricmon" + std::to_string(h) + ".yaml");
      std::ofstream(config) << SimHostConfig(root);
      const std::string name = "fabricmon" + std::to_string(h);
      daemons_.push_back(Start(
          name,
          {Binary("fabricmon"), "--config", config.string(), "--sysfs.root",
           root.string(), "--web.listen-address", "127.0.0.1:0"}));
      std::smatch m;
      const fs::path log = dir_ / (name + ".log");
      std::string text;
      if (!WaitFor(
              [&] {
                text = ReadFile(log);
                return std::regex_search(
                    text, m, std::regex(R"(listening on [^\s]*:(\d+))"));
              },
              seconds(10))) {
        error_ = name + " did not report its port: " + text;
        return false;
      }
      targets_.push_back("127.0.0.1:" + m[1].str());
      json += (json.empty() ? "\"" : ", \"") + targets_.back() + "\"";
    }
    std::ofstream(dir_ / "targets.json")
        << "[{\"targets\": [" << json << "]}]\n";
    return true;
  }

  // The shipped scrape config, every 1 s, on this stack's file_sd file.
  void WriteScrapeConfig() {
    YAML::Node scrape =
        YAML::LoadFile(Src("deploy/victoriametrics/scrape.yml"));
    scrape["global"]["scrape_interval"] = "1s";
    scrape["global"]["scrape_timeout"] = "1s";
    scrape["scrape_configs"][0]["file_sd_configs"][0]["files"][0] =
        (dir_ / "targets.json").string();
    std::ofstream(dir_ / "scrape.yml") << YAML::Dump(scrape) << "\n";
  }

  int StartVictoriaMetrics(const std::string& name,
                           std::unique_ptr<sim::Session>* out) {
    const int port = FreeLoopbackPort();
    // latencyOffset: queries see samples 1 s old (default 30 s), so the
    // rules see what Prometheus sees as soon as it does.
    *out =
        Start(name, {"/usr/bin/victoria-metrics",
                     "-storageDataPath=" + (dir_ / (name + "-data")).string(),
                     "-httpListenAddr=127.0.0.1:" + std::to_string(port),
                     "-search.latencyOffset=1s", "-loggerLevel=WARN"});
    return port;
  }

  void StartVmagent(int i) {
    const auto argv =
        UnitCommand("vmagent-fabricmon@.service",
                    {{"${VMAGENT_MEMBERS}", std::to_string(kVmagents)},
                     {"%i", std::to_string(i)},
                     {"${VM_URL}", Url(vm_port_)},
                     {"${STATE_DIRECTORY}",
                      (dir_ / ("vmagent" + std::to_string(i))).string()},
                     {"/etc/fabricmon/vmagent-scrape.yml",
                      (dir_ / "scrape.yml").string()}});
    if (argv.empty()) {
      error_ = "vmagent-fabricmon@.service: no ExecStart or unset ${VAR}";
      return;
    }
    vmagents_[i] = Start("vmagent" + std::to_string(i),
                         Append(argv, {"-httpListenAddr=127.0.0.1:" +
                                           std::to_string(vmagent_ports_[i]),
                                       "-promscrape.fileSDCheckInterval=1s",
                                       "-loggerLevel=WARN"}));
  }

  // The shipped remote-write alternative as one server (modulus 1 keeps
  // every target), with the rules, writing to the second victoria-metrics.
  void StartPrometheus() {
    YAML::Node config = YAML::LoadFile(
        Src("deploy/victoriametrics/prometheus-remote-write.yml"));
    config["global"]["scrape_interval"] = "1s";
    config["global"]["evaluation_interval"] = "1s";
    YAML::Node job = config["scrape_configs"][0];
    job["file_sd_configs"][0]["files"][0] = (dir_ / "targets.json").string();
    for (auto relabel : job["relabel_configs"]) {
      if (relabel["modulus"]) relabel["modulus"] = 1;
    }
    config["remote_write"][0]["url"] = Url(prom_vm_port_) + "/api/v1/write";
    config["rule_files"].push_back(
        (dir_ / "rules/recording_rules.yml").string());
    config["rule_files"].push_back(
        (dir_ / "rules/alerting_rules.yml").string());
    std::ofstream(dir_ / "prometheus.yml") << YAML::Dump(config) << "\n";
    prom_port_ = FreeLoopbackPort();
    prometheus_ =
        Start("prometheus",
              {"/usr/bin/prometheus",
               "--config.file=" + (dir_ / "prometheus.yml").string(),
               "--storage.tsdb.path=" + (dir_ / "prom-data").string(),
               "--web.listen-address=127.0.0.1:" + std::to_string(prom_port_),
               "--log.level=warn"});
  }

  // Every target up in both stores and in Prometheus, the recording rules
  // written by vmalert, Alertmanager answering.
  bool Ready() {
    const std::string n = std::to_string(targets_.size());
    auto all_up = [&](int port) {
      auto r = Query(port, "count(up{job=\"fabricmon\"} == 1)");
      return r && r->size() == 1 &&
             std::to_string(int(r->begin()->second)) == n;
    };
    auto recorded =
        Query(vm_port_, "count(fabric:port_transmit_utilization_ratio:rate5m)");
    return all_up(vm_port_) && all_up(prom_port_) && all_up(prom_vm_port_) &&
           recorded && !recorded->empty() &&
           HttpGetOk(am_port_, "/-/ready").has_value();
  }

  fs::path dir_;
  std::string error_;
  std::vector<std::string> targets_;
  std::unique_ptr<sim::Session> sim_, vm_, prom_vm_, am_, vmalert_, prometheus_;
  std::vector<std::unique_ptr<sim::Session>> daemons_, vmagents_;
  std::vector<int> vmagent_ports_;
  int vm_port_ = 0, prom_vm_port_ = 0, am_port_ = 0, vmalert_port_ = 0,
      prom_port_ = 0;
};

}  // namespace fabric::testing::vm
