#include "core/counter_filter.h"

#include <fnmatch.h>

namespace fabric {
namespace {

bool AnyMatches(const std::vector<std::string>& patterns,
                std::string_view family, std::string_view counter) {
  for (const auto& p : patterns) {
    if (GlobMatches(p, family)) return true;
    if (!counter.empty() && GlobMatches(p, counter)) return true;
  }
  return false;
}

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == ':' || c == '.' || c == '-';
}

}  // namespace

CounterFilter::CounterFilter(std::vector<std::string> include,
                             std::vector<std::string> exclude)
    : include_(std::move(include)), exclude_(std::move(exclude)) {}

bool CounterFilter::Allows(std::string_view family,
                           std::string_view counter) const {
  if (!include_.empty() && !AnyMatches(include_, family, counter)) {
    return false;
  }
  return !AnyMatches(exclude_, family, counter);
}

bool ValidCounterGlob(std::string_view pattern, std::string* why) {
  if (pattern.empty()) {
    *why = "is empty";
    return false;
  }
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (NameChar(c) || c == '*' || c == '?') continue;
    if (c == '[') {
      // "[!...]" / "[^...]" negate; a ']' right after the opening (or the
      // negation) is a member, as in fnmatch.
      std::size_t j = i + 1;
      if (j < pattern.size() && (pattern[j] == '!' || pattern[j] == '^')) ++j;
      if (j < pattern.size() && pattern[j] == ']') ++j;
      while (j < pattern.size() && pattern[j] != ']') {
        if (!NameChar(pattern[j])) {
          *why = "has '" + std::string(1, pattern[j]) +
                 "' in a bracket expression (names are [A-Za-z0-9_:.-])";
          return false;
        }
        ++j;
      }
      if (j == pattern.size()) {
        *why = "has an unclosed '['";
        return false;
      }
      i = j;
      continue;
    }
    *why = "has '" + std::string(1, c) +
           "', which no metric or counter name contains (globs: *, ?, "
           "[...]; names are [A-Za-z0-9_:.-])";
    return false;
  }
  return true;
}

bool GlobMatches(std::string_view pattern, std::string_view name) {
  // fnmatch wants C strings; names and patterns are short, so a stack copy
  // saves two allocations for nearly all of them.
  char p[128], n[128];
  if (pattern.size() >= sizeof p || name.size() >= sizeof n) {
    return fnmatch(std::string(pattern).c_str(), std::string(name).c_str(),
                   0) == 0;
  }
  pattern.copy(p, pattern.size());
  p[pattern.size()] = '\0';
  name.copy(n, name.size());
  n[name.size()] = '\0';
  return fnmatch(p, n, 0) == 0;
}

bool IsCounterLabel(std::string_view label_name) {
  return label_name == "counter" || label_name == "error";
}

bool CounterGate::Allows(std::string_view family, std::string_view counter) {
  if (last_ == nullptr || *last_name_ != family) {
    auto it = families_.find(family);
    if (it == families_.end()) {
      it = families_.emplace(std::string(family), Family{}).first;
      it->second.allowed = filter_.Allows(family, {});
    }
    last_name_ = &it->first;
    last_ = &it->second;
  }
  if (counter.empty()) return last_->allowed;
  auto it = last_->counters.find(counter);
  if (it == last_->counters.end()) {
    it = last_->counters
             .emplace(std::string(counter), filter_.Allows(family, counter))
             .first;
  }
  return it->second;
}

}  // namespace fabric
