// The responder's guards, pure and clock-injected: a replay window per
// (source, session) and a token-bucket rate limit per source address. Both
// keep a bounded number of entries, so a flood of spoofed sources cannot
// grow them without limit; the oldest entry is evicted first. RequestGuard
// applies them in the order that keeps a forger from spending a real
// peer's budget (issue 40): only a request that is authenticated (the
// caller checked its MAC) and fresh (the replay window) is charged to its
// source's rate limit.
//
// Thread-safety: none; the probe engine uses them on the io thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>

namespace fabric::probe {

// Sliding window of the last kWindow sequence numbers per session (the
// anti-replay window of IPsec, RFC 4303 3.4.3): a sequence number seen
// before, or older than the window, is a replay.
class ReplayWindow {
 public:
  static constexpr std::uint64_t kWindow = 1024;
  explicit ReplayWindow(std::size_t max_sessions = 4096)
      : max_sessions_(max_sessions) {}

  // True (and records it) when `seq` is fresh for (source, session).
  bool Accept(const std::string& source, std::uint64_t session,
              std::uint64_t seq);
  std::size_t sessions() const { return map_.size(); }

 private:
  struct State {
    std::uint64_t top = 0;                  // highest seq accepted
    std::uint64_t bits[kWindow / 64] = {};  // bit (top - seq) set = seen
    std::list<std::string>::iterator age;
  };
  bool Test(State& s, std::uint64_t seq);
  std::size_t max_sessions_;
  std::unordered_map<std::string, State> map_;
  std::list<std::string> order_;  // least recently used first
};

// Token bucket per source: `rate` tokens a second, burst of `burst`.
class RateLimiter {
 public:
  RateLimiter(double rate, double burst, std::size_t max_sources = 4096)
      : rate_(rate), burst_(burst), max_sources_(max_sources) {}

  // True when `source` may be answered at `now_s` (monotonic seconds).
  bool Allow(const std::string& source, double now_s);

 private:
  struct Bucket {
    double tokens;
    double last;
    std::list<std::string>::iterator age;
  };
  double rate_, burst_;
  std::size_t max_sources_;
  std::unordered_map<std::string, Bucket> map_;
  std::list<std::string> order_;
};

// The responder's admission of one authenticated request: the replay
// check first, then the rate limit. A replayed copy of a sniffed probe,
// sent from the peer's address at any rate, is refused as a replay and
// costs that address nothing, so the real peer's fresh probes are still
// answered (charging the limit first let 20,000 replays a second starve
// the peer). A replay costs one window lookup; the MAC before it one
// HMAC-SHA256 of 64 bytes: a bounded, constant cost per datagram.
class RequestGuard {
 public:
  enum class Verdict { kAccept, kReplay, kRateLimited };
  RequestGuard(double rate, double burst, std::size_t max_entries = 4096)
      : replay_(max_entries), limiter_(rate, burst, max_entries) {}

  // `source`'s request (session, seq), already MAC-checked, at `now_s`.
  Verdict Admit(const std::string& source, std::uint64_t session,
                std::uint64_t seq, double now_s);

 private:
  ReplayWindow replay_;
  RateLimiter limiter_;
};

}  // namespace fabric::probe
