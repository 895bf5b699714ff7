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

TlsConfig ParseTls(const YAML::Node& node, const std::string& path,
                   bool* auth_given) {
  TlsConfig tls;
  bool& auth_stated = *auth_given;
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
          auth_stated = true;
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
  if (!auth_stated && !tls.client_ca_file.empty()) {
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

// `{}`: the file states the section is off on purpose.
bool StatedEmpty(const YAML::Node& value) {
  return value.IsMap() && value.size() == 0;
}

// A key with nothing under it: most likely a file cut short right after it.
// Upstream reads it as "off"; fabricmon refuses it (web_config.h).
void RefuseBare(const YAML::Node& value, const std::string& key,
                const YAML::Mark& mark, const char* off) {
  if (!value.IsNull()) return;
  Fail(key, mark,
       std::string("has nothing under it (a file cut short?); write `") + key +
           ": {}` to serve " + off + " on purpose");
}

WebConfig Parse(const YAML::Node& root) {
  WebConfig config;
  if (!root || root.IsNull()) {
    throw config_keys::ConfigError{
        "config error: the file has no settings (empty, only comments, or "
        "cut short); write `{}` to serve plain HTTP without basic auth on "
        "purpose"};
  }
  ForEachKey(
      root, "",
      [&](const std::string& name, const YAML::Node& value,
          const std::string& key, const YAML::Mark& mark) {
        if (name == "tls_server_config") {
          RefuseBare(value, key, mark, "without TLS");
          if (StatedEmpty(value)) {
            config.no_tls_stated = true;
            return;
          }
          config.tls = ParseTls(value, key, &config.client_auth_stated);
        } else if (name == "basic_auth_users") {
          RefuseBare(value, key, mark, "without basic auth");
          config.no_auth_stated = StatedEmpty(value);
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

SecurityLevel LevelOf(const WebConfig& config) {
  SecurityLevel level;
  level.tls = config.tls.has_value();
  level.basic_auth = !config.users.empty();
  level.verifies_clients =
      config.tls &&
      (config.tls->client_auth == ClientAuth::kVerifyClientCertIfGiven ||
       config.tls->client_auth == ClientAuth::kRequireAndVerifyClientCert);
  level.no_tls_stated = config.no_tls_stated;
  level.no_auth_stated = config.no_auth_stated;
  level.client_auth_stated = config.client_auth_stated;
  return level;
}

std::string Downgrade(const SecurityLevel& running, const SecurityLevel& next,
                      std::vector<std::string>* turned_off) {
  struct Step {
    bool off;
    bool stated;
    const char* what;
    const char* how;
  };
  const Step steps[] = {
      {running.tls && !next.tls, next.no_tls_stated, "TLS",
       "tls_server_config: {}"},
      {running.basic_auth && !next.basic_auth, next.no_auth_stated,
       "basic auth", "basic_auth_users: {}"},
      // Without TLS there are no client certificates either; that is the
      // TLS step's to state.
      {running.verifies_clients && next.tls && !next.verifies_clients,
       next.client_auth_stated, "client certificate verification",
       "tls_server_config.client_auth_type: NoClientCert (or another "
       "type), written out"},
  };
  std::string refused;
  std::vector<std::string> off;
  for (const Step& step : steps) {
    if (!step.off) continue;
    if (step.stated) {
      off.push_back(step.what);
    } else {
      refused += std::string(refused.empty() ? "" : "; ") + "it would turn " +
                 step.what + " off without saying so (write `" + step.how +
                 "` to do it on purpose)";
    }
  }
  if (refused.empty()) *turned_off = std::move(off);
  return refused;
}

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
