#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "collectors/congestion.h"
#include "config/duration.h"

namespace fabric {
namespace {

// Thrown inside this file only, caught by ParseConfig.
struct ConfigError {
  std::string message;
};

[[noreturn]] void Fail(const std::string& key, const YAML::Mark& mark,
                       const std::string& what) {
  std::string msg = "config error: " + key;
  if (!mark.is_null()) msg += " (line " + std::to_string(mark.line + 1) + ")";
  msg += ": " + what;
  throw ConfigError{msg};
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string Scalar(const YAML::Node& node, const std::string& key) {
  if (!node.IsScalar()) Fail(key, node.Mark(), "expected a single value");
  return node.Scalar();
}

bool Bool(const YAML::Node& node, const std::string& key) {
  std::string text = Scalar(node, key);
  bool value;
  if (!YAML::convert<bool>::decode(node, value)) {
    Fail(key, node.Mark(), Quote(text) + " is not a boolean (true/false)");
  }
  return value;
}

std::chrono::microseconds Duration(const YAML::Node& node,
                                   const std::string& key) {
  std::string text = Scalar(node, key);
  auto d = ParseDuration(text);
  if (!d) {
    Fail(key, node.Mark(),
         Quote(text) + " is not a duration (e.g. \"500ms\", \"1s\", \"2m\")");
  }
  return *d;
}

std::vector<std::string> Patterns(const YAML::Node& node,
                                  const std::string& key) {
  if (node.IsNull()) return {};
  if (!node.IsSequence()) {
    Fail(key, node.Mark(), "expected a list of device names or regexes");
  }
  std::vector<std::string> out;
  for (const auto& item : node) {
    std::string pattern = Scalar(item, key);
    std::string bad;
    if (!ValidDevicePatterns({pattern}, &bad)) {
      Fail(key, item.Mark(), Quote(pattern) + " is not a valid regex: " + bad);
    }
    out.push_back(std::move(pattern));
  }
  return out;
}

std::vector<std::string> Names(const YAML::Node& node, const std::string& key) {
  if (node.IsNull()) return {};
  if (!node.IsSequence()) Fail(key, node.Mark(), "expected a list of names");
  std::vector<std::string> out;
  for (const auto& item : node) out.push_back(Scalar(item, key));
  return out;
}

void RequireMap(const YAML::Node& node, const std::string& key) {
  if (!node.IsMap()) Fail(key, node.Mark(), "expected a mapping of keys");
}

DeviceFilterOverride Devices(const YAML::Node& node, const std::string& key) {
  DeviceFilterOverride out;
  if (node.IsNull()) return out;
  RequireMap(node, key);
  for (const auto& kv : node) {
    std::string name = kv.first.as<std::string>();
    std::string path = Join(key, name);
    if (name == "include") {
      out.include = Patterns(kv.second, path);
    } else if (name == "exclude") {
      out.exclude = Patterns(kv.second, path);
    } else {
      Fail(path, kv.first.Mark(), "unknown key (expected include, exclude)");
    }
  }
  return out;
}

// A tick length in nanoseconds: a positive number up to 1 ms (fractions
// allowed; the IB tick is a multiple of the 4 ns SDR symbol time).
double TickNanoseconds(const YAML::Node& node, const std::string& key) {
  std::string text = Scalar(node, key);
  double value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() ||
      !(value > 0 && value <= 1e6)) {
    Fail(key, node.Mark(),
         Quote(text) +
             " is not a tick length in ns (a number in (0, 1e6], "
             "e.g. 256)");
  }
  return value;
}

CollectorConfig Collector(const YAML::Node& node, const std::string& key,
                          bool congestion, CollectorConfig out) {
  if (node.IsNull()) return out;
  RequireMap(node, key);
  std::optional<YAML::Mark> window_mark;
  for (const auto& kv : node) {
    std::string name = kv.first.as<std::string>();
    std::string path = Join(key, name);
    if (congestion && name == "window") {
      out.congestion.window_seconds =
          std::chrono::duration<double>(Duration(kv.second, path)).count();
      window_mark = kv.second.Mark();
    } else if (congestion && name == "xmit_wait_tick_ns") {
      out.congestion.xmit_wait_tick_seconds =
          TickNanoseconds(kv.second, path) * 1e-9;
    } else if (name == "window" || name == "xmit_wait_tick_ns") {
      Fail(path, kv.first.Mark(), "only collectors.congestion has this key");
    } else if (name == "enabled") {
      out.enabled = Bool(kv.second, path);
    } else if (name == "interval") {
      out.interval = Duration(kv.second, path);
    } else if (name == "timeout") {
      out.timeout = Duration(kv.second, path);
    } else if (name == "devices") {
      out.devices = Devices(kv.second, path);
    } else if (name == "netdevs") {
      out.netdevs = Names(kv.second, path);
    } else {
      Fail(path, kv.first.Mark(),
           "unknown key (expected enabled, interval, timeout, devices, "
           "netdevs" +
               std::string(congestion ? ", window, xmit_wait_tick_ns)" : ")"));
    }
  }
  // A peak needs at least two polls inside the window (a disabled
  // collector's settings are not used).
  const double interval = std::chrono::duration<double>(out.interval).count();
  if (congestion && out.enabled &&
      out.congestion.window_seconds < 2 * interval) {
    Fail(Join(key, "window"), window_mark.value_or(node.Mark()),
         "must be at least two poll intervals (" +
             FormatDuration(out.interval) + " x 2)");
  }
  return out;
}

std::string KnownList(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none in this build" : out;
}

Config Parse(const YAML::Node& root, const std::vector<std::string>& known) {
  Config config;
  if (root.IsNull()) return config;  // empty file: all defaults
  RequireMap(root, "(top level)");
  for (const auto& kv : root) {
    std::string name = kv.first.as<std::string>();
    const YAML::Node& value = kv.second;
    if (name == "listen_address") {
      std::string addr = Scalar(value, name);
      if (!ValidListenAddress(addr)) {
        Fail(name, value.Mark(),
             Quote(addr) + " is not HOST:PORT (e.g. \":10915\")");
      }
      config.listen_address = addr;
    } else if (name == "sysfs_root") {
      config.sysfs_root = Scalar(value, name);
      if (config.sysfs_root.empty()) Fail(name, value.Mark(), "is empty");
    } else if (name == "ethtool_dir") {
      std::string dir = value.IsNull() ? "" : Scalar(value, name);
      if (!ValidEthtoolDir(dir)) {
        Fail(name, value.Mark(),
             Quote(dir) +
                 " is not an absolute directory path (e.g. "
                 "\"/dev/shm/sim/host0/ethtool\"; empty = the kernel)");
      }
      config.ethtool_dir = dir;
    } else if (name == "log_level") {
      std::string level = Scalar(value, name);
      if (!ValidLogLevel(level)) {
        Fail(name, value.Mark(),
             Quote(level) +
                 " is not a log level (trace, debug, info, warn, error, "
                 "critical, off)");
      }
      config.log_level = level;
    } else if (name == "devices") {
      DeviceFilterOverride d = Devices(value, name);
      config.devices.include = d.include.value_or(std::vector<std::string>{});
      config.devices.exclude = d.exclude.value_or(std::vector<std::string>{});
    } else if (name == "collectors") {
      if (value.IsNull()) continue;
      RequireMap(value, name);
      for (const auto& c : value) {
        std::string cname = c.first.as<std::string>();
        std::string path = Join(name, cname);
        if (std::find(known.begin(), known.end(), cname) == known.end()) {
          Fail(path, c.first.Mark(),
               "unknown collector (known: " + KnownList(known) + ")");
        }
        config.collectors[cname] =
            Collector(c.second, path, cname == "congestion",
                      DefaultCollectorConfig(cname));
      }
    } else {
      Fail(name, kv.first.Mark(),
           "unknown key (expected listen_address, sysfs_root, ethtool_dir, "
           "log_level, devices, collectors)");
    }
  }
  return config;
}

}  // namespace

CollectorConfig DefaultCollectorConfig(std::string_view name) {
  CollectorConfig out;
  if (name == "congestion") {
    out.interval = kCongestionRecommendedInterval;
    out.timeout = std::chrono::seconds(1);
  }
  return out;
}

CollectorConfig Config::Collector(std::string_view name) const {
  auto it = collectors.find(name);
  return it == collectors.end() ? DefaultCollectorConfig(name) : it->second;
}

DeviceFilter Config::DevicesFor(std::string_view name) const {
  DeviceFilter filter = devices;
  auto it = collectors.find(name);
  if (it != collectors.end()) {
    if (it->second.devices.include)
      filter.include = *it->second.devices.include;
    if (it->second.devices.exclude)
      filter.exclude = *it->second.devices.exclude;
  }
  return filter;
}

std::optional<Config> ParseConfig(
    std::string_view yaml, const std::vector<std::string>& known_collectors,
    std::string* error) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    return Parse(root, known_collectors);
  } catch (const ConfigError& e) {
    *error = e.message;
  } catch (const YAML::Exception& e) {
    // Syntax errors and conversions of non-scalar keys.
    std::string msg = "config error: ";
    if (!e.mark.is_null()) {
      msg += "line " + std::to_string(e.mark.line + 1) + ": ";
    }
    *error = msg + e.msg;
  }
  return std::nullopt;
}

