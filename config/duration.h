// Duration strings as used in the config file: a sequence of
// <number><unit> with units h, m, s, ms, us (e.g. "1s", "500ms", "1m30s"),
// the same spelling Prometheus and Go use. Pure functions.
//
// Thread-safety: pure functions, safe from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace fabric {

// Parses `text`; empty optional for anything that is not a positive
// duration of at least one microsecond that fits in 64 bits.
std::optional<std::chrono::microseconds> ParseDuration(std::string_view text);

// The shortest spelling ParseDuration accepts back, e.g. "1s", "1m30s",
// "250ms".
std::string FormatDuration(std::chrono::microseconds d);

}  // namespace fabric
