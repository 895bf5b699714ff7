// Basic authentication against the web config's bcrypt hashes
// (basic_auth_users), checked with libxcrypt's crypt_r and a constant-time
// compare.
//
// bcrypt costs tens of milliseconds by design, and scrapes repeat the same
// credentials every few seconds, so successful checks are cached (bounded)
// under a SHA-256 of user, hash and password, as exporter-toolkit does. An
// unknown user still costs one bcrypt, so timing does not reveal which
// users exist.
//
// The server splits a check in two so that bcrypt never runs on its event
// loop: Precheck (cheap, event loop) answers from the cache or says which
// bcrypt to run; the server runs CheckBcrypt on a worker thread and calls
// Remember with a success.
//
// Thread-safety: ParseBasicAuthorization and CheckBcrypt are pure and
// thread-safe. A BasicAuth is not thread-safe (the server uses it from its
// one io_context thread).
#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace fabric::http {

struct Credentials {
  std::string user;
  std::string password;
};

// The user and password of an `Authorization: Basic <base64>` header value;
// nullopt for another scheme or malformed base64 / missing ':'.
std::optional<Credentials> ParseBasicAuthorization(std::string_view header);

// crypt_r(password, hash) compared in constant time with `hash`.
bool CheckBcrypt(const std::string& password, const std::string& hash);

class BasicAuth {
 public:
  using CacheKey = std::array<unsigned char, 32>;
  enum class Verdict { kAllow, kDeny, kCheck };
  // What a kCheck verdict asks for: CheckBcrypt(password, hash), and if
  // that succeeds and `known_user`, Remember(key).
  struct Check {
    std::string password;
    std::string hash;
    bool known_user = false;
    CacheKey key{};
  };

  explicit BasicAuth(std::map<std::string, std::string> users);

  // No users configured: every request is allowed.
  bool enabled() const { return !users_.empty(); }
  // kAllow (no users, or cached success), kDeny (no or malformed
  // credentials), or kCheck with *check filled in.
  Verdict Precheck(std::string_view authorization, Check* check) const;
  void Remember(const CacheKey& key);
  // Precheck + CheckBcrypt + Remember in one call (blocks for bcrypt):
  // true when `authorization` (the header value, empty if absent) names a
  // configured user with the right password.
  bool Allows(std::string_view authorization);

 private:
  static constexpr std::size_t kCacheLimit = 256;
  std::map<std::string, std::string> users_;
  std::set<CacheKey> verified_;
};

}  // namespace fabric::http
