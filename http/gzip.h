// gzip for /metrics responses (zlib): whether a request's Accept-Encoding
// allows gzip, and the compression itself.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabric::http {

// True when the Accept-Encoding value lists "gzip" (or "*") without q=0,
// e.g. Prometheus' "gzip" or a browser's "gzip, deflate, br".
bool AcceptsGzip(std::string_view accept_encoding);

// `data` as a gzip member (RFC 1952); nullopt only if zlib fails.
std::optional<std::string> Gzip(std::string_view data);

}  // namespace fabric::http
