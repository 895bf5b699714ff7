// Loopback HTTP for the tests: one GET through Boost.Beast (so no test
// hand-parses HTTP), a free port, and query-string encoding.
// Thread-safety: each call is self-contained (its own io_context).
#pragma once

#include <optional>
#include <string>

namespace fabric::testing {

struct HttpResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET http://127.0.0.1:`port``target`. nullopt when nothing answers: refused,
// reset, not a valid HTTP response, or no complete answer within 5 s.
std::optional<HttpResponse> HttpGet(int port, const std::string& target);

// The body of a 200 answer to that GET, else nullopt.
std::optional<std::string> HttpGetOk(int port, const std::string& target);

// A loopback TCP port that was free a moment ago (bound to port 0, read back,
// released); another process may still take it before the caller does.
int FreeLoopbackPort();

// Percent-encodes everything but RFC 3986 unreserved characters, for a
// query-string value.
std::string UrlEncode(const std::string& s);

}  // namespace fabric::testing
