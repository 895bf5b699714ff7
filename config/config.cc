#include "config/config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <regex>

#include "config/yaml_keys.h"
#include "sources/fd_read.h"

namespace fabric {
namespace {

using namespace config_keys;

// The keys the parser accepts at the top level, under `devices` and under
// every `collectors.<name>` (besides the collector's own): the unknown-key
// errors list them and AcceptedKeyPaths() derives from them.
constexpr std::array<const char*, 7> kTopLevelKeys = {
    "listen_address", "sysfs_root", "ethtool_dir", "mad_broker",
    "log_level",      "devices",    "collectors"};
constexpr std::array<const char*, 2> kDeviceKeys = {"include", "exclude"};
constexpr std::array<const char*, 4> kGenericKeys = {"enabled", "interval",
                                                     "timeout", "devices"};

template <std::size_t N>
std::string Listed(const std::array<const char*, N>& keys) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
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

// A device filter override: a list that was not written keeps the value from
// the level above.
struct DeviceFilterOverride {
  std::optional<std::vector<std::string>> include;
  std::optional<std::vector<std::string>> exclude;
};

DeviceFilterOverride Devices(const YAML::Node& node, const std::string& key) {
  DeviceFilterOverride out;
  if (node.IsNull()) return out;
  RequireMap(node, key);
  ForEachKey(node, key,
             [&](const std::string& name, const YAML::Node& value,
                 const std::string& path, const YAML::Mark& mark) {
               if (name == "include") {
                 out.include = Patterns(value, path);
               } else if (name == "exclude") {
                 out.exclude = Patterns(value, path);
               } else {
                 Fail(path, mark,
                      "unknown key (expected " + Listed(kDeviceKeys) + ")");
               }
             });
  return out;
}

// An include/exclude list of globs (core/counter_filter.h); a bad glob is an
// error, one that matches nothing the collector knows a warning.
std::vector<std::string> SeriesPatterns(const YAML::Node& node,
                                        const std::string& key,
                                        const CollectorKeys& spec,
                                        std::vector<std::string>* warnings) {
  if (node.IsNull()) return {};
  if (!node.IsSequence()) {
    Fail(key, node.Mark(),
         "expected a list of metric or counter names (globs, e.g. "
         "[\"fabric_port_multicast_*\", \"rx_*_requests\"])");
  }
  std::vector<std::string> out;
  for (const auto& item : node) {
    std::string pattern = Scalar(item, key);
    std::string why;
    if (!ValidCounterGlob(pattern, &why)) {
      Fail(key, item.Mark(), Quote(pattern) + " is not a valid glob: " + why);
    }
    std::string warning =
        UnknownSeriesWarning(key, item.Mark().line + 1, pattern, spec.series);
    if (!warning.empty()) warnings->push_back(std::move(warning));
    out.push_back(std::move(pattern));
  }
  return out;
}

// One collector's generic keys from its mapping (null = not in the file),
// starting from the spec's defaults. Keys that are neither generic nor the
// collector's own are errors.
CollectorConfig Generic(const YAML::Node& node, const std::string& path,
                        const CollectorKeys& spec,
                        DeviceFilterOverride* devices,
                        std::vector<std::string>* warnings) {
  CollectorConfig out;
  out.enabled = spec.enabled;
  out.interval = spec.interval;
  out.timeout = spec.timeout;
  std::vector<std::string> include, exclude;
  const bool filters = !spec.series.empty();
  ForEachKey(node, path,
             [&](const std::string& key, const YAML::Node& value,
                 const std::string& key_path, const YAML::Mark& key_mark) {
               if (key == "enabled") {
                 out.enabled = Bool(value, key_path);
               } else if (key == "interval") {
                 out.interval = Duration(value, key_path, spec.min_interval);
               } else if (key == "timeout") {
                 out.timeout = Duration(value, key_path, kMinTimeout);
               } else if (key == "devices") {
                 *devices = Devices(value, key_path);
               } else if (filters && key == "include") {
                 include = SeriesPatterns(value, key_path, spec, warnings);
               } else if (filters && key == "exclude") {
                 exclude = SeriesPatterns(value, key_path, spec, warnings);
               } else if (std::find(spec.keys.begin(), spec.keys.end(), key) ==
                          spec.keys.end()) {
                 std::string expected = Listed(kGenericKeys);
                 if (filters) expected += ", include, exclude";
                 for (const auto& k : spec.keys) expected += ", " + k;
                 Fail(key_path, key_mark,
                      "unknown key (expected " + expected + ")");
               }
             });
  out.series = CounterFilter(std::move(include), std::move(exclude));
  return out;
}

std::string KnownList(const std::vector<CollectorKeys>& specs) {
  std::string out;
  for (const auto& s : specs) out += (out.empty() ? "" : ", ") + s.name;
  return out.empty() ? "none in this build" : out;
}

Config Parse(const YAML::Node& root, const std::vector<CollectorKeys>& specs) {
  Config config;
  // Collector mappings by name, read after the top level so the global
  // device lists are known whatever the order in the file.
  std::map<std::string, YAML::Node> written;
  if (!root.IsNull()) RequireMap(root, "(top level)");
  ForEachKey(
      root, "",
      [&](const std::string& name, const YAML::Node& value, const std::string&,
          const YAML::Mark& mark) {
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
        } else if (name == "mad_broker") {
          std::string broker = Scalar(value, name);
          if (!ValidMadBroker(broker)) {
            Fail(name, value.Mark(),
                 Quote(broker) +
                     " is not \"spawn\", \"in_process\" or an absolute socket "
                     "path (e.g. \"/run/fabricmon-mad/broker.sock\")");
          }
          config.mad_broker = broker;
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
          config.devices =
              DeviceFilter(d.include.value_or(std::vector<std::string>{}),
                           d.exclude.value_or(std::vector<std::string>{}));
        } else if (name == "collectors") {
          ForEachKey(
              value, name,
              [&](const std::string& cname, const YAML::Node& c,
                  const std::string& path, const YAML::Mark& cmark) {
                auto known = std::find_if(
                    specs.begin(), specs.end(),
                    [&](const auto& s) { return s.name == cname; });
                if (known == specs.end()) {
                  Fail(path, cmark,
                       "unknown collector (known: " + KnownList(specs) + ")");
                }
                written[cname] = c;
              });
        } else {
          Fail(name, mark,
               "unknown key (expected " + Listed(kTopLevelKeys) + ")");
        }
      });
  for (const auto& spec : specs) {
    const std::string path = "collectors." + spec.name;
    auto it = written.find(spec.name);
    const YAML::Node node = it == written.end() ? YAML::Node() : it->second;
    DeviceFilterOverride devices;
    CollectorConfig cc = Generic(node, path, spec, &devices, &config.warnings);
    cc.devices =
        DeviceFilter(devices.include.value_or(config.devices.include()),
                     devices.exclude.value_or(config.devices.exclude()));
    if (spec.parse) cc.settings = spec.parse(node, path, cc);
    config.collectors[spec.name] = std::move(cc);
  }
  return config;
}

}  // namespace

