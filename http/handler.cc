#include "http/handler.h"

#include <cctype>

#include "http/gzip.h"

namespace fabric::http {
namespace {

namespace bhttp = boost::beast::http;

constexpr std::string_view kLandingPage =
    "<!DOCTYPE html>\n<html><head><title>fabricmon</title></head><body>\n"
    "<h1>fabricmon</h1>\n"
    "<p>InfiniBand and RoCE fabric metrics for Prometheus.</p>\n"
    "<p><a href=\"/metrics\">Metrics</a></p>\n</body></html>\n";

Reply Refuse(unsigned status, std::string body, std::string reason) {
  Reply r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  r.rejected = std::move(reason);
  return r;
}

}  // namespace

Reply HandleRequest(const Request& request, BasicAuth& auth,
                    const RenderMetrics& render) {
  return HandleRequest(request, auth.Allows(request.authorization), render);
}

Reply HandleRequest(const Request& request, bool authorized,
                    const RenderMetrics& render) {
  Reply r = Route(request, authorized);
  if (!r.metrics) return r;
  r.metrics = false;
  r.body = render();
  if (AcceptsGzip(request.accept_encoding)) {
    if (auto compressed = Gzip(r.body)) {
      r.body = std::move(*compressed);
      r.gzip = true;
    }
  }
  return r;
}

std::string FramingError(
    const std::vector<std::string_view>& transfer_encodings,
    bool has_content_length) {
  if (transfer_encodings.empty()) return "";
  if (has_content_length) {
    return "both Transfer-Encoding and Content-Length";
  }
  if (transfer_encodings.size() > 1) return "more than one Transfer-Encoding";
  std::string_view coding = transfer_encodings.front();
  while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) {
    coding.remove_prefix(1);
  }
  while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) {
    coding.remove_suffix(1);
  }
  constexpr std::string_view kChunked = "chunked";
  bool chunked = coding.size() == kChunked.size();
  for (std::size_t i = 0; chunked && i < coding.size(); ++i) {
    chunked =
        std::tolower(static_cast<unsigned char>(coding[i])) == kChunked[i];
  }
  return chunked ? "" : "a Transfer-Encoding other than chunked";
}

Reply Route(const Request& request, bool authorized) {
  if (!authorized) {
    Reply r = Refuse(401, "Unauthorized\n", "unauthorized");
    r.headers.emplace_back("WWW-Authenticate",
                           "Basic realm=\"fabricmon\", charset=\"UTF-8\"");
    return r;
  }
  std::string_view path = request.target.substr(0, request.target.find('?'));
  if (path != "/" && path != "/metrics") {
    return Refuse(404, "Not Found\n", "not_found");
  }
  if (request.method != bhttp::verb::get &&
      request.method != bhttp::verb::head) {
    Reply r = Refuse(405, "Method Not Allowed\n", "method_not_allowed");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  Reply r;
  if (path == "/") {
    r.content_type = "text/html; charset=utf-8";
    r.body = kLandingPage;
    return r;
  }
  r.content_type = kMetricsContentType;
  r.metrics = true;
  return r;
}

}  // namespace fabric::http
