#include "config/credential.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace fabric {
namespace {

// systemd's credential_name_valid(): a file name, at most NAME_MAX bytes.
bool CredentialName(std::string_view name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

}  // namespace

std::optional<std::string> ResolveSecretPath(std::string_view written,
                                             const char* credentials_dir,
                                             std::string* error) {
  if (written.substr(0, kCredentialPrefix.size()) != kCredentialPrefix) {
    // The docs once showed `${CREDENTIALS_DIRECTORY}/probe.key`: read
    // literally, it failed as "No such file or directory" with no hint.
    if (written.find('$') != std::string_view::npos) {
      *error = "\"" + std::string(written) +
               "\" holds shell syntax, which nothing in the config expands; "
               "for a systemd credential write \"credential:NAME\" (the NAME "
               "of the unit's LoadCredential=NAME:/path)";
      return std::nullopt;
    }
    return std::string(written);
  }
  const std::string name(written.substr(kCredentialPrefix.size()));
  if (!CredentialName(name)) {
    *error = "\"" + std::string(written) +
             "\": a credential name is a file name (no '/'), e.g. "
             "\"credential:probe.key\"";
    return std::nullopt;
  }
  const std::string load = "LoadCredential=" + name + ":/path/of/the/file";
  if (credentials_dir == nullptr || *credentials_dir == '\0') {
    *error = "\"" + std::string(written) +
             "\" needs $CREDENTIALS_DIRECTORY, which systemd sets for a unit "
             "with " +
             load +
             "; it is not set here (check the config as the unit sees it "
             "with `systemctl reload fabricmon`, or give the file's path)";
    return std::nullopt;
  }
  std::string path = std::string(credentials_dir) + "/" + name;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    *error = "\"" + std::string(written) + "\": no credential " + name +
             " in $CREDENTIALS_DIRECTORY (" + credentials_dir + ": " +
             std::strerror(errno) + "); the unit needs " + load +
             " (a drop-in, docs/deploy.md)";
    return std::nullopt;
  }
  return path;
}

std::optional<std::string> SecretPathFromEnvironment(std::string_view written,
                                                     std::string* error) {
  return ResolveSecretPath(written, std::getenv("CREDENTIALS_DIRECTORY"),
                           error);
}

}  // namespace fabric
