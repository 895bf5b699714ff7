#include "sources/sysfs_parse.h"

#include <charconv>
#include <cstdio>

namespace fabric {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsHexDigit(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The kernel's show_pma_counter() prints this when the PMA MAD fails; iWARP
// (i40iw) devices return it for every counter.
bool IsNotAvailable(std::string_view text) {
  return text.starts_with("N/A") || text == "Unknown" || text == "unknown";
}

template <typename T>
Parsed<T> Fail(ParseStatus status) {
  return Parsed<T>{status, T{}};
}

// Parses all of `digits` (already trimmed, non-empty) in `base`.
Parsed<std::uint64_t> ParseDigits(std::string_view digits, int base) {
  if (base == 10) {
    // Every counter read goes through here (hundreds a second with the
    // congestion collector's 100 ms polls): one pass that checks and
    // accumulates, about a third of the instructions of a check loop plus
    // std::from_chars. A bad character anywhere wins over an overflow, as
    // with the check-first loop below.
    std::uint64_t value = 0;
    if (digits.size() <= 19) {
      // Below 10^19 < 2^64: no overflow to check (counters read in a
      // steady state are this short; 20 digits take the loop below).
      for (char c : digits) {
        const unsigned digit = static_cast<unsigned char>(c) - '0';
        if (digit > 9) return Fail<std::uint64_t>(ParseStatus::kInvalid);
        value = value * 10 + digit;
      }
      return {ParseStatus::kOk, value};
    }
    bool overflow = false;
    for (char c : digits) {
      if (!IsDigit(c)) return Fail<std::uint64_t>(ParseStatus::kInvalid);
      overflow =
          overflow || __builtin_mul_overflow(value, 10u, &value) ||
          __builtin_add_overflow(value, static_cast<unsigned>(c - '0'), &value);
    }
    if (overflow) return Fail<std::uint64_t>(ParseStatus::kOverflow);
    return {ParseStatus::kOk, value};
  }
  for (char c : digits) {
    if (base == 10 ? !IsDigit(c) : !IsHexDigit(c)) {
      return Fail<std::uint64_t>(ParseStatus::kInvalid);
    }
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(),
                                   value, base);
  if (ec == std::errc::result_out_of_range) {
    return Fail<std::uint64_t>(ParseStatus::kOverflow);
  }
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    return Fail<std::uint64_t>(ParseStatus::kInvalid);
  }
  return {ParseStatus::kOk, value};
}

// Common prelude: trim, then classify empty / N/A.
bool Prelude(std::string_view& text, ParseStatus* status) {
  text = TrimValue(text);
  if (text.empty()) {
    *status = ParseStatus::kEmpty;
    return false;
  }
  // Every "not available" spelling starts with a letter.
  if (IsDigit(text.front())) return true;
  if (IsNotAvailable(text)) {
    *status = ParseStatus::kNotAvailable;
    return false;
  }
  return true;
}

}  // namespace

std::string_view ParseStatusName(ParseStatus status) {
  switch (status) {
    case ParseStatus::kOk:
      return "ok";
    case ParseStatus::kEmpty:
      return "empty";
    case ParseStatus::kNotAvailable:
      return "not available";
    case ParseStatus::kNegative:
      return "negative";
    case ParseStatus::kOverflow:
      return "overflow";
    case ParseStatus::kInvalid:
      return "invalid";
  }
  return "invalid";
}

