// Config: the typed daemon configuration, loaded from YAML (yaml-cpp). This
// is the only place that catches yaml-cpp exceptions; everything else sees a
// validated Config or an error message of the form
//   config error: collectors.ib_port.interval (line 7): "fast" is not a
//   duration
// naming the key path and the 1-based line in the file.
//
// Unknown keys are errors (a typo must not silently run the defaults).
// See docs/configuration.md for the reference and config/fabricmon.yaml for
// the commented example.
//
// Thread-safety: Config is a plain value; the functions are pure apart from
// LoadConfigFile reading the file.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/collector.h"

namespace fabric {

inline constexpr std::string_view kDefaultConfigPath =
    "/etc/fabricmon/fabricmon.yaml";

// An optional device filter override: a key that was not written keeps the
// value from the level above.
struct DeviceFilterOverride {
  std::optional<std::vector<std::string>> include;
  std::optional<std::vector<std::string>> exclude;
};

struct CollectorConfig {
  bool enabled = true;
  std::chrono::microseconds interval = std::chrono::seconds(1);
  std::chrono::microseconds timeout = std::chrono::seconds(5);
  // `collectors.<name>.devices`: each of include/exclude, when written,
  // replaces the global list of the same name for this collector.
  DeviceFilterOverride devices;
  // `collectors.<name>.netdevs`: extra network interfaces to read besides
  // those backing RDMA ports (used by roce; others ignore it).
  std::vector<std::string> netdevs;
  // `collectors.congestion.window` and `.xmit_wait_tick_ns` (only accepted
  // under congestion).
  CongestionSettings congestion;
};

// Built-in settings of collector `name` before the file is applied: the
// CollectorConfig defaults, except where a collector needs its own (the
// congestion collector polls at its recommended 100 ms with a 1 s timeout).
CollectorConfig DefaultCollectorConfig(std::string_view name);

struct Config {
  std::string listen_address = ":10915";
  std::string sysfs_root = "/sys";
  // `ethtool_dir`: absolute directory of `ethtool -S` dumps, one file per
  // netdev (<dir>/<netdev>), that the roce and congestion collectors read
  // instead of the kernel's ethtool ioctl (the simulator writes them to
  // <host>/ethtool; `--simulate` sets it). Empty = the kernel.
  std::string ethtool_dir;
  std::string log_level = "info";
  DeviceFilter devices;  // global `devices.{include,exclude}`
  // Only collectors that appear in the file; the rest use defaults
  // (see Collector()).
  std::map<std::string, CollectorConfig, std::less<>> collectors;

  // The effective settings of collector `name` (defaults when absent).
  CollectorConfig Collector(std::string_view name) const;
  // The effective device filter of collector `name`.
  DeviceFilter DevicesFor(std::string_view name) const;
};

// Parses YAML text. `known_collectors` are the names accepted under
// `collectors:` (the daemon passes CollectorNames()). On failure returns
// nullopt and sets *error to a "config error: ..." message.
std::optional<Config> ParseConfig(
    std::string_view yaml, const std::vector<std::string>& known_collectors,
    std::string* error);

// Reads and parses `path`. A missing file is an error unless
// `missing_is_default` is set, in which case the built-in defaults apply.
std::optional<Config> LoadConfigFile(
    const std::string& path, bool missing_is_default,
    const std::vector<std::string>& known_collectors, std::string* error);

// Checks a listen address of the form HOST:PORT, ":PORT" or "[v6]:PORT".
bool ValidListenAddress(std::string_view address);

// Checks an `ethtool_dir` value: empty (the kernel) or an absolute path.
bool ValidEthtoolDir(std::string_view dir);

// Checks a log level name (trace, debug, info, warn, error, critical, off).
bool ValidLogLevel(std::string_view level);

// Checks that every entry is a valid ECMAScript regex; on failure names the
// first bad entry in *bad.
bool ValidDevicePatterns(const std::vector<std::string>& patterns,
                         std::string* bad);

}  // namespace fabric
