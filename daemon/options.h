// Command-line options (CLI11), as README.md (Usage) documents them, named
// after the Prometheus exporter conventions. Flags override the config file.
//
// Thread-safety: pure functions on values.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace fabric {

struct Options {
  std::string config_path = std::string(kDefaultConfigPath);
  bool config_given = false;                  // --config on the command line
  std::optional<std::string> listen_address;  // --web.listen-address
  std::optional<std::string> sysfs_root;      // --sysfs.root
  // --mad.broker: `mad_broker` (the unit points it at the broker socket).
  std::optional<std::string> mad_broker;
  std::optional<std::string> log_level;  // --log.level
  // --web.config.file: exporter-toolkit TLS/basic-auth file
  // (http/web_config.h); re-read on SIGHUP.
  std::optional<std::string> web_config_file;
  bool once = false;
  bool check_config = false;
  std::optional<std::string> simulate;  // --simulate[=SCENARIO]
  // --sim.mad-socket PATH: the MAD collectors ask the fabricmon-sim that
  // answers on PATH (daemon/simulate.h AttachSimulatedMad).
  std::optional<std::string> sim_mad_socket;
  // --signal-reload PID: send SIGHUP to a running fabricmon and exit. The
  // unit's ExecReload uses it, so a reload needs no /bin/kill (procps).
  std::optional<int> signal_reload_pid;
  // Where the daemon writes each reload's verdict for --signal-reload
  // (daemon/reload_verdict.h); main() sets it from $RUNTIME_DIRECTORY, ""
  // writes none.
  std::string reload_verdict_path;
};

struct ParsedOptions {
  Options options;
  // Set when the program should exit right away (--help, --version, usage
  // error) with this code; `output` then holds what to print.
  std::optional<int> exit_code;
  std::string output;
};

ParsedOptions ParseOptions(const std::vector<std::string>& args);

// Applies flag overrides to `config`; returns false with *error (same
// "config error: ..." form as the file) for an invalid flag value.
bool ApplyOptions(const Options& options, Config& config, std::string* error);

}  // namespace fabric
