#include "collectors/collector.h"

#include <regex>

namespace fabric {
namespace {

bool Matches(const std::vector<std::string>& patterns,
             std::string_view device) {
  const std::string name(device);
  for (const auto& pattern : patterns) {
    if (pattern == name) return true;
    try {
      if (std::regex_match(name, std::regex(pattern))) return true;
    } catch (const std::regex_error&) {
      // Config validation rejects bad regexes; a literal name still matched
      // above, so nothing else to do here.
    }
  }
  return false;
}

}  // namespace

bool DeviceFilter::Allows(std::string_view device) const {
  if (!include.empty() && !Matches(include, device)) return false;
  return !Matches(exclude, device);
}

}  // namespace fabric
