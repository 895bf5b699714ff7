// fabricmon-bench: run a collective pattern between fabricmon agents and
// report it (docs/bench.md). Subcommands: run, report, push, keygen, agent.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "auth/key_file.h"
#include "benchtool/agent.h"
#include "benchtool/coordinator.h"
#include "benchtool/host_counters.h"
#include "benchtool/local.h"
#include "benchtool/patterns.h"
#include "benchtool/progress.h"
#include "benchtool/push.h"
#include "benchtool/report.h"
#include "benchtool/results.h"
#include "benchtool/run_info.h"
#include "exporters/exposition.h"
#include "probe/peers.h"
#include "sources/ethtool_ioctl.h"
#include "sources/rail_class.h"
#include "sources/sysfs.h"

namespace fb = fabric::bench;

namespace {

// SIGINT/SIGTERM during `run` write a byte here; the coordinator sees it,
// stops the agents and returns the sizes completed, so --local's
// namespaces, agents and key are removed as after any other failure and
// what was measured is written. The exit status is 128 + the signal.
int g_interrupt[2] = {-1, -1};
volatile sig_atomic_t g_signal = 0;

extern "C" void OnInterrupt(int signo) {
  g_signal = signo;
  char c = 1;
  (void)!write(g_interrupt[1], &c, 1);
}

void CatchInterrupts() {
  if (pipe2(g_interrupt, O_CLOEXEC | O_NONBLOCK) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

// The probe helper's peer lists: one host:port per line ('#' comments) or a
// Prometheus file_sd JSON list; no port = 10916.
std::vector<std::string> ReadHosts(const std::string& path,
                                   std::string* error) {
  std::string text;
  if (!ReadFile(path, &text)) {
    *error = "cannot read --hosts " + path;
    return {};
  }
  auto peers = fabric::probe::ParsePeersFile(text, error);
  if (!peers) {
    *error = path + ": " + *error;
    return {};
  }
  std::vector<std::string> hosts;
  for (const auto& p : *peers) {
    bool v6 = p.host.find(':') != std::string::npos;
    hosts.push_back((v6 ? "[" + p.host + "]" : p.host) + ":" +
                    std::to_string(p.port));
  }
  if (hosts.empty()) *error = path + ": no hosts";
  return hosts;
}

// What results.json says about the run beyond its numbers (run_info.h).
fb::RunInfo DescribeRun(const fb::RunOptions& o,
                        const fb::LocalCluster* cluster,
                        const std::string& local_rate,
                        const std::string& line_rate) {
  fb::RunInfo info;
  info.hosts = o.hosts;
  fabric::BuildInfo build = fabric::ThisBuild();
  info.fabricmon_version = build.version;
  info.fabricmon_revision = build.revision;
  fb::ReadSlurmAllocation(std::getenv, &info);
  if (cluster) {
    info.link = cluster->description();
    info.devices_from = "this host (--local)";
    info.devices = fb::ReadDevices(*fabric::MakeRealSysfs("/sys"));
  } else {
    info.devices_from = "none: agents (--hosts) do not report their devices";
  }
  if (!line_rate.empty()) {
    info.line_rate_bytes_per_second = fb::ParseTcRate(line_rate);
    info.line_rate_source = "--line-rate " + line_rate;
  } else if (cluster && cluster->in_netns() && !local_rate.empty()) {
    info.line_rate_bytes_per_second = fb::ParseTcRate(local_rate);
    info.line_rate_source = "tbf " + local_rate;
  }
  return info;
}

int RunAgent(const std::string& listen, const std::string& key_path,
             const std::string& sysfs_root) {
  std::string error;
  auto key = fabric::LoadKeyFile(key_path, &error);
  if (!key) {
    std::cerr << "fabricmon-bench agent: " << error << "\n";
    return 2;
  }
  boost::asio::io_context io;
  fb::AgentOptions o;
  o.listen_address = listen;
  o.key = *key;
  std::shared_ptr<const fabric::Sysfs> sysfs =
      fabric::MakeRealSysfs(sysfs_root);
  o.counters = fb::HostCounterSource(sysfs, fabric::MakeRealEthtoolSource());
  o.rails = [sysfs] { return fabric::ReadRailSummaries(*sysfs); };
  fb::BenchAgent agent(io, o);
  if (!agent.Start(&error)) {
    std::cerr << "fabricmon-bench agent: " << error << "\n";
    return 1;
  }
  std::printf("listening on %u\n", agent.port());
  std::fflush(stdout);
  boost::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](auto, int) {
    agent.Stop();
    io.stop();
  });
  io.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fabricmon-bench: collective-pattern benchmark between "
      "fabricmon agents"};
  app.require_subcommand(1);

