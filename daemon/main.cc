// fabricmon entry point: flags, config, logging, then one of --version,
// --signal-reload, --check-config, --once or the daemon. Exit status: 0 ok, 1
// invalid configuration or startup failure, CLI11's codes for usage errors.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "collectors/registry.h"
#include "config/config.h"
#include "core/metric_sink.h"
#include "daemon/collection.h"
#include "daemon/daemon.h"
#include "daemon/options.h"
#include "daemon/reload_verdict.h"
#include "daemon/signal_reload.h"
#include "daemon/simulate.h"
#include "exporters/exposition.h"
#include "http/server.h"

namespace fabric {
namespace {

void SetUpLogging() {
  // stderr only: journald captures it under systemd, and stdout stays clean
  // for --once.
  auto logger = spdlog::stderr_logger_mt("fabricmon");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_default_logger(logger);
  spdlog::flush_on(spdlog::level::info);
}

int RunOnce(const Config& config) {
  // One collection: nothing to gain from keeping handles for a next one.
  auto sysfs = std::shared_ptr<const Sysfs>(
      MakeRealSysfs(config.sysfs_root, SysfsCacheMode::kPerCollection));
  std::vector<std::shared_ptr<const Snapshot>> snapshots;
  bool abandoned = false;
  // One at a time, in registry order; each bounded by its timeout so a hung
  // read cannot hang --once.
  for (const auto& c : BuildCollectors(config, sysfs)) {
    snapshots.push_back(RunCollectionWithTimeout(c, &abandoned));
    if (!snapshots.back()->success) {
      spdlog::warn("collector {} failed", c.name);
    }
  }
  std::cout << ToText(BuildExposition(snapshots, ThisBuild()));
  std::cout.flush();
  int status = std::cout ? 0 : 1;
  if (abandoned) {
    // A collection thread is stuck in a read; do not run exit-time
    // destructors under it.
    spdlog::shutdown();
    std::_Exit(status);
  }
  return status;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  ParsedOptions parsed = ParseOptions(args);
  if (parsed.exit_code) {
    (*parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.output;
    return *parsed.exit_code;
  }
  Options& options = parsed.options;
  options.reload_verdict_path =
      ReloadVerdictPath(std::getenv("RUNTIME_DIRECTORY"));
  // The unit's ExecReload: signals the daemon and waits for its verdict, so
  // a rejected reload fails `systemctl reload`. Loads no config itself.
  if (options.signal_reload_pid) {
    return SignalReload(*options.signal_reload_pid, ThisProcessReloadEnv());
  }
  // A scraper hanging up mid-response must not kill the daemon.
  std::signal(SIGPIPE, SIG_IGN);
  SetUpLogging();

  std::string error;
  auto config = LoadConfigFile(options.config_path, !options.config_given,
                               AllCollectorKeys(), &error);
  if (!config || !ApplyOptions(options, *config, &error)) {
    spdlog::error("{}", error);
    return 1;
  }
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  std::error_code ec;
  const std::string source =
      std::filesystem::exists(options.config_path, ec)
          ? options.config_path
          : options.config_path + " absent, built-in defaults";
  for (const auto& warning : config->warnings) {
    // Printed even at log_level error/off under --check-config: it is part
    // of the command's answer.
    if (options.check_config) {
      std::cerr << warning << "\n";
    } else {
      spdlog::warn("{}", warning);
    }
  }
  if (options.check_config) {
    if (options.web_config_file &&
        !http::LoadSecurity(*options.web_config_file, &error)) {
      spdlog::error("{}", error);
      return 1;
    }
    // Printed even at log_level error/off: it is the command's answer.
    std::cerr << "config ok: " << source << "\n";
    return 0;
  }
  spdlog::info("fabricmon {} ({}), config {}", ThisBuild().version,
               ThisBuild().revision, source);

  std::unique_ptr<Simulation> simulation;
  if (options.simulate) {
    simulation = StartSimulation(*options.simulate, &error);
    if (!simulation) {
      spdlog::error("--simulate: {}", error);
      return 1;
    }
    config->sysfs_root = simulation->sysfs_root();
    // The simulated NIC's ethtool statistics: dumps next to its tree.
    config->ethtool_dir = simulation->ethtool_dir();
    // Its Slurm jobs' tasks: proc/ below the same tree.
    PointJobsAtSimulation(&*config);
    spdlog::info("simulating scenario {} under {}",
                 options.simulate->empty() ? "steady" : *options.simulate,
                 config->sysfs_root);
  }

  if (options.sim_mad_socket) {
    AttachSimulatedMad(*options.sim_mad_socket);
    spdlog::info("MADs: fabricmon-sim at {}", *options.sim_mad_socket);
  }

  if (options.once) return RunOnce(*config);
  return RunDaemon(options, *config);
}

}  // namespace
}  // namespace fabric

int main(int argc, char** argv) { return fabric::Main(argc, argv); }
