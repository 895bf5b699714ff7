// fabricmon-bench: run a collective pattern between fabricmon agents and
// report it (docs/bench.md). Subcommands: run, report, push, keygen, agent.
#include <CLI/CLI.hpp>
#include <boost/asio.hpp>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "auth/key_file.h"
#include "benchtool/agent.h"
#include "benchtool/coordinator.h"
#include "benchtool/host_counters.h"
#include "benchtool/local.h"
#include "benchtool/results.h"
#include "core/sysfs.h"

namespace fb = fabric::bench;

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *out = s.str();
  return true;
}

// One host:port per line ('#' comments, blank lines ignored), or a
// Prometheus file_sd JSON list of {"targets": [...]}.
std::vector<std::string> ReadHosts(const std::string& path,
                                   std::string* error) {
  std::string text;
  if (!ReadFile(path, &text)) {
    *error = "cannot read --hosts " + path;
    return {};
  }
  std::vector<std::string> hosts;
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    // file_sd: reuse the JSON reader.
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_array()) {
      *error = path + ": not file_sd JSON";
      return {};
    }
    for (const auto& group : j) {
      if (!group.is_object() || !group.contains("targets")) continue;
      for (const auto& t : group["targets"]) {
        if (t.is_string()) hosts.push_back(t.get<std::string>());
      }
    }
  } else {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      auto hash = line.find('#');
      if (hash != std::string::npos) line.resize(hash);
      auto b = line.find_first_not_of(" \t\r");
      auto e = line.find_last_not_of(" \t\r");
      if (b == std::string::npos) continue;
      hosts.push_back(line.substr(b, e - b + 1));
    }
  }
  for (auto& h : hosts) {
    if (h.find(':') == std::string::npos) h += ":10916";
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
  o.counters = fb::SysfsCounterSource(fabric::MakeRealSysfs("/sys"));
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
  CLI::App app{"fabricmon-bench: collective-pattern benchmark between "
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
  auto* hosts_opt =
      run->add_option("--hosts", hosts_file,
                      "agents: host:port per line, or file_sd JSON");
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
      "agent", "run a standalone agent (what --local starts; a daemon with "
               "collectors.bench_agent enabled is the usual agent)");
  std::string listen = ":10916", agent_key;
  agent->add_option("--listen", listen)->capture_default_str();
  agent->add_option("--key", agent_key)->required();

  // keygen
  auto* keygen = app.add_subcommand("keygen", "print a new random key (hex)");

  CLI11_PARSE(app, argc, argv);

  if (*keygen) {
    std::cout << fabric::GenerateKeyHex() << "\n";
    return 0;
  }
  if (*agent) return RunAgent(listen, agent_key);

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
