// Typed readers for config keys, shared by config/config.cc and every
// collector's settings parser, so that an error anywhere names the key path
// and the 1-based line the same way:
//   config error: collectors.congestion.window (line 12): ...
// The readers throw ConfigError, which the caller of the whole file catches
// (ParseConfig; ParseWebConfig for the web config): a settings parser never
// sees exceptions of its own and never returns half a result.
//
// Thread-safety: pure functions.
#pragma once

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <string>
#include <vector>

namespace fabric::config_keys {

struct ConfigError {
  std::string message;
};

[[noreturn]] void Fail(const std::string& key, const YAML::Mark& mark,
                       const std::string& what);

std::string Quote(const std::string& s);
// "collectors.roce" + "netdevs" -> "collectors.roce.netdevs".
std::string Join(const std::string& prefix, const std::string& key);

std::string Scalar(const YAML::Node& node, const std::string& key);
bool Bool(const YAML::Node& node, const std::string& key);
// "500ms", "1s", "1m30s" (config/duration.h), at least `floor`: intervals
// and timeouts have one, since a microsecond interval only burns CPU and a
// microsecond MAD timeout floods the fabric with retries.
std::chrono::microseconds Duration(
    const YAML::Node& node, const std::string& key,
    std::chrono::microseconds floor = std::chrono::microseconds(1));
// A number in (lo, hi]; `example` completes "is not <what> (e.g. ...)".
double Number(const YAML::Node& node, const std::string& key, double lo,
              double hi, const std::string& what);
// A whole number in [lo, hi] (no sign for lo >= 0, no fraction, no
// exponent); `what` completes "is not <what>" as for Number.
long long Integer(const YAML::Node& node, const std::string& key, long long lo,
                  long long hi, const std::string& what);
// A list of plain strings (null = empty).
std::vector<std::string> Names(const YAML::Node& node, const std::string& key);
void RequireMap(const YAML::Node& node, const std::string& key);

// The mark of key `key` in the mapping `node`: what a check made after the
// walk (a key required by another, a cross-check of two keys) must name, not
// the mapping's own mark, which is the line of its first key. The mapping's
// mark when `key` is not written there (a required key: the nearest line).
YAML::Mark KeyMark(const YAML::Node& node, const std::string& key);

// A key or certificate file option as written (a path, or
// `credential:NAME`, config/credential.h), resolved against this process's
// $CREDENTIALS_DIRECTORY; fails naming `key` at `mark` (the option's key).
std::string SecretPath(const std::string& written, const std::string& key,
                       const YAML::Mark& mark);

// Calls `read(key, value_node, key_path, key_mark)` for every key of the
// mapping `node` (nothing when null). Settings parsers walk their keys with
// it and ignore the generic ones (config.cc has checked every key).
template <typename F>
void ForEachKey(const YAML::Node& node, const std::string& path, F read) {
  if (!node || node.IsNull()) return;
  RequireMap(node, path);
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    read(key, kv.second, Join(path, key), kv.first.Mark());
  }
}

}  // namespace fabric::config_keys
