#include "config/yaml_keys.h"

#include <charconv>

#include "config/credential.h"
#include "config/duration.h"

namespace fabric::config_keys {

void Fail(const std::string& key, const YAML::Mark& mark,
          const std::string& what) {
  std::string msg = "config error: " + key;
  if (!mark.is_null()) msg += " (line " + std::to_string(mark.line + 1) + ")";
  msg += ": " + what;
  throw ConfigError{msg, key, mark, what};
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
                                   const std::string& key,
                                   std::chrono::microseconds floor) {
  std::string text = Scalar(node, key);
  auto d = ParseDuration(text);
  if (!d) {
    Fail(key, node.Mark(),
         Quote(text) + " is not a duration (e.g. \"500ms\", \"1s\", \"2m\")");
  }
  if (*d < floor) {
    Fail(key, node.Mark(),
         Quote(text) + " is below the minimum of " + FormatDuration(floor));
  }
  return *d;
}

double Number(const YAML::Node& node, const std::string& key, double lo,
              double hi, const std::string& what) {
  std::string text = Scalar(node, key);
  double value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() ||
      !(value > lo && value <= hi)) {
    Fail(key, node.Mark(), Quote(text) + " is not " + what);
  }
  return value;
}

long long Integer(const YAML::Node& node, const std::string& key, long long lo,
                  long long hi, const std::string& what) {
  std::string text = Scalar(node, key);
  long long value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lo ||
      value > hi) {
    Fail(key, node.Mark(), Quote(text) + " is not " + what);
  }
  return value;
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

YAML::Mark KeyMark(const YAML::Node& node, const std::string& key) {
  if (!node || !node.IsMap()) return node ? node.Mark() : YAML::Mark();
  for (const auto& kv : node) {
    if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.first.Mark();
  }
  return node.Mark();
}

std::string SecretPath(const std::string& written, const std::string& key,
                       const YAML::Mark& mark) {
  std::string error;
  auto path = SecretPathFromEnvironment(written, &error);
  if (!path) Fail(key, mark, error);
  return *path;
}

}  // namespace fabric::config_keys
