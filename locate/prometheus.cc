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

std::optional<std::vector<PromSample>> ParseVector(std::string_view body,
                                                   std::string* error) {
  // No exceptions: a parse failure is a discarded value, and every access
  // below checks the type first.
  const json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    *error = "the answer is not a JSON object";
    return std::nullopt;
  }
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_string() ||
      status->get<std::string>() != "success") {
    std::string why = "status is not \"success\"";
    const auto e = doc.find("error");
    if (e != doc.end() && e->is_string()) why += ": " + e->get<std::string>();
    *error = why;
    return std::nullopt;
  }
  const auto data = doc.find("data");
  if (data == doc.end() || !data->is_object()) {
    *error = "no data object";
    return std::nullopt;
  }
  const auto type = data->find("resultType");
  const auto result = data->find("result");
  if (type == data->end() || !type->is_string() ||
      type->get<std::string>() != "vector" || result == data->end() ||
      !result->is_array()) {
    *error = "the result is not a vector";
    return std::nullopt;
  }
  std::vector<PromSample> out;
  for (const json& item : *result) {
    if (!item.is_object()) {
      *error = "a vector element is not an object";
      return std::nullopt;
    }
    PromSample s;
    const auto metric = item.find("metric");
    if (metric != item.end()) {
      if (!metric->is_object()) {
        *error = "a metric is not an object";
        return std::nullopt;
      }
      for (const auto& [k, v] : metric->items()) {
        if (!v.is_string()) {
          *error = "label " + k + " is not a string";
          return std::nullopt;
        }
        s.labels[k] = v.get<std::string>();
      }
    }
    const auto value = item.find("value");
    if (value == item.end() || !value->is_array() || value->size() != 2 ||
        !(*value)[1].is_string()) {
      *error = "a sample has no [time, \"value\"]";
      return std::nullopt;
    }
    const auto v = ParseValue((*value)[1].get<std::string>());
    if (!v) {
      *error = "a sample value is not a number";
      return std::nullopt;
    }
    s.value = *v;
    out.push_back(std::move(s));
  }
  return out;
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
  // A 2,000-switch fabric's counters are a few MB of JSON.
  r.body_limit = 256 << 20;
  std::string why;
  const auto answer = http::Request(r, &why);
  if (!answer) {
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
  auto samples = ParseVector(answer->body, &why);
  if (!samples) {
    *kind = QueryError::kBadAnswer;
    *error = "bad answer to " + promql + ": " + why;
    return std::nullopt;
  }
  *kind = QueryError::kNone;
  return samples;
}

}  // namespace fabric::locate
