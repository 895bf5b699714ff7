#include "core/device_filter.h"

namespace fabric {

DeviceFilter::DeviceFilter(std::vector<std::string> include,
                           std::vector<std::string> exclude)
    : include_(std::move(include)),
      exclude_(std::move(exclude)),
      include_re_(Compile(include_)),
      exclude_re_(Compile(exclude_)) {}

std::vector<DeviceFilter::Pattern> DeviceFilter::Compile(
    const std::vector<std::string>& patterns) {
  std::vector<Pattern> out;
  for (const auto& p : patterns) {
    Pattern compiled{p, std::nullopt};
    try {
      compiled.re.emplace(p);
    } catch (const std::regex_error&) {
      // Config validation rejects bad regexes; the literal name still
      // matches.
    }
    out.push_back(std::move(compiled));
  }
  return out;
}

bool DeviceFilter::Matches(const std::vector<Pattern>& patterns,
                           std::string_view device) {
  for (const auto& p : patterns) {
    if (p.text == device) return true;
    if (p.re && std::regex_match(device.begin(), device.end(), *p.re)) {
      return true;
    }
  }
  return false;
}

bool DeviceFilter::Allows(std::string_view device) const {
  if (!include_re_.empty() && !Matches(include_re_, device)) return false;
  return !Matches(exclude_re_, device);
}

}  // namespace fabric
