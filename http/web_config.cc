#include "http/web_config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>

#include "config/yaml_keys.h"
#include "sources/fd_read.h"

namespace fabric::http {
namespace {

using config_keys::Fail;
using config_keys::ForEachKey;
using config_keys::KeyMark;
using config_keys::Quote;
using config_keys::Scalar;
using config_keys::SecretPath;

int Line(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }

ClientAuth ParseClientAuth(const YAML::Node& node, const std::string& key) {
  static const std::map<std::string, ClientAuth> kNames = {
      {"NoClientCert", ClientAuth::kNoClientCert},
      {"RequestClientCert", ClientAuth::kRequestClientCert},
      {"RequireAnyClientCert", ClientAuth::kRequireAnyClientCert},
      {"VerifyClientCertIfGiven", ClientAuth::kVerifyClientCertIfGiven},
      {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerifyClientCert},
  };
  std::string text = Scalar(node, key);
  auto it = kNames.find(text);
  if (it == kNames.end()) {
    Fail(key, node.Mark(),
         Quote(text) +
             " is not a client_auth_type (NoClientCert, RequestClientCert, "
             "RequireAnyClientCert, VerifyClientCertIfGiven, "
             "RequireAndVerifyClientCert)");
  }
  return it->second;
}

int ParseVersion(const YAML::Node& node, const std::string& key) {
  static const std::map<std::string, int> kNames = {{"TLS10", 0x0301},
                                                    {"TLS11", 0x0302},
                                                    {"TLS12", 0x0303},
                                                    {"TLS13", 0x0304}};
  std::string text = Scalar(node, key);
  auto it = kNames.find(text);
  if (it == kNames.end()) {
    Fail(key, node.Mark(),
         Quote(text) + " is not a TLS version (TLS10, TLS11, TLS12, TLS13)");
  }
  return it->second;
}

std::string NonEmpty(const YAML::Node& node, const std::string& key) {
  std::string text = Scalar(node, key);
  if (text.empty()) Fail(key, node.Mark(), "is empty");
  return text;
}

TlsConfig ParseTls(const YAML::Node& node, const std::string& path) {
  TlsConfig tls;
  bool auth_given = false;
  ForEachKey(
      node, path,
      [&](const std::string& name, const YAML::Node& value,
          const std::string& key, const YAML::Mark& mark) {
        tls.lines[key] = Line(mark);
        if (name == "cert_file") {
          tls.cert_file = SecretPath(NonEmpty(value, key), key, mark);
        } else if (name == "key_file") {
          tls.key_file = SecretPath(NonEmpty(value, key), key, mark);
        } else if (name == "client_auth_type") {
          tls.client_auth = ParseClientAuth(value, key);
          auth_given = true;
        } else if (name == "client_ca_file") {
          tls.client_ca_file = SecretPath(NonEmpty(value, key), key, mark);
        } else if (name == "min_version") {
          tls.min_version = ParseVersion(value, key);
        } else if (name == "max_version") {
          tls.max_version = ParseVersion(value, key);
        } else if (name == "client_allowed_sans") {
          if (!value.IsSequence() || value.size() == 0) {
            Fail(key, mark, "must be a non-empty list of names");
          }
          for (const auto& san : value) {
            tls.client_allowed_sans.push_back(NonEmpty(san, key));
          }
        } else if (name == "cipher_suites" || name == "curve_preferences" ||
                   name == "prefer_server_cipher_suites" || name == "cert" ||
                   name == "key") {
          Fail(key, mark,
               "is not supported by fabricmon (OpenSSL defaults apply)");
        } else {
          Fail(key, mark, "unknown key");
        }
      });
  // Each check names its key's line (the mapping's when not written).
  const auto mark = [&](const std::string& key) { return KeyMark(node, key); };
  if (tls.cert_file.empty()) {
    Fail(path + ".cert_file", mark("cert_file"), "is required");
  }
  if (tls.key_file.empty()) {
    Fail(path + ".key_file", mark("key_file"), "is required");
  }
  // exporter-toolkit: a CA file without a type means verify every client.
  if (!auth_given && !tls.client_ca_file.empty()) {
    tls.client_auth = ClientAuth::kRequireAndVerifyClientCert;
  }
  const bool verifies =
      tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
      tls.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  if (verifies && tls.client_ca_file.empty()) {
    Fail(path + ".client_ca_file", mark("client_auth_type"),
         "is required when client_auth_type verifies client certificates");
  }
  if (!verifies && !tls.client_allowed_sans.empty()) {
    Fail(path + ".client_allowed_sans", mark("client_allowed_sans"),
         "needs a client_auth_type that verifies client certificates");
  }
  if (!verifies && !tls.client_ca_file.empty()) {
    Fail(path + ".client_ca_file", mark("client_ca_file"),
         "is set but client_auth_type does not verify client certificates");
  }
  if (tls.min_version > tls.max_version) {
    Fail(path + ".min_version", mark("min_version"), "is above max_version");
  }
  return tls;
}

bool LooksLikeBcrypt(const std::string& hash) {
  // $2a$, $2b$ or $2y$, a two-digit cost, '$', 53 characters of salt+hash.
  return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
         (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') &&
         hash[3] == '$' && std::isdigit(static_cast<unsigned char>(hash[4])) &&
         std::isdigit(static_cast<unsigned char>(hash[5])) && hash[6] == '$';
}

std::map<std::string, std::string> ParseUsers(const YAML::Node& node,
                                              const std::string& path) {
  std::map<std::string, std::string> users;
  ForEachKey(
      node, path,
      [&](const std::string& name, const YAML::Node& value,
          const std::string& key, const YAML::Mark& mark) {
        if (name.empty()) Fail(key, mark, "empty user name");
        if (name.find(':') != std::string::npos) {
          Fail(key, mark, "a user name cannot contain ':' (basic auth)");
        }
        std::string hash = Scalar(value, key);
        if (!LooksLikeBcrypt(hash)) {
          // Never echo the value: it may be a password pasted by mistake.
          Fail(key, value.Mark(),
               "is not a bcrypt hash ($2a$/$2b$/$2y$, 60 characters; make one "
               "with `htpasswd -nBC 10 USER`)");
        }
        users[name] = hash;
      });
  return users;
}

WebConfig Parse(const YAML::Node& root) {
  WebConfig config;
  if (!root || root.IsNull()) return config;
  ForEachKey(
      root, "",
      [&](const std::string& name, const YAML::Node& value,
          const std::string& key, const YAML::Mark& mark) {
        if (name == "tls_server_config") {
          if (value.IsNull()) return;  // an empty section = no TLS, as upstream
          config.tls = ParseTls(value, key);
        } else if (name == "basic_auth_users") {
          config.users = ParseUsers(value, key);
        } else if (name == "http_server_config" || name == "rate_limit") {
          Fail(key, mark, "is not supported by fabricmon");
        } else {
          Fail(key, mark, "unknown key");
        }
      });
  return config;
}

}  // namespace

std::optional<WebConfig> ParseWebConfig(std::string_view yaml,
                                        std::string* error) {
  try {
    return Parse(YAML::Load(std::string(yaml)));
  } catch (const config_keys::ConfigError& e) {
    *error = "web " + e.message;
  } catch (const YAML::Exception& e) {
    *error = "web config error: ";
    if (!e.mark.is_null()) {
      *error += "(line " + std::to_string(e.mark.line + 1) + "): ";
    }
    *error += e.msg;
  }
  return std::nullopt;
}

std::optional<WebConfig> LoadWebConfigFile(const std::string& path,
                                           std::string* error) {
  FileRead file = ReadRegularFile(path, kMaxWebConfigBytes);
  if (!file.ok()) {
    *error = "web config error: cannot read " + path + ": " + file.error;
    return std::nullopt;
  }
  auto config = ParseWebConfig(file.text, error);
  if (!config) {
    *error += " (in " + path + ")";
    return std::nullopt;
  }
  if (config->tls) {
    const auto dir = std::filesystem::path(path).parent_path();
    for (std::string* file : {&config->tls->cert_file, &config->tls->key_file,
                              &config->tls->client_ca_file}) {
      if (!file->empty() && std::filesystem::path(*file).is_relative()) {
        *file = (dir / *file).string();
      }
    }
  }
  return config;
}

}  // namespace fabric::http
