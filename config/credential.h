// Secret files named as systemd credentials. A key or certificate option
// (collectors.probe.key_file, collectors.bench_agent.key_file, the web
// config's tls_server_config files) written `credential:NAME` is the file
// NAME in the directory systemd hands the service in $CREDENTIALS_DIRECTORY
// (the unit's `LoadCredential=NAME:/path/of/the/file`), resolved when the
// key is loaded (at start, --check-config and every reload). Nothing in a
// config file is expanded: a path holding `${...}` or `$VAR` is refused with
// the hint, not read literally.
//
// Thread-safety: ResolveSecretPath is pure apart from one stat(2) of the
// credential; SecretPathFromEnvironment reads the process environment.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabric {

inline constexpr std::string_view kCredentialPrefix = "credential:";

// Resolves the option's value `written`: a plain path is returned as it is;
// `credential:NAME` becomes <credentials_dir>/NAME. `credentials_dir` is
// $CREDENTIALS_DIRECTORY (nullptr or empty: not set). Returns nullopt with
// the reason in *error (no "config error:" prefix, no key): shell syntax in
// a path, a NAME that is not a credential name, the variable unset, or no
// credential NAME in the directory.
std::optional<std::string> ResolveSecretPath(std::string_view written,
                                             const char* credentials_dir,
                                             std::string* error);

// ResolveSecretPath with this process's $CREDENTIALS_DIRECTORY.
std::optional<std::string> SecretPathFromEnvironment(std::string_view written,
                                                     std::string* error);

}  // namespace fabric