std::string_view TrimValue(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

Parsed<std::uint64_t> ParseU64(std::string_view text) {
  ParseStatus status;
  if (!Prelude(text, &status)) return Fail<std::uint64_t>(status);
  if (text.front() == '-') {
    // "-0" is still not a counter value; report the sign, not the digits.
    return Fail<std::uint64_t>(ParseStatus::kNegative);
  }
  return ParseDigits(text, 10);
}

Parsed<std::uint64_t> ParseHex(std::string_view text) {
  ParseStatus status;
  if (!Prelude(text, &status)) return Fail<std::uint64_t>(status);
  if (text.front() == '-') return Fail<std::uint64_t>(ParseStatus::kNegative);
  if (text.size() < 3 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    return Fail<std::uint64_t>(ParseStatus::kInvalid);
  }
  return ParseDigits(text.substr(2), 16);
}

Parsed<std::uint64_t> ParseGuid(std::string_view text) {
  ParseStatus status;
  if (!Prelude(text, &status)) return Fail<std::uint64_t>(status);
  std::uint64_t guid = 0;
  int groups = 0;
  while (true) {
    std::size_t colon = text.find(':');
    std::string_view group = text.substr(0, colon);
    if (group.empty() || group.size() > 4) {
      return Fail<std::uint64_t>(ParseStatus::kInvalid);
    }
    auto part = ParseDigits(group, 16);
    if (!part.ok()) return Fail<std::uint64_t>(ParseStatus::kInvalid);
    guid = (guid << 16) | part.value;
    ++groups;
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (groups != 4) return Fail<std::uint64_t>(ParseStatus::kInvalid);
  return {ParseStatus::kOk, guid};
}

std::string FormatGuid(std::uint64_t guid) {
  char buf[19];
  std::snprintf(buf, sizeof(buf), "0x%016llx",
                static_cast<unsigned long long>(guid));
  return buf;
}

Parsed<std::uint64_t> ParseGidInterfaceId(std::string_view text) {
  ParseStatus status;
  if (!Prelude(text, &status)) return Fail<std::uint64_t>(status);
  // A GID is eight ':'-separated groups; the interface id is the last four.
  std::size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    pos = text.find(':', pos);
    if (pos == std::string_view::npos) {
      return Fail<std::uint64_t>(ParseStatus::kInvalid);
    }
    ++pos;
  }
  return ParseGuid(text.substr(pos));
}

Parsed<PortState> ParseState(std::string_view text) {
  ParseStatus status;
  if (!Prelude(text, &status)) return Fail<PortState>(status);
  std::size_t colon = text.find(':');
  std::string_view number = TrimValue(text.substr(0, colon));
  if (number.empty()) return Fail<PortState>(ParseStatus::kInvalid);
  if (number.front() == '-') return Fail<PortState>(ParseStatus::kNegative);
  auto id = ParseDigits(number, 10);
  if (!id.ok()) return Fail<PortState>(id.status);
  if (id.value > UINT32_MAX) return Fail<PortState>(ParseStatus::kOverflow);
  PortState state;
  state.id = static_cast<std::uint32_t>(id.value);
  if (colon != std::string_view::npos) {
    state.name = std::string(TrimValue(text.substr(colon + 1)));
  }
  return {ParseStatus::kOk, std::move(state)};
}

Parsed<PortRate> ParseRate(std::string_view text) {
  ParseStatus status;
  if (!Prelude(text, &status)) return Fail<PortRate>(status);
  // "<number> Gb/sec[ (<lanes>X[ <speed>])]"
  std::size_t space = text.find(' ');
  if (space == std::string_view::npos)
    return Fail<PortRate>(ParseStatus::kInvalid);
  std::string_view number = text.substr(0, space);
  std::string_view rest = TrimValue(text.substr(space + 1));
  if (number.front() == '-') return Fail<PortRate>(ParseStatus::kNegative);
  for (char c : number) {
    if (!IsDigit(c) && c != '.') return Fail<PortRate>(ParseStatus::kInvalid);
  }
  double gbps = 0;
  auto [end, ec] =
      std::from_chars(number.data(), number.data() + number.size(), gbps);
  if (ec != std::errc() || end != number.data() + number.size()) {
    return Fail<PortRate>(ParseStatus::kInvalid);
  }
  if (!rest.starts_with("Gb/sec")) return Fail<PortRate>(ParseStatus::kInvalid);
  rest = TrimValue(rest.substr(6));

  PortRate rate;
  rate.bytes_per_second = gbps * 1e9 / 8;
  if (!rest.empty()) {
    if (rest.front() != '(' || rest.back() != ')') {
      return Fail<PortRate>(ParseStatus::kInvalid);
    }
    rest = TrimValue(rest.substr(1, rest.size() - 2));
    std::size_t x = rest.find_first_of("xX");
    if (x == std::string_view::npos || x == 0) {
      return Fail<PortRate>(ParseStatus::kInvalid);
    }
    auto lanes = ParseDigits(rest.substr(0, x), 10);
    if (!lanes.ok() || lanes.value > 64) {
      return Fail<PortRate>(ParseStatus::kInvalid);
    }
    rate.lanes = static_cast<std::uint32_t>(lanes.value);
    rate.speed = std::string(TrimValue(rest.substr(x + 1)));
  }
  return {ParseStatus::kOk, std::move(rate)};
}

}  // namespace fabric
