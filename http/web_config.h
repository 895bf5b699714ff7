// Web config: the Prometheus exporter-toolkit `--web.config.file` format
// (https://prometheus.io/docs/prometheus/latest/configuration/https/) that
// every exporter accepts, parsed into a plain struct:
//
//   tls_server_config:
//     cert_file: server.crt        # both or neither
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert
//     client_ca_file: ca.crt
//     min_version: TLS12           # TLS10..TLS13
//     max_version: TLS13
//     client_allowed_sans:         # a verified client cert must carry one
//       - prometheus.example.org   # (DNS, IP, email or URI SAN, exact)
//   basic_auth_users:
//     prometheus: $2y$10$...       # bcrypt hash
//
// Errors name the key path and the 1-based line, like config/:
//   web config error: tls_server_config.min_version (line 4): "TLS9" is ...
// Unknown keys are errors; the exporter-toolkit keys fabricmon does not
// implement (cipher_suites, http_server_config, ...) say so by name.
//
// Nothing turns security off by omission (docs/security.md): a document
// with no settings (zero bytes, only comments, a file cut short) is refused,
// and so is a `tls_server_config:` or `basic_auth_users:` key with nothing
// under it (what a file cut short after the key looks like). Plain HTTP or
// no auth on purpose is written as an empty flow mapping, which no cut can
// produce and exporter-toolkit reads the same way:
//   tls_server_config: {}     # no TLS, stated
//   basic_auth_users: {}      # no basic auth, stated
// A reload that would turn TLS, basic auth or client certificate
// verification off is applied only when the new file states it that way
// (Downgrade below; client certificates: client_auth_type written out).
//
// Thread-safety: pure functions on values (LoadWebConfigFile reads a file).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabric::http {

// client_auth_type values, named as in Go's crypto/tls.
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,
  kRequireAnyClientCert,
  kVerifyClientCertIfGiven,
  kRequireAndVerifyClientCert,
};

struct TlsConfig {
  std::string cert_file;
  std::string key_file;
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  std::string client_ca_file;  // required by the two Verify* modes
  // A verified client certificate must carry one of these as a subject
  // alternative name (exact match, any SAN type); empty = any.
  std::vector<std::string> client_allowed_sans;
  // TLS versions as OpenSSL numbers (TLS1_2_VERSION ...).
  int min_version = 0x0303;  // TLS12, the exporter-toolkit default
  int max_version = 0x0304;  // TLS13
  // 1-based line of each key present, by key path (for file errors found
  // when the files are loaded).
  std::map<std::string, int> lines;
};

// How much a web config protects /metrics, and which of the lower settings
// the file states on purpose (see the top of this file).
struct SecurityLevel {
  bool tls = false;
  bool basic_auth = false;
  bool verifies_clients = false;    // client_auth_type Verify*
  bool no_tls_stated = false;       // tls_server_config: {}
  bool no_auth_stated = false;      // basic_auth_users: {}
  bool client_auth_stated = false;  // client_auth_type written out
};

struct WebConfig {
  std::optional<TlsConfig> tls;  // absent = plain HTTP
  // user -> bcrypt hash; empty = no authentication.
  std::map<std::string, std::string> users;
  bool no_tls_stated = false;   // tls_server_config: {}
  bool no_auth_stated = false;  // basic_auth_users: {}
  bool client_auth_stated = false;
};

SecurityLevel LevelOf(const WebConfig& config);

// A reload from `running` to `next`: "" when `next` turns nothing off, or
// states each thing it turns off (each then named in *turned_off: "TLS",
// "basic auth", "client certificate verification"); otherwise why the
// reload is refused, naming what it would turn off and how to state it.
std::string Downgrade(const SecurityLevel& running, const SecurityLevel& next,
                      std::vector<std::string>* turned_off);

// Parses web config YAML. A document with no settings, or an empty
// tls_server_config / basic_auth_users key, is refused (see above); `{}` is
// plain HTTP without auth, stated. On failure returns nullopt with a
// "web config error: ..." message in *error.
std::optional<WebConfig> ParseWebConfig(std::string_view yaml,
                                        std::string* error);

// The largest web config read (sources/fd_read.h: a regular file, never a
// FIFO or device): a few hundred users' hashes are ~20 KiB.
inline constexpr std::size_t kMaxWebConfigBytes = 1 << 20;

// Reads and parses `path`; relative file names inside it are resolved
// against the file's directory, as exporter-toolkit does.
std::optional<WebConfig> LoadWebConfigFile(const std::string& path,
                                           std::string* error);

}  // namespace fabric::http
