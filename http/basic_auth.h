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
// Remember with a success. A reload builds a new BasicAuth; KeepVerified
// carries over the cached successes of users whose hash did not change, so
// a reload during a password flood does not lock out a known scraper.
//
// AuthThrottle is the server's guard against password guessing: a source
// address gets at most a couple of bcrypt checks in flight, and one that
// keeps failing is refused without a check for a growing, bounded time.
// It also ranks sources for CheckQueue, so that a flood from any number of
// addresses cannot keep the right password out (docs/security.md):
//  1. a source whose credentials passed before ("trusted": since the start,
//     kept across reloads, until it fails `free_failures` times in a row)
//     goes ahead of every other, so after a password rotation Prometheus'
//     new password waits for at most the one running check and the trusted
//     sources queued before it;
//  2. among the rest, fewer strikes first: a strike is a failed check or a
//     check refused for any reason, and a success clears them. A guesser
//     re-asking at full speed piles up strikes and sinks; a scraper asking
//     every few seconds keeps few, so a new scraper (no strikes) displaces
//     a queued guess at once.
// A refused or displaced check is answered 401 at once (a strike): the
// queue's length bounds the work a flood can queue, and the cost of being
// refused falls on the source that asked.
//
// Thread-safety: ParseBasicAuthorization and CheckBcrypt are pure and
// thread-safe. BasicAuth and AuthThrottle are not thread-safe (the server
// uses them from its one io_context thread).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

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
    std::string user;
    CacheKey key{};
  };

  explicit BasicAuth(std::map<std::string, std::string> users);

  // No users configured: every request is allowed.
  bool enabled() const { return !users_.empty(); }
  // kAllow (no users, or cached success), kDeny (no or malformed
  // credentials), or kCheck with *check filled in.
  Verdict Precheck(std::string_view authorization, Check* check) const;
  void Remember(const CacheKey& key, const std::string& user);
  // Takes over `old`'s cached successes for users present in both with the
  // same hash (a changed or removed user's entries are dropped).
  void KeepVerified(const BasicAuth& old);
  // Precheck + CheckBcrypt + Remember in one call (blocks for bcrypt):
  // true when `authorization` (the header value, empty if absent) names a
  // configured user with the right password.
  bool Allows(std::string_view authorization);

 private:
  static constexpr std::size_t kCacheLimit = 256;
  std::map<std::string, std::string> users_;
  std::map<CacheKey, std::string> verified_;  // -> user
};

class AuthThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    std::size_t pending_per_source = 2;
    // Failed checks in a row before a source is refused without checking.
    unsigned free_failures = 5;
    // How long, doubling with every further failure, up to `max_backoff`.
    Clock::duration first_backoff = std::chrono::seconds(1);
    Clock::duration max_backoff = std::chrono::seconds(60);
    // Sources remembered at once; beyond, idle ones are forgotten, and a
    // new source is refused if none is idle.
    std::size_t max_sources = 4096;
  };
  explicit AuthThrottle(Limits limits) : limits_(limits) {}
  AuthThrottle() : AuthThrottle(Limits{}) {}

  // Lower goes first in CheckQueue: (0 if trusted else 1, strikes).
  using Rank = std::pair<int, std::uint64_t>;

  // True when `source` may start a bcrypt check now (it is then pending
  // until Finish or Drop); false: answer 401 without checking (a strike).
  bool TryStart(const std::string& source, Clock::time_point now);
  // A check TryStart allowed has ended; `ok`: the password was right.
  void Finish(const std::string& source, bool ok, Clock::time_point now);
  // A check TryStart allowed was refused without running (a strike).
  void Drop(const std::string& source);
  Rank RankOf(const std::string& source) const;

 private:
  struct Source {
    std::size_t pending = 0;
    unsigned failures = 0;  // in a row
    Clock::time_point blocked_until{};
    bool trusted = false;
    std::uint64_t strikes = 0;
  };
  Limits limits_;
  std::map<std::string, Source> sources_;
};

// The bcrypt checks waiting for the worker thread, most urgent (lowest
// AuthThrottle::Rank) first, first come first among equals, at most
// `capacity` of them. Entries are ids the server maps to its requests.
class CheckQueue {
 public:
  using Rank = AuthThrottle::Rank;
  explicit CheckQueue(std::size_t capacity) : capacity_(capacity) {}

  // Queues `id`. When full, the least urgent entry (the latest among
  // equals) makes room if `rank` is strictly more urgent: its id is
  // returned in *displaced. False (and nothing queued) otherwise.
  bool Push(std::uint64_t id, Rank rank,
            std::optional<std::uint64_t>* displaced);
  // Removes and returns the most urgent id; nullopt when empty.
  std::optional<std::uint64_t> Pop();
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    Rank rank;
    std::uint64_t seq;
    std::uint64_t id;
  };
  std::size_t capacity_;
  std::uint64_t next_seq_ = 0;
  std::deque<Entry> entries_;  // sorted by (rank, seq)
};

}  // namespace fabric::http