  // run
  auto* run = app.add_subcommand("run", "run a pattern and write results");
  std::string pattern, hosts_file, sizes = "8:1G:x2", transport = "tcp";
  std::string key_file, out = "results.json", label, run_report;
  int local = 0, iterations = 20, warmup = 5, tp = 2, io_timeout_ms = 10000;
  std::string local_rate = "1gbit", line_rate;
  bool no_netns = false;
  run->add_option("--pattern", pattern, "pattern")
      ->required()
      ->check(CLI::IsMember(fb::PatternNames()));
  auto* hosts_opt = run->add_option(
      "--hosts", hosts_file, "agents: host:port per line, or file_sd JSON");
  auto* local_opt = run->add_option(
      "--local", local, "start N local agents (namespaces when root)");
  hosts_opt->excludes(local_opt);
  auto* sizes_opt = run->add_option(
      "--sizes", sizes,
      "FROM:TO:xF, FROM:TO:+S or a,b,c (--local: 8 B up to what the link "
      "moves in about 30 s per size, so a first run takes about a minute)");
  sizes_opt->capture_default_str();
  run->add_option("--iterations", iterations)
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  run->add_option("--warmup", warmup)
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  run->add_option("--transport", transport)
      ->check(CLI::IsMember({"tcp", "rdma"}))
      ->capture_default_str();
  run->add_option("--key", key_file, "shared key file (the probe key)");
  run->add_option("--out", out)->capture_default_str();
  run->add_option("--report", run_report,
                  "HTML report of this run (default: --out with .html)");
  run->add_option("--tp", tp, "tp-dp: hosts per tensor-parallel group")
      ->capture_default_str();
  run->add_option("--label", label, "name of this run in reports");
  run->add_option("--io-timeout-ms", io_timeout_ms)->capture_default_str();
  run->add_option("--local-rate", local_rate,
                  "--local: tbf rate per veth direction ('' = unshaped)")
      ->capture_default_str();
  run->add_option("--line-rate", line_rate,
                  "link rate the report draws, as tc writes it (400gbit); "
                  "default: --local's --local-rate in namespaces");
  run->add_flag("--local-loopback", no_netns,
                "--local: loopback even when namespaces are possible");
  bool allow_mixed = false;
  run->add_flag("--allow-mixed", allow_mixed,
                "run a host set whose rails differ in fabric class or fabric "
                "(refused otherwise); results.json and the report keep the "
                "warning");
  std::vector<std::string> local_sysfs;
  run->add_option("--local-sysfs", local_sysfs,
                  "--local: sysfs roots the agents read their rails and "
                  "counters from, agent i the (i mod n)-th (default /sys)")
      ->delimiter(',');

  // agent
  auto* agent = app.add_subcommand(
      "agent",
      "run a standalone agent (what --local starts; a daemon with "
      "collectors.bench_agent enabled is the usual agent)");
  std::string listen = ":10916", agent_key;
  agent->add_option("--listen", listen)->capture_default_str();
  agent->add_option("--key", agent_key)->required();
  std::string agent_sysfs = "/sys";
  agent
      ->add_option("--sysfs.root", agent_sysfs,
                   "the host's sysfs (its rails and counters)")
      ->capture_default_str();

