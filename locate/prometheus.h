// The Prometheus (or VictoriaMetrics) HTTP API as fabricmon-locate needs
// it: instant queries (/api/v1/query) whose answers are vectors. ParseUrl
// and ParseVector are pure (unit-tested with hostile answers); Prometheus
// sends one blocking request per Query through http/client.h.
//
// Thread-safety: pure functions; a Prometheus is used by one thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/client.h"

namespace fabric::locate {

struct PromUrl {
  bool tls = false;
  std::string host;
  int port = 0;
  std::string prefix;  // path before /api/v1, no trailing '/'
};

// http[s]://host[:port][/prefix]; "[v6]" hosts. nullopt with *error.
std::optional<PromUrl> ParseUrl(std::string_view url, std::string* error);

struct PromSample {
  std::map<std::string, std::string> labels;
  double value = 0;  // NaN, +Inf as Prometheus wrote them
};

// The bounds on one answer (docs/locate.md, "Memory"): the body is read
// whole up to kMaxAnswerBytes (the HTTP client refuses more), then parsed as
// a stream, not into a document tree, up to `max_series` samples. Peak
// memory per answer is about the body plus ~0.5 KB per series kept.
inline constexpr std::size_t kMaxAnswerBytes = 64 << 20;
inline constexpr std::size_t kMaxSeries = 250000;

// An /api/v1/query answer's samples. nullopt with *error when it is not
// JSON, not status "success", not a vector of {metric, value: [t, "v"]},
// or holds more than `max_series` samples (it stops reading there); never
// throws, whatever the body.
std::optional<std::vector<PromSample>> ParseVector(
    std::string_view body, std::string* error,
    std::size_t max_series = kMaxSeries);

// percent-encoding for a form body / query string.
std::string UrlEncode(std::string_view s);

// Debian's bundle of the system's trusted CAs (ca-certificates).
inline constexpr char kSystemCaFile[] = "/etc/ssl/certs/ca-certificates.crt";

struct PromAuth {
  std::string user, password;  // basic auth when user is set
  // Verify an https server against this CA; "" = kSystemCaFile.
  std::string ca_file;
  std::string cert_file, key_file;    // client certificate
  std::string server_name;            // the name to verify, if not host
  bool insecure_skip_verify = false;  // TLS without verification
};

// What one answer may cost (ParseVector above).
struct PromBounds {
  std::size_t max_bytes = kMaxAnswerBytes;
  std::size_t max_series = kMaxSeries;
};

enum class QueryError { kNone, kUnreachable, kHttp, kBadAnswer };

class Prometheus {
 public:
  using Bounds = PromBounds;
  Prometheus(PromUrl url, PromAuth auth, std::chrono::milliseconds timeout,
             PromBounds bounds = PromBounds())
      : url_(std::move(url)),
        auth_(std::move(auth)),
        timeout_(timeout),
        bounds_(bounds) {}

  // `promql` evaluated at `time` (Unix seconds; 0: the server's now).
  std::optional<std::vector<PromSample>> Query(const std::string& promql,
                                               double time, QueryError* kind,
                                               std::string* error) const;

 private:
  PromUrl url_;
  PromAuth auth_;
  std::chrono::milliseconds timeout_;
  Bounds bounds_;
};

}  // namespace fabric::locate
