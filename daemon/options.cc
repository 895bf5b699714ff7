#include "daemon/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <sstream>

#include "exporters/exposition.h"

namespace fabric {

ParsedOptions ParseOptions(const std::vector<std::string>& args) {
  ParsedOptions parsed;
  Options& o = parsed.options;
  CLI::App app{"fabricmon: InfiniBand and RoCE fabric metrics for Prometheus.",
               "fabricmon"};
  BuildInfo build = ThisBuild();
  app.set_version_flag(
      "--version", "fabricmon " + build.version + " (" + build.revision + ")");
  std::string listen, sysfs, level, simulate, web_config;
  auto* config_opt =
      app.add_option("--config", o.config_path,
                     "YAML config file; a missing default file means "
                     "built-in defaults")
          ->capture_default_str();
  auto* listen_opt = app.add_option("--web.listen-address", listen,
                                    "HOST:PORT to serve /metrics on "
                                    "(default from config, \":10915\")");
  auto* web_config_opt = app.add_option(
      "--web.config.file", web_config,
      "Exporter-toolkit web config (TLS, basic auth) for /metrics; "
      "re-read on SIGHUP");
  auto* sysfs_opt = app.add_option("--sysfs.root", sysfs,
                                   "Root of the sysfs tree to read "
                                   "(default from config, \"/sys\")");
  auto* level_opt = app.add_option(
      "--log.level", level,
      "trace, debug, info, warn, error, critical or off (default info)");
  app.add_flag("--once", o.once,
               "Run every enabled collector once, print the exposition to "
               "stdout and exit");
  app.add_flag("--check-config", o.check_config,
               "Validate the configuration and exit 0 (valid) or 1");
  int reload_pid = 0;
  // Only a positive PID: kill(0 or -1, ...) would signal process groups.
  auto* reload_opt =
      app.add_option("--signal-reload", reload_pid,
                     "Send SIGHUP (reload) to the fabricmon with this PID and "
                     "exit; what `systemctl reload` runs (no /bin/kill needed)")
          ->check(CLI::PositiveNumber);
  auto* simulate_opt =
      app.add_option("--simulate", simulate,
                     "Run against the built-in fabric simulator "
                     "(--simulate or --simulate=SCENARIO)")
          ->expected(0, 1);
  std::string sim_mad_socket;
  auto* sim_mad_opt =
      app.add_option("--sim.mad-socket", sim_mad_socket,
                     "With --sysfs.root on a fabricmon-sim host tree: send "
                     "the sm/fabric collectors' MADs to that fabricmon-sim "
                     "(its --mad-socket PATH) instead of libibumad")
          ->excludes(simulate_opt);

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    parsed.exit_code = app.exit(e, out, err);
    parsed.output = out.str() + err.str();
    return parsed;
  }
  o.config_given = config_opt->count() > 0;
  if (listen_opt->count()) o.listen_address = listen;
  if (sysfs_opt->count()) o.sysfs_root = sysfs;
  if (web_config_opt->count()) o.web_config_file = web_config;
  if (level_opt->count()) o.log_level = level;
  if (simulate_opt->count()) o.simulate = simulate;
  if (sim_mad_opt->count()) o.sim_mad_socket = sim_mad_socket;
  if (reload_opt->count()) o.signal_reload_pid = reload_pid;
  return parsed;
}

bool ApplyOptions(const Options& options, Config& config, std::string* error) {
  if (options.listen_address) {
    if (!ValidListenAddress(*options.listen_address)) {
      *error = "config error: --web.listen-address: \"" +
               *options.listen_address + "\" is not HOST:PORT";
      return false;
    }
    config.listen_address = *options.listen_address;
  }
  if (options.log_level) {
    if (!ValidLogLevel(*options.log_level)) {
      *error = "config error: --log.level: \"" + *options.log_level +
               "\" is not a log level";
      return false;
    }
    config.log_level = *options.log_level;
  }
  if (options.sysfs_root) {
    if (options.sysfs_root->empty()) {
      *error = "config error: --sysfs.root: is empty";
      return false;
    }
    config.sysfs_root = *options.sysfs_root;
  }
  // The simulated fabric's switches are there to be swept: --simulate turns
  // the fabric collector on (it answers through the simulator's MAD view,
  // daemon/simulate.h), at every load and reload alike.
  if (options.simulate) {
    if (auto it = config.collectors.find("fabric");
        it != config.collectors.end()) {
      it->second.enabled = true;
    }
  }
  return true;
}

}  // namespace fabric
