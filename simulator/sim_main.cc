// fabricmon-sim: writes live simulated sysfs trees for N hosts.
//
//   fabricmon-sim --out DIR [--scenario S | --timeline FILE] [--hosts N]
//                 [--tick 100ms] [--duration 60s] [--warmup 0s]
//                 [--mad-socket PATH] [--probe-relay IP:PORT] ...
//
// Each host's tree is DIR/host<i>/ (use it as --sysfs.root or as
// node_exporter's --path.sysfs); DIR/host<i>/ethtool/<netdev> holds the
// RoCE netdev's `ethtool -S` text (the daemon's config key ethtool_dir) and
// DIR/host<i>/dcb/<netdev> its DCB configuration as iproute2's `dcb` prints
// it (config key dcb_dir).
// --mad-socket answers the fabric's MADs from the running model on a Unix
// socket (simulator/mad_socket.h; `fabricmon --sim.mad-socket PATH`);
// --probe-relay carries the daemons' probes between the hosts, host i's
// responder being IP:PORT+i, and writes DIR/host<i>/probe-peers
// (simulator/probe_relay.h). Both only while live (not with --duration 0).
// Runs until SIGINT/SIGTERM (then removes the trees, unless --keep) or until
// --duration of simulated-and-real time has passed (then leaves them).
// --duration 0 renders once and exits: a frozen tree, e.g. after --warmup of
// simulated time.
#include <linux/magic.h>
#include <signal.h>
#include <sys/vfs.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "simulator/mad_socket.h"
#include "simulator/probe_relay.h"
#include "simulator/runner.h"
#include "simulator/timeline.h"

