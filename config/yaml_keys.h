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
  std::string
      message;  // what the user reads: "config error: KEY (line N): ..."
  // Its parts, as given to Fail.
  std::string key;
  YAML::Mark mark;
  std::string what;
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
//
// A key written with no value (`interval:`) is a null node whose mark is
// yaml-cpp's next token, the line after; an error a reader reports at that
// mark is reported at the key's line instead.
template <typename F>
void ForEachKey(const YAML::Node& node, const std::string& path, F read) {
  if (!node || node.IsNull()) return;
  RequireMap(node, path);
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    const std::string key_path = Join(path, key);
    if (!kv.second.IsNull()) {
      read(key, kv.second, key_path, kv.first.Mark());
      continue;
    }
    try {
      read(key, kv.second, key_path, kv.first.Mark());
    } catch (const ConfigError& e) {
      if (e.key != key_path || e.mark.pos != kv.second.Mark().pos) throw;
      Fail(e.key, kv.first.Mark(), e.what);
    }
  }
}

}  // namespace fabric::config_keys
