// Config: the typed daemon configuration, loaded from YAML (yaml-cpp).
// ParseConfig catches the exceptions of yaml-cpp and of every settings
// parser it calls (config/yaml_keys.h); its callers see a validated Config
// or an error message of the form
//   config error: collectors.ib_port.interval (line 7): "fast" is not a
//   duration
// naming the key path and the 1-based line in the file.
//
// Unknown keys are errors (a typo must not silently run the defaults).
// config/ names no collector and includes nothing of collectors/: the
// generic keys of `collectors.<name>` are parsed here, each collector's own
// keys by its CollectorKeys::parse (config/collector_config.h).
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

#include "config/collector_config.h"

namespace fabric {

inline constexpr std::string_view kDefaultConfigPath =
    "/etc/fabricmon/fabricmon.yaml";

struct Config {
  std::string listen_address = ":10915";
  std::string sysfs_root = "/sys";
  // `ethtool_dir`: absolute directory of `ethtool -S` dumps, one file per
  // netdev (<dir>/<netdev>), that the roce and congestion collectors read
  // instead of the kernel's ethtool ioctl (the simulator writes them to
  // <host>/ethtool; `--simulate` sets it). Empty = the kernel.
  std::string ethtool_dir;
  std::string log_level = "info";
  // `mad_broker`: how the MAD collectors (sm, fabric) reach umad, which the
  // daemon itself never opens (sources/mad/broker_client.h): "spawn" (start
  // fabricmon-mad-broker from the daemon's own directory, one per
  // connection), an absolute socket path (systemd's
  // fabricmon-mad-broker.socket), or "in_process" (open umad in the daemon:
  // the network-facing process could then send any MAD; for comparison and
  // for hosts without the broker binary only).
  std::string mad_broker = "spawn";
  DeviceFilter devices;  // global `devices.{include,exclude}`
  // The effective settings of every collector the parser was given, by
  // name (defaults for those the file does not mention).
  std::map<std::string, CollectorConfig, std::less<>> collectors;
  // What is valid but likely not meant, one message each, naming the key and
  // line as errors do: an include/exclude pattern that matches nothing the
  // collector knows. `--check-config` prints them and still exits 0.
  std::vector<std::string> warnings;

  // The effective settings of collector `name`; disabled for a name the
  // parser was not given.
  CollectorConfig Collector(std::string_view name) const;
};

// Parses YAML text. `specs` are the collectors accepted under `collectors:`
// (the daemon passes AllCollectorKeys(), collectors/registry.h); each parses
// its own keys. On failure
// returns nullopt and sets *error to a "config error: ..." message.
std::optional<Config> ParseConfig(std::string_view yaml,
                                  const std::vector<CollectorKeys>& specs,
                                  std::string* error);

// The largest config file read: a config is a few KiB; anything near this
// is not one (and must not stall or grow the daemon).
inline constexpr std::size_t kMaxConfigBytes = 1 << 20;

// Reads (sources/fd_read.h: a regular file, at most kMaxConfigBytes, never
// blocking on a FIFO) and parses `path`. A missing file is an error unless
// `missing_is_default` is set, in which case the built-in defaults apply.
// An empty regular file is an error (/dev/null reads as the defaults).
std::optional<Config> LoadConfigFile(const std::string& path,
                                     bool missing_is_default,
                                     const std::vector<CollectorKeys>& specs,
                                     std::string* error);

// Every key path the parser accepts, dotted ("listen_address",
// "devices.include", "collectors.probe.key_file", ...): the top-level keys,
// the generic keys of each collector in `specs` and its own keys
// (CollectorKeys::keys); a collector's own keys nest no deeper here (the
// probe's `rails` entries are its parser's). config/fabricmon.yaml shows each.
std::vector<std::string> AcceptedKeyPaths(
    const std::vector<CollectorKeys>& specs);

// Checks a listen address of the form HOST:PORT, ":PORT" or "[v6]:PORT".
bool ValidListenAddress(std::string_view address);

// Checks a `mad_broker` value: "spawn", "in_process" or an absolute path.
bool ValidMadBroker(std::string_view value);

// Checks an `ethtool_dir` value: empty (the kernel) or an absolute path.
bool ValidEthtoolDir(std::string_view dir);

// Checks a log level name (trace, debug, info, warn, error, critical, off).
bool ValidLogLevel(std::string_view level);

// The warning for an include/exclude `pattern` at key `key` (line `line`,
// 1-based) when it matches none of `known` (CollectorKeys::series), else "".
std::string UnknownSeriesWarning(const std::string& key, int line,
                                 const std::string& pattern,
                                 const std::vector<std::string>& known);

// Checks that every entry is a valid ECMAScript regex; on failure names the
// first bad entry in *bad.
bool ValidDevicePatterns(const std::vector<std::string>& patterns,
                         std::string* bad);

}  // namespace fabric