namespace {

using fabric::sim::Duration;
using fabric::sim::ParseDuration;

// CLI11 validator/transformer for "100ms"-style durations.
bool ToDuration(const std::string& text, Duration* out, const char* flag) {
  const auto d = ParseDuration(text);
  if (!d) {
    std::fprintf(stderr, "fabricmon-sim: bad duration for %s: '%s'\n", flag,
                 text.c_str());
    return false;
  }
  *out = *d;
  return true;
}

// "IP:PORT" for --probe-relay.
bool ToAddress(const std::string& text, std::string* ip, int* port) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  try {
    std::size_t used = 0;
    *port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || *port < 1 || *port > 65535) {
      return false;
    }
  } catch (const std::exception&) {
    return false;
  }
  *ip = text.substr(0, colon);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fabricmon-sim: live simulated InfiniBand/RoCE sysfs trees"};
  std::string out, scenario = "steady", timeline_file;
  int hosts = 4;
  std::string tick = "100ms", duration, warmup = "0s";
  std::string period, burst_length, burst_period;
  double load = -1, duty = -1, size = -1;
  bool keep = false;
  app.add_option("--out", out, "output directory (one subdir per host)")
      ->required();
  std::string names;
  for (const auto& n : fabric::sim::ScenarioNames()) names += n + " ";
  app.add_option("--scenario", scenario, "scenario: " + names);
  app.add_option("--timeline", timeline_file,
                 "YAML timeline (overrides --scenario)");
  app.add_option("--hosts", hosts, "number of hosts")
      ->check(CLI::Range(1, 256));
  app.add_option("--tick", tick, "simulation tick");
  app.add_option("--duration", duration,
                 "run time (default: until killed; 0: render once, exit)");
  app.add_option("--warmup", warmup,
                 "simulated time stepped instantly before the first render");
  app.add_option("--load", load, "all-reduce burst load, fraction of line rate")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--duty-cycle", duty, "fraction of each period in a burst")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--period", period, "all-reduce period");
  app.add_option("--size", size, "bytes per port per burst (overrides --load)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--burst-length", burst_length,
                 "scenario on only this long ...");
  app.add_option("--burst-period", burst_period, "... every this period");
  app.add_flag("--keep", keep, "leave the trees when stopped by a signal");
  std::string mad_socket, probe_relay;
  app.add_option("--mad-socket", mad_socket,
                 "answer the fabric's MADs on this Unix socket "
                 "(fabricmon --sim.mad-socket)");
  app.add_option("--probe-relay", probe_relay,
                 "IP:PORT: relay the daemons' probes, host i's responder "
                 "at IP:PORT+i; writes DIR/host<i>/probe-peers");
  CLI11_PARSE(app, argc, argv);

  fabric::sim::SimConfig config;
  config.hosts = hosts;
  if (!ToDuration(tick, &config.tick, "--tick")) return 2;
  if (config.tick.count() <= 0) {
    std::fprintf(stderr, "fabricmon-sim: --tick must be > 0\n");
    return 2;
  }
  if (!timeline_file.empty()) {
    std::ifstream in(timeline_file);
    if (!in) {
      std::fprintf(stderr, "fabricmon-sim: cannot read %s\n",
                   timeline_file.c_str());
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    std::string error;
    auto timeline = fabric::sim::ParseTimeline(text.str(), &error);
    if (!timeline) {
      std::fprintf(stderr, "fabricmon-sim: %s: %s\n", timeline_file.c_str(),
                   error.c_str());
      return 2;
    }
    config.timeline = std::move(*timeline);
  } else {
    const auto s = fabric::sim::ParseScenario(scenario);
    if (!s) {
      std::fprintf(stderr, "fabricmon-sim: unknown scenario '%s' (known: %s)\n",
                   scenario.c_str(), names.c_str());
      return 2;
    }
    config.timeline = fabric::sim::SingleScenario(*s);
  }
  auto& traffic = config.timeline.traffic;
  if (load >= 0) traffic.load = load;
  if (duty >= 0) traffic.duty_cycle = duty;
  if (size >= 0) traffic.size_bytes = size;
  if (!period.empty() && !ToDuration(period, &traffic.period, "--period")) {
    return 2;
  }
  if (traffic.period.count() <= 0) {
    std::fprintf(stderr, "fabricmon-sim: --period must be > 0\n");
    return 2;
  }
  if (!burst_length.empty() || !burst_period.empty()) {
    Duration len{0}, per{0};
    if (!ToDuration(burst_length, &len, "--burst-length") ||
        !ToDuration(burst_period, &per, "--burst-period") || len.count() <= 0 ||
        per.count() <= 0) {
      std::fprintf(stderr,
                   "fabricmon-sim: --burst-length and --burst-period go "
                   "together and must be > 0\n");
      return 2;
    }
    for (auto& e : config.timeline.events) {
      e.burst_length = len;
      e.burst_period = per;
    }
  }
  Duration run{0};
  const bool forever = duration.empty();
  if (!forever && !ToDuration(duration, &run, "--duration")) return 2;
  Duration warm{0};
  if (!ToDuration(warmup, &warm, "--warmup")) return 2;
  std::string relay_ip;
  int relay_port = 0;
  if (!probe_relay.empty() &&
      (!ToAddress(probe_relay, &relay_ip, &relay_port) ||
       relay_port + hosts - 1 > 65535)) {
    std::fprintf(stderr, "fabricmon-sim: bad --probe-relay '%s' (IP:PORT)\n",
                 probe_relay.c_str());
    return 2;
  }

  // Before the runner thread exists, so only sigtimedwait below sees them.
  const sigset_t stop_signals = fabric::sim::BlockStopSignals();

  // Renaming hundreds of files per tick is cheap on tmpfs but forces
  // write-out on ext4 (replace-via-rename), which can lag real time badly.
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  struct statfs fs_info {};
  if (forever || run.count() != 0) {  // live, not a frozen tree
    if (::statfs(out.c_str(), &fs_info) == 0 && fs_info.f_type != TMPFS_MAGIC) {
      std::fprintf(stderr,
                   "fabricmon-sim: warning: %s is not on tmpfs; live "
                   "rendering may lag real time (use /dev/shm)\n",
                   out.c_str());
    }
  }
  fabric::sim::LiveRunner runner(config, out);
  runner.Warmup(warm);
  std::string error;
  if (!runner.RenderNow(&error)) {
    std::fprintf(stderr, "fabricmon-sim: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "fabricmon-sim: %d host(s) under %s\n", hosts,
               out.c_str());
  if (!forever && run.count() == 0) return 0;  // frozen tree

  fabric::sim::MadSocketServer mad_server(runner);
  if (!mad_socket.empty() && !mad_server.Start(mad_socket, &error)) {
    std::fprintf(stderr, "fabricmon-sim: %s\n", error.c_str());
    return 1;
  }
  std::vector<int> responders;
  for (int i = 0; i < hosts; ++i) responders.push_back(relay_port + i);
  fabric::sim::ProbeRelay relay(runner, relay_ip, responders);
  if (!probe_relay.empty() &&
      (!relay.Start(&error) ||
       !relay.WritePeersFiles(runner.host_roots(), &error))) {
    std::fprintf(stderr, "fabricmon-sim: %s\n", error.c_str());
    return 1;
  }

  runner.Start(run);
  int signal_seen = 0;
  while (runner.running()) {
    timespec wait{0, 200'000'000};
    const int sig = sigtimedwait(&stop_signals, nullptr, &wait);
    if (sig > 0) {
      signal_seen = sig;
      break;
    }
  }
  runner.Stop();
  runner.Wait();
  if (!runner.error().empty()) {
    std::fprintf(stderr, "fabricmon-sim: render error: %s\n",
                 runner.error().c_str());
  }
  if (signal_seen && !keep) runner.RemoveTrees();
  return runner.error().empty() ? 0 : 1;
}
