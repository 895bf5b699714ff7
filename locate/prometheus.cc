#include "locate/prometheus.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

namespace fabric::locate {

namespace {

using nlohmann::json;

// Prometheus writes sample values as strings: "1.5", "NaN", "+Inf", "-Inf".
std::optional<double> ParseValue(const std::string& s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf" || s == "Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<PromUrl> ParseUrl(std::string_view url, std::string* error) {
  PromUrl out;
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    rest = url.substr(8);
    out.tls = true;
  } else {
    *error = "want http:// or https:// in " + std::string(url);
    return std::nullopt;
  }
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    out.prefix = std::string(rest.substr(slash));
    while (!out.prefix.empty() && out.prefix.back() == '/') {
      out.prefix.pop_back();
    }
    if (out.prefix.find_first_of("?#") != std::string::npos) {
      *error = "no query or fragment in the URL, please: " + std::string(url);
      return std::nullopt;
    }
  }
  if (authority.find('@') != std::string_view::npos) {
    *error = "credentials go in --basic-auth-*, not in the URL";
    return std::nullopt;
  }
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      *error = "unclosed [ in " + std::string(url);
      return std::nullopt;
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') {
        *error = "bad host in " + std::string(url);
        return std::nullopt;
      }
      port_text = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos)
      port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) {
    *error = "no host in " + std::string(url);
    return std::nullopt;
  }
  out.port = out.tls ? 443 : 80;
  if (!port_text.empty()) {
    int port = 0;
    const auto [p, ec] = std::from_chars(
        port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() ||
        port <= 0 || port > 65535) {
      *error = "bad port in " + std::string(url);
      return std::nullopt;
    }
    out.port = port;
  }
  return out;
}

namespace {

// An /api/v1/query answer read as a stream of SAX events (no document
// tree: a tree of 10^6 series costs several times the body), building the
// samples as they come and giving up at the first thing out of place or
// the first sample over `max_series`.
class VectorSax {
 public:
  using string_t = json::string_t;
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using binary_t = json::binary_t;

  explicit VectorSax(std::size_t max_series) : max_series_(max_series) {}

  bool null() { return Scalar(); }
  bool boolean(bool) { return Scalar(); }
  bool number_integer(number_integer_t) { return Scalar(); }
  bool number_unsigned(number_unsigned_t) { return Scalar(); }
  bool number_float(number_float_t, const string_t&) { return Scalar(); }
  bool binary(binary_t&) { return Scalar(); }
  bool string(string_t& v) {
    switch (Top()) {
      case kRoot:
        if (key_ == "status") status_ = v;
        if (key_ == "error") server_error_ = v;
        return true;
      case kData:
        if (key_ == "resultType") type_ = v;
        return true;
      case kMetric:
        sample_.labels[key_] = std::move(v);
        return true;
      case kValue:
        if (index_++ != 1) return index_ <= 2 || Fail(kNoValue);
        if (auto d = ParseValue(v)) {
          sample_.value = *d;
          has_value_ = true;
          return true;
        }
        return Fail("a sample value is not a number");
      default:
        return Scalar();
    }
  }
  bool key(string_t& k) {
    key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) {
    if (stack_.empty()) return Push(kRoot);
    switch (Top()) {
      case kRoot:
        return Push(key_ == "data" ? kData : kSkip);
      case kData:
        return key_ == "result" ? Fail(kNotVector) : Push(kSkip);
      case kResult:
        if (out_.size() >= max_series_) {
          return Fail("more than " + std::to_string(max_series_) +
                      " series in one answer (fabricmon-locate's bound, "
                      "--max-series)");
        }
        sample_ = PromSample();
        has_value_ = false;
        return Push(kItem);
      case kItem:
        if (key_ == "value") return Fail(kNoValue);
        return Push(key_ == "metric" ? kMetric : kSkip);
      default:
        return Nested();
    }
  }
  bool end_object() { return Pop(); }
  // An object or array in a metric or a value, where only strings and
  // numbers belong; anywhere else a part nothing reads, skipped whole.
  bool Nested() {
    switch (Top()) {
      case kMetric:
        return Fail("label " + key_ + " is not a string");
      case kValue:
        return Fail(kNoValue);
      default:
        return Push(kSkip);
    }
  }
  bool start_array(std::size_t) {
    if (stack_.empty()) return Fail(kNotObject);
    switch (Top()) {
      case kData:
        if (key_ != "result") return Push(kSkip);
        has_result_ = true;
        return Push(kResult);
      case kResult:
        return Fail("a vector element is not an object");
      case kItem:
        if (key_ == "metric") return Fail("a metric is not an object");
        if (key_ != "value") return Push(kSkip);
        index_ = 0;
        return Push(kValue);
      default:
        return Nested();
    }
  }
  bool end_array() { return Pop(); }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception&) {
    if (error_.empty()) error_ = kNotObject;
    return false;
  }

