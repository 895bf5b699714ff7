// The HTTP semantics of the metrics endpoint, apart from sockets: given one
// parsed request, what to answer. Only GET and HEAD on "/" (a landing page)
// and "/metrics"; other paths 404, other methods 405; with basic_auth_users
// configured, every path needs valid credentials (401 otherwise).
//
// The server routes on its event loop (Route) and renders and gzips the
// exposition on a worker thread; HandleRequest does it all in one call.
//
// Thread-safety: pure functions, except that HandleRequest calls `render`
// and its BasicAuth overload uses `auth` (not thread-safe, see
// basic_auth.h).
#pragma once

// Before Beast: boost/beast/http/verb.hpp uses std::ostream without it.
#include <boost/beast/http/verb.hpp>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/basic_auth.h"

namespace fabric::http {

inline constexpr std::string_view kMetricsContentType =
    "text/plain; version=0.0.4; charset=utf-8";

struct Request {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  std::string_view target;
  std::string_view authorization;    // header value, "" if absent
  std::string_view accept_encoding;  // header value, "" if absent
};

struct Reply {
  unsigned status = 200;
  std::string content_type;
  std::string body;  // already gzip-compressed when `gzip`
  bool gzip = false;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones
  // Set when the request is refused: the `reason` label of
  // fabric_http_requests_rejected_total.
  std::string rejected;
  // Route only: the body is to be the exposition, gzipped when the
  // request's Accept-Encoding allows it (AcceptsGzip).
  bool metrics = false;
};

// Why a request's framing is refused (RFC 9112 section 6), "" when it is
// not. This server takes no request body, and of the transfer codings it
// understands only `chunked` (Boost.Beast decodes it; a chunk with data is
// then refused as a body). Any other Transfer-Encoding value (`xchunked`,
// `gzip, chunked`, an empty one, several headers) leaves the body's end,
// and so where the next request starts, unknown: RFC 9112 section 6.3 says
// answer 400 and close, so that the body is never read as a request. A
// request with both Transfer-Encoding and Content-Length is refused the same
// way (the smuggling case section 6.3 allows a server to reject).
// `transfer_encodings`: each Transfer-Encoding header value in order;
// `has_content_length`: a Content-Length header is present.
std::string FramingError(
    const std::vector<std::string_view>& transfer_encodings,
    bool has_content_length);

// The exposition text served at /metrics.
using RenderMetrics = std::function<std::string()>;

// The answer to `request` except the exposition itself: for an authorized
// GET or HEAD of /metrics, a 200 with `metrics` set and no body yet.
// `authorized`: the request's credentials passed basic auth (or none are
// configured).
Reply Route(const Request& request, bool authorized);

// Route, then the body from `render()` (gzipped if accepted) when the
// reply needs the exposition.
Reply HandleRequest(const Request& request, bool authorized,
                    const RenderMetrics& render);
// The same with the check done here (BasicAuth::Allows, bcrypt inline).
Reply HandleRequest(const Request& request, BasicAuth& auth,
                    const RenderMetrics& render);

}  // namespace fabric::http
