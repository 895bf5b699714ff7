#include "config/duration.h"

#include <cstdint>
#include <limits>

namespace fabric {
namespace {

struct Unit {
  std::string_view suffix;
  std::int64_t micros;
};

// Longest suffixes first so "ms" is not read as "m" followed by "s".
constexpr Unit kUnits[] = {
    {"ms", 1000},      {"us", 1},        {"h", 3600'000'000},
    {"m", 60'000'000}, {"s", 1'000'000},
};

}  // namespace

std::optional<std::chrono::microseconds> ParseDuration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::int64_t total = 0;
  while (!text.empty()) {
    std::int64_t number = 0;
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
      int d = text[digits] - '0';
      if (number > (std::numeric_limits<std::int64_t>::max() - d) / 10) {
        return std::nullopt;
      }
      number = number * 10 + d;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    text.remove_prefix(digits);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.substr(0, u.suffix.size()) == u.suffix) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) return std::nullopt;
    text.remove_prefix(unit->suffix.size());
    if (number > std::numeric_limits<std::int64_t>::max() / unit->micros) {
      return std::nullopt;
    }
    std::int64_t part = number * unit->micros;
    if (total > std::numeric_limits<std::int64_t>::max() - part) {
      return std::nullopt;
    }
    total += part;
  }
  if (total <= 0) return std::nullopt;
  return std::chrono::microseconds(total);
}

std::string FormatDuration(std::chrono::microseconds d) {
  std::int64_t us = d.count();
  if (us <= 0) return "0s";
  std::string out;
  if (us % 1000 != 0 || us < 1000) {
    // Sub-millisecond precision: spell the microseconds, or ms when whole.
    return std::to_string(us) + "us";
  }
  if (us % 1'000'000 != 0) return std::to_string(us / 1000) + "ms";
  std::int64_t s = us / 1'000'000;
  if (s >= 3600 && s % 3600 == 0) return std::to_string(s / 3600) + "h";
  if (s >= 60) {
    out = std::to_string(s / 60) + "m";
    if (s % 60 != 0) out += std::to_string(s % 60) + "s";
    return out;
  }
  return std::to_string(s) + "s";
}

}  // namespace fabric
