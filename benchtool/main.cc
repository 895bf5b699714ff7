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
#include "benchtool/push.h"
#include "benchtool/report.h"
#include "benchtool/results.h"
#include "probe/peers.h"
#include "sources/ethtool_ioctl.h"
#include "sources/sysfs.h"

namespace fb = fabric::bench;

namespace {

// SIGINT/SIGTERM during `run` write a byte here; the coordinator sees it,
// stops the agents and returns, so --local's namespaces, agents and key
// are removed as after any other failure.
int g_interrupt[2] = {-1, -1};

extern "C" void OnInterrupt(int) {
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

int RunAgent(const std::string& listen, const std::string& key_path) {
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
  o.counters = fb::HostCounterSource(fabric::MakeRealSysfs("/sys"),
                                     fabric::MakeRealEthtoolSource());
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
  std::string key_file, out = "results.json", label;
  int local = 0, iterations = 20, warmup = 5, tp = 2, io_timeout_ms = 10000;
  std::string local_rate = "1gbit";
  bool no_netns = false;
  run->add_option("--pattern", pattern, "pattern")
      ->required()
      ->check(CLI::IsMember(fb::PatternNames()));
  auto* hosts_opt = run->add_option(
      "--hosts", hosts_file, "agents: host:port per line, or file_sd JSON");
  auto* local_opt = run->add_option(
      "--local", local, "start N local agents (namespaces when root)");
  hosts_opt->excludes(local_opt);
  run->add_option("--sizes", sizes, "FROM:TO:xF, FROM:TO:+S or a,b,c")
      ->capture_default_str();
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
  run->add_option("--tp", tp, "tp-dp: hosts per tensor-parallel group")
      ->capture_default_str();
  run->add_option("--label", label, "name of this run in reports");
  run->add_option("--io-timeout-ms", io_timeout_ms)->capture_default_str();
  run->add_option("--local-rate", local_rate,
                  "--local: tbf rate per veth direction ('' = unshaped)")
      ->capture_default_str();
  run->add_flag("--local-loopback", no_netns,
                "--local: loopback even when namespaces are possible");

  // agent
  auto* agent = app.add_subcommand(
      "agent",
      "run a standalone agent (what --local starts; a daemon with "
      "collectors.bench_agent enabled is the usual agent)");
  std::string listen = ":10916", agent_key;
  agent->add_option("--listen", listen)->capture_default_str();
  agent->add_option("--key", agent_key)->required();

  // report
  auto* report = app.add_subcommand(
      "report", "write a self-contained HTML report of one or more runs");
  std::vector<std::string> report_inputs;
  std::string report_out = "report.html";
  report->add_option("results", report_inputs, "results.json [other.json...]")
      ->required()
      ->check(CLI::ExistingFile);
  report->add_option("--out", report_out)->capture_default_str();

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
  if (*agent) return RunAgent(listen, agent_key);
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
    f << fb::ReportHtml(runs, names);
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
  o.progress = [](const std::string& s) { std::cerr << "  " << s << "\n"; };
  CatchInterrupts();
  o.interrupt_fd = g_interrupt[0];
  std::unique_ptr<fb::LocalCluster> cluster;
  if (local > 0) {
    fb::LocalOptions lo;
    lo.agents = local;
    lo.netns = !no_netns;
    lo.rate = local_rate;
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
  fb::RunOutcome outcome = fb::RunBenchmark(o);
  cluster.reset();
  if (!outcome.ok) {
    std::cerr << "fabricmon-bench: run failed: " << outcome.error << "\n";
    return 1;
  }
  fb::Results r = fb::Summarize(o, outcome, label);
  std::ofstream f(out);
  f << fb::ToJson(r);
  if (!f) {
    std::cerr << "fabricmon-bench: cannot write " << out << "\n";
    return 1;
  }
  std::printf("%12s %12s %12s %12s %12s %12s\n", "size(B)", "time(us)",
              "p99(us)", "algbw(GB/s)", "busbw(GB/s)", "");
  for (const auto& row : r.results) {
    std::printf("%12llu %12.1f %12.1f %12.4f %12.4f\n",
                static_cast<unsigned long long>(row.size_bytes),
                row.time_seconds * 1e6, row.p99_seconds * 1e6,
                row.algbw_bytes_per_second / 1e9,
                row.busbw_bytes_per_second / 1e9);
  }
  return 0;
}