CollectorConfig Config::Collector(std::string_view name) const {
  auto it = collectors.find(name);
  if (it != collectors.end()) return it->second;
  CollectorConfig off;
  off.enabled = false;
  return off;
}

std::optional<Config> ParseConfig(std::string_view yaml,
                                  const std::vector<CollectorKeys>& specs,
                                  std::string* error) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    return Parse(root, specs);
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

std::optional<Config> LoadConfigFile(const std::string& path,
                                     bool missing_is_default,
                                     const std::vector<CollectorKeys>& specs,
                                     std::string* error) {
  FileRead file = ReadRegularFile(path, kMaxConfigBytes);
  if (!file.ok()) {
    if (file.error_number == ENOENT && missing_is_default) {
      return ParseConfig("", specs, error);
    }
    *error = "config error: cannot read " + path + ": " + file.error;
    return std::nullopt;
  }
  // A zero-byte regular file is most likely one cut short while being
  // written; loading it would switch every collector to its default (probes
  // and OpenSM off). /dev/null stays the way to ask for the defaults.
  if (file.text.empty() && S_ISREG(file.mode)) {
    *error = "config error: " + path +
             " is empty (write \"{}\" or use --config /dev/null for the "
             "built-in defaults)";
    return std::nullopt;
  }
  auto config = ParseConfig(file.text, specs, error);
  if (!config) *error += " [" + path + "]";
  return config;
}

std::vector<std::string> AcceptedKeyPaths(
    const std::vector<CollectorKeys>& specs) {
  std::vector<std::string> out;
  for (const char* key : kTopLevelKeys) {
    const std::string top = key;
    if (top == "devices") {
      for (const char* d : kDeviceKeys) out.push_back(top + "." + d);
    } else if (top == "collectors") {
      for (const auto& spec : specs) {
        const std::string path = top + "." + spec.name + ".";
        for (const char* g : kGenericKeys) {
          if (std::string(g) == "devices") {
            for (const char* d : kDeviceKeys) {
              out.push_back(path + "devices." + d);
            }
          } else {
            out.push_back(path + g);
          }
        }
        if (!spec.series.empty()) {
          out.push_back(path + "include");
          out.push_back(path + "exclude");
        }
        for (const auto& own : spec.keys) out.push_back(path + own);
      }
    } else {
      out.push_back(top);
    }
  }
  return out;
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

bool ValidMadBroker(std::string_view value) {
  return value == "spawn" || value == "in_process" ||
         (!value.empty() && value[0] == '/');
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

std::string UnknownSeriesWarning(const std::string& key, int line,
                                 const std::string& pattern,
                                 const std::vector<std::string>& known) {
  for (const auto& name : known) {
    if (GlobMatches(pattern, name)) return "";
  }
  std::string out = "config warning: " + key + " (line " +
                    std::to_string(line) + "): " + Quote(pattern) +
                    " matches no metric or counter name this collector knows "
                    "(a counter of a driver it has not seen is still "
                    "matched when it appears)";
  if (pattern.find(".*") != std::string::npos) {
    out += "; patterns are globs, not regexes: \"*\" not \".*\"";
  }
  return out;
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