  // report
  auto* report = app.add_subcommand(
      "report", "write a self-contained HTML report of one or more runs");
  std::vector<std::string> report_inputs;
  std::string report_out = "report.html";
  bool log_y = false;
  report->add_option("results", report_inputs, "results.json [other.json...]")
      ->required()
      ->check(CLI::ExistingFile);
  report->add_option("--out", report_out)->capture_default_str();
  report->add_flag("--log-y", log_y, "bus bandwidth on a log scale");

  // push
  auto* push =
      app.add_subcommand("push", "push results to a Prometheus Pushgateway");
  std::string gateway, push_input, push_run;
  push->add_option("--gateway", gateway, "http://host:port")->required();
  push->add_option("--run", push_run, "run label (default: the results')");
  push->add_option("results", push_input)->required()->check(CLI::ExistingFile);

  // keygen
  auto* keygen = app.add_subcommand("keygen", "print a new random key (hex)");

  CLI11_PARSE(app, argc, argv);

  if (*keygen) {
    std::cout << fabric::GenerateKeyHex() << "\n";
    return 0;
  }
  if (*agent) return RunAgent(listen, agent_key, agent_sysfs);
  if (*report || *push) {
    std::vector<fb::Results> runs;
    std::vector<std::string> names;
    for (const auto& path :
         *report ? report_inputs : std::vector<std::string>{push_input}) {
      std::string text, error;
      if (!ReadFile(path, &text)) {
        std::cerr << "fabricmon-bench: cannot read " << path << "\n";
        return 1;
      }
      auto r = fb::FromJson(text, &error);
      if (!r) {
        std::cerr << "fabricmon-bench: " << path << ": " << error << "\n";
        return 1;
      }
      runs.push_back(std::move(*r));
      names.push_back(path);
    }
    if (*push) {
      std::string error;
      if (fb::PushResults(gateway, runs[0], push_run, &error) < 0 ||
          !error.empty()) {
        std::cerr << "fabricmon-bench: " << error << "\n";
        return 1;
      }
      return 0;
    }
    std::ofstream f(report_out);
    fb::ReportOptions ro;
    ro.log_y = log_y;
    f << fb::ReportHtml(runs, names, ro);
    if (!f) {
      std::cerr << "fabricmon-bench: cannot write " << report_out << "\n";
      return 1;
    }
    return 0;
  }

