// A blocking HTTP(S) client (Boost.Beast, OpenSSL): one request, one
// answer. For fabricmon-locate's Prometheus queries and for the tests'
// client (tests/support/http_client.h), which share it: names or IPv4/IPv6
// literals, TLS with a CA to verify against (the host name checked), a
// client certificate, basic auth, any method.
//
// Thread-safety: each call is self-contained (its own io_context, socket
// and TLS context).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fabric::http {

struct ClientRequest {
  std::string host = "127.0.0.1";  // a name or an IP literal (no brackets)
  int port = 0;
  // Local address to connect from (e.g. 127.0.0.2); "" lets the kernel
  // choose.
  std::string source;
  std::string method = "GET";
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string user, password;  // basic auth when user is not empty
  bool tls = false;
  // Verify the server against this CA (and its name against `host`, or
  // `server_name` when set); "" does not verify (tests' self-signed
  // servers; fabricmon-locate asks for --insecure-skip-verify to do so).
  std::string ca_file;
  std::string server_name;
  bool verify_name = true;  // with ca_file: check the name, not only the chain
  std::string cert_file, key_file;           // client certificate, optional
  std::chrono::milliseconds timeout{10000};  // the whole exchange
  std::size_t body_limit = 64 << 20;
};

struct ClientResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// nullopt, with why in *error (when given), when no complete HTTP answer
// arrived within the timeout: name not resolved, refused, reset, TLS
// failure, garbage, a body over the limit.
std::optional<ClientResponse> Request(const ClientRequest& request,
                                      std::string* error = nullptr);

std::string Base64(const std::string& in);

}  // namespace fabric::http