  // The samples, or nullopt with *error.
  std::optional<std::vector<PromSample>> Take(bool parsed, std::string* error) {
    if (!parsed || !error_.empty()) {
      *error = error_.empty() ? kNotObject : error_;
      return std::nullopt;
    }
    if (status_ != "success") {
      *error = "status is not \"success\"" +
               (server_error_.empty() ? "" : ": " + server_error_);
      return std::nullopt;
    }
    if (!has_data_) {
      *error = "no data object";
      return std::nullopt;
    }
    if (type_ != "vector" || !has_result_) {
      *error = kNotVector;
      return std::nullopt;
    }
    return std::move(out_);
  }

 private:
  enum Frame { kRoot, kData, kResult, kItem, kMetric, kValue, kSkip };
  static constexpr char kNotObject[] = "the answer is not a JSON object";
  static constexpr char kNotVector[] = "the result is not a vector";
  static constexpr char kNoValue[] = "a sample has no [time, \"value\"]";

  Frame Top() const { return stack_.back(); }
  bool Push(Frame f) {
    if (f == kData) has_data_ = true;
    stack_.push_back(f);
    return true;
  }
  bool Pop() {
    const Frame f = Top();
    stack_.pop_back();
    if (f == kValue && index_ != 2) return Fail(kNoValue);
    if (f == kItem) {
      if (!has_value_) return Fail(kNoValue);
      out_.push_back(std::move(sample_));
    }
    return true;
  }
  // A number, boolean or null, or a string nothing above wanted.
  bool Scalar() {
    if (stack_.empty()) return Fail(kNotObject);
    switch (Top()) {
      case kResult:
        return Fail("a vector element is not an object");
      case kMetric:
        return Fail("label " + key_ + " is not a string");
      case kValue:
        // [time, "value"]: the time may be anything numeric.
        return index_++ == 0 || Fail(kNoValue);
      default:
        return true;  // a value of a key nothing reads
    }
  }
  bool Fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    return false;
  }

  const std::size_t max_series_;
  std::vector<Frame> stack_;
  std::string key_;
  std::string status_, server_error_, type_;
  bool has_data_ = false, has_result_ = false;
  PromSample sample_;
  bool has_value_ = false;
  int index_ = 0;  // position inside "value"
  std::vector<PromSample> out_;
  std::string error_;
};

}  // namespace

std::optional<std::vector<PromSample>> ParseVector(std::string_view body,
                                                   std::string* error,
                                                   std::size_t max_series) {
  VectorSax sax(max_series);
  const bool parsed = json::sax_parse(body.begin(), body.end(), &sax);
  return sax.Take(parsed, error);
}

std::string UrlEncode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::optional<std::vector<PromSample>> Prometheus::Query(
    const std::string& promql, double time, QueryError* kind,
    std::string* error) const {
  http::ClientRequest r;
  r.host = url_.host;
  r.port = url_.port;
  r.tls = url_.tls;
  std::string target = url_.prefix + "/api/v1/query?query=" + UrlEncode(promql);
  if (time > 0) {
    char t[64];
    std::snprintf(t, sizeof(t), "%.3f", time);
    target += std::string("&time=") + t;
  }
  r.target = target;
  r.user = auth_.user;
  r.password = auth_.password;
  // https always verifies the server unless told not to: against
  // --tls-ca-file, else the system's CAs.
  r.ca_file = auth_.insecure_skip_verify ? ""
              : auth_.ca_file.empty()    ? std::string(kSystemCaFile)
                                         : auth_.ca_file;
  r.cert_file = auth_.cert_file;
  r.key_file = auth_.key_file;
  r.server_name = auth_.server_name;
  r.timeout = timeout_;
  // A 2,000-switch fabric's counters are a few MB of JSON; the probe pairs
  // of 2,000 nodes with 32 peers each about 10 MB.
  r.body_limit = bounds_.max_bytes;
  std::string why;
  const auto answer = http::Request(r, &why);
  if (!answer) {
    if (why.find("body limit") != std::string::npos) {
      *kind = QueryError::kBadAnswer;
      *error = "the answer to " + promql + " is larger than " +
               std::to_string(bounds_.max_bytes >> 20) +
               " MiB, fabricmon-locate's bound (--max-answer-mb): a "
               "shorter --window, or a Prometheus with fewer series";
      return std::nullopt;
    }
    *kind = QueryError::kUnreachable;
    *error = why;
    return std::nullopt;
  }
  // Prometheus answers 400/422/503 with a JSON error body: show its text.
  if (answer->status != 200) {
    *kind = QueryError::kHttp;
    // Prometheus' JSON error text, else the first line of whatever it is.
    std::string detail;
    ParseVector(answer->body, &detail);
    if (!detail.starts_with("status is not")) {
      detail = answer->body.substr(0, answer->body.find('\n')).substr(0, 120);
      for (char& c : detail) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
      }
    }
    *error =
        "HTTP " + std::to_string(answer->status) +
        (answer->status == 401
             ? (auth_.user.empty() ? " (needs --basic-auth-user?)"
                                   : " (wrong --basic-auth-user or password?)")
             : "") +
        (detail.empty() ? "" : ": " + detail);
    return std::nullopt;
  }
  auto samples = ParseVector(answer->body, &why, bounds_.max_series);
  if (!samples) {
    *kind = QueryError::kBadAnswer;
    *error = "bad answer to " + promql + ": " + why;
    return std::nullopt;
  }
  *kind = QueryError::kNone;
  return samples;
}

}  // namespace fabric::locate
