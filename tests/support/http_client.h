// Test clients for the /metrics server: a Boost.Beast HTTP(S) client with
// IPv6 hosts, TLS (CA, client certificate), basic auth and any method; and
// a raw-bytes client for malformed and slow requests.
// Thread-safety: each call is self-contained (its own io_context/socket).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fabric::testing {

struct FetchOptions {
  std::string host = "127.0.0.1";  // an IPv4 or IPv6 literal (no brackets)
  int port = 0;
  // Local address to connect from (e.g. 127.0.0.2: another source on
  // loopback); "" lets the kernel choose.
  std::string source;
  std::string method = "GET";
  std::string target = "/metrics";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string user, password;  // basic auth when user is not empty
  bool tls = false;
  std::string ca_file;              // verify the server against this CA
  std::string cert_file, key_file;  // client certificate, optional
};

struct FetchResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

// nullopt when no complete HTTP answer arrives within 10 s (refused, reset,
// TLS failure, garbage).
std::optional<FetchResult> Fetch(const FetchOptions& options);

// Sends `bytes` to 127.0.0.1:`port`, optionally half-closes, and returns
// everything received until the server closes (at most `limit` waiting).
// nullopt when the connection cannot be made.
std::optional<std::string> RawExchange(
    int port, const std::string& bytes, bool half_close,
    std::chrono::seconds limit = std::chrono::seconds(20));

// gunzip for checking gzip bodies; nullopt if not valid gzip.
std::optional<std::string> Gunzip(const std::string& data);

// A bcrypt hash of `password` (libxcrypt; cost 4 is fast in tests, 10 is
// a real deployment's cost, ~50 ms a check).
std::string BcryptHash(const std::string& password, int cost = 4);

// A throwaway CA in `dir` (openssl CLI): ca.crt, a server certificate for
// 127.0.0.1, ::1 and localhost (server.crt/.key), a client certificate it
// signed (client.crt/.key) and a self-signed stranger (stranger.crt/.key).
// Returns false, with the failing command in *error, if openssl failed.
bool MakeTestCa(const std::string& dir, std::string* error);

}  // namespace fabric::testing