  // run
  std::string error;
  fb::RunOptions o;
  o.pattern = *fb::ParsePattern(pattern);
  o.tp = tp;
  o.iterations = iterations;
  o.warmup = warmup;
  o.transport = transport;
  o.io_timeout = std::chrono::milliseconds(io_timeout_ms);
  o.sizes = fb::ParseSizes(sizes, &error);
  if (o.sizes.empty()) {
    std::cerr << "fabricmon-bench: " << error << "\n";
    return 2;
  }
  o.progress = [](const fb::SizeProgress& p) {
    if (p.done) std::cerr << "  " << fb::ProgressLine(p) << std::endl;
  };
  CatchInterrupts();
  o.interrupt_fd = g_interrupt[0];
  o.allow_mixed = allow_mixed;
  std::unique_ptr<fb::LocalCluster> cluster;
  if (local > 0) {
    fb::LocalOptions lo;
    lo.agents = local;
    lo.netns = !no_netns;
    lo.rate = local_rate;
    lo.sysfs_roots = local_sysfs;
    cluster = fb::LocalCluster::Start(lo, &error);
    if (!cluster) {
      std::cerr << "fabricmon-bench: --local: " << error << "\n";
      return 1;
    }
    std::cerr << "fabricmon-bench: " << local << " local agents ("
              << cluster->description() << ")\n";
    o.hosts = cluster->hosts();
    o.key = cluster->key();
  } else {
    if (hosts_file.empty()) {
      std::cerr << "fabricmon-bench: one of --hosts or --local is needed\n";
      return 2;
    }
    if (key_file.empty()) {
      std::cerr << "fabricmon-bench: --key is needed with --hosts\n";
      return 2;
    }
    o.hosts = ReadHosts(hosts_file, &error);
    if (o.hosts.empty()) {
      std::cerr << "fabricmon-bench: " << error << "\n";
      return 2;
    }
    auto key = fabric::LoadKeyFile(key_file, &error);
    if (!key) {
      std::cerr << "fabricmon-bench: " << error << "\n";
      return 2;
    }
    o.key = *key;
  }
  fb::RunInfo info = DescribeRun(o, cluster.get(), local_rate, line_rate);
  // A first --local run should take about a minute, not the ten that
  // 8:1G:x2 takes at 1 Gbit/s: sizes up to what the link moves in ~30 s.
  if (cluster && sizes_opt->count() == 0) {
    o.sizes = fb::LocalSizes(
        cluster->in_netns() ? fb::ParseTcRate(local_rate) : 0,
        fb::BusBwFactor(o.pattern, static_cast<int>(o.hosts.size()), o.tp),
        o.warmup + o.iterations);
  }
  std::cerr << "fabricmon-bench: " << o.sizes.size() << " sizes, "
            << fb::SizeText(o.sizes.front()) << " to "
            << fb::SizeText(o.sizes.back()) << ", " << o.warmup << " warm-up + "
            << o.iterations << " iterations each; Ctrl-C keeps what is done"
            << std::endl;
  info.start_time = fb::IsoTime(std::chrono::system_clock::now());
  fb::RunOutcome outcome = fb::RunBenchmark(o);
  info.end_time = fb::IsoTime(std::chrono::system_clock::now());
  cluster.reset();
  if (!outcome.ok && !outcome.interrupted) {
    std::cerr << "fabricmon-bench: run failed: " << outcome.error << "\n";
    return 1;
  }
  for (const auto& rails : outcome.rails) {
    info.host_fabric_classes.push_back(fb::HostClasses(rails));
  }
  info.fabric_class = outcome.fabric.fabric_class;
  if (outcome.fabric.mixed) {
    info.mixed_warning = outcome.fabric.message;
    std::cerr << "fabricmon-bench: WARNING (--allow-mixed): "
              << outcome.fabric.message << "; the results mix fabric classes\n";
  }
  fb::Results r = fb::Summarize(o, outcome, label, std::move(info));
  std::ofstream f(out);
  f << fb::ToJson(r);
  f.close();
  if (!f) {
    std::cerr << "fabricmon-bench: cannot write " << out << "\n";
    return 1;
  }
  if (run_report.empty()) {
    run_report = out.size() > 5 && out.ends_with(".json")
                     ? out.substr(0, out.size() - 5) + ".html"
                     : out + ".html";
  }
  std::ofstream html(run_report);
  html << fb::ReportHtml({r}, {out});
  html.close();
  if (!html) {
    std::cerr << "fabricmon-bench: cannot write " << run_report << "\n";
    return 1;
  }
  std::string tail = fb::TailName(o.iterations) + "(us)";
  std::printf("%12s %12s %12s %12s %12s\n", "size(B)", "time(us)", tail.c_str(),
              "algbw(GB/s)", "busbw(GB/s)");
  for (const auto& row : r.results) {
    std::printf("%12llu %12.1f %12.1f %12.4f %12.4f\n",
                static_cast<unsigned long long>(row.size_bytes),
                row.time_seconds * 1e6, row.tail_seconds * 1e6,
                row.algbw_bytes_per_second / 1e9,
                row.busbw_bytes_per_second / 1e9);
  }
  if (outcome.interrupted) {
    std::cerr << "fabricmon-bench: interrupted after " << r.results.size()
              << " of " << o.sizes.size() << " sizes; " << out << " and "
              << run_report << " hold them (\"interrupted\": true)\n";
    return 128 + (g_signal ? g_signal : SIGINT);
  }
  return 0;
}
