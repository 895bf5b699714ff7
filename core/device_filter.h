// DeviceFilter: which RDMA devices a collector looks at, from the config's
// `devices.include`/`.exclude` lists. A plain value shared by config/ (which
// builds it), sources/ib_walk.h (which applies it) and the collectors.
//
// Thread-safety: immutable after construction; const members are safe from
// any thread.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace fabric {

// Empty include = all devices. Entries are exact device names or ECMAScript
// regexes anchored at both ends, compiled once when the filter is made
// (config validation has rejected bad ones; a bad one here matches its
// literal name only).
class DeviceFilter {
 public:
  DeviceFilter() = default;
  DeviceFilter(std::vector<std::string> include,
               std::vector<std::string> exclude);
  bool Allows(std::string_view device) const;
  const std::vector<std::string>& include() const { return include_; }
  const std::vector<std::string>& exclude() const { return exclude_; }
  bool operator==(const DeviceFilter& o) const {
    return include_ == o.include_ && exclude_ == o.exclude_;
  }

 private:
  struct Pattern {
    std::string text;
    std::optional<std::regex> re;
  };
  static std::vector<Pattern> Compile(const std::vector<std::string>& p);
  static bool Matches(const std::vector<Pattern>& patterns,
                      std::string_view device);
  std::vector<std::string> include_, exclude_;
  std::vector<Pattern> include_re_, exclude_re_;
};

}  // namespace fabric