std::optional<Config> LoadConfigFile(
    const std::string& path, bool missing_is_default,
    const std::vector<std::string>& known_collectors, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    int err = errno;
    if (err == ENOENT && missing_is_default) return Config{};
    *error = "config error: cannot read " + path + ": " + std::strerror(err);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    *error = "config error: cannot read " + path;
    return std::nullopt;
  }
  auto config = ParseConfig(text.str(), known_collectors, error);
  if (!config) *error += " [" + path + "]";
  return config;
}

bool ValidListenAddress(std::string_view address) {
  auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string_view host = address.substr(0, colon);
  std::string_view port = address.substr(colon + 1);
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
  } else if (host.find(':') != std::string_view::npos) {
    return false;  // IPv6 literals need brackets
  }
  unsigned value = 0;
  auto [end, ec] =
      std::from_chars(port.data(), port.data() + port.size(), value);
  return ec == std::errc() && end == port.data() + port.size() &&
         !port.empty() && value <= 65535;
}

bool ValidEthtoolDir(std::string_view dir) {
  return dir.empty() ||
         (dir.front() == '/' && dir.find('\0') == std::string_view::npos);
}

bool ValidLogLevel(std::string_view level) {
  for (std::string_view l :
       {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    if (level == l) return true;
  }
  return false;
}

bool ValidDevicePatterns(const std::vector<std::string>& patterns,
                         std::string* bad) {
  for (const auto& p : patterns) {
    try {
      std::regex re(p);
    } catch (const std::regex_error& e) {
      if (bad) *bad = e.what();
      return false;
    }
  }
  return true;
}

}  // namespace fabric
