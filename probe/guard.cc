#include "probe/guard.h"

#include <algorithm>
#include <cstring>

namespace fabric::probe {
namespace {

constexpr std::uint64_t kWords = ReplayWindow::kWindow / 64;

}  // namespace

bool ReplayWindow::Test(State& s, std::uint64_t seq) {
  if (seq == 0) return false;
  if (seq > s.top) {
    std::uint64_t shift = seq - s.top;
    if (shift >= kWindow) {
      std::fill(std::begin(s.bits), std::end(s.bits), 0);
    } else {
      // Shift the bitmap left by `shift` bits (bit i = top - i).
      std::uint64_t words = shift / 64, bits = shift % 64;
      for (std::uint64_t i = kWords; i-- > 0;) {
        std::uint64_t v = i >= words ? s.bits[i - words] << bits : 0;
        if (bits && i >= words + 1) v |= s.bits[i - words - 1] >> (64 - bits);
        s.bits[i] = v;
      }
    }
    s.top = seq;
    s.bits[0] |= 1;
    return true;
  }
  std::uint64_t age = s.top - seq;
  if (age >= kWindow) return false;
  std::uint64_t& word = s.bits[age / 64];
  std::uint64_t bit = std::uint64_t{1} << (age % 64);
  if (word & bit) return false;
  word |= bit;
  return true;
}

bool ReplayWindow::Accept(const std::string& source, std::uint64_t session,
                          std::uint64_t seq) {
  // The session's 8 bytes, then the source: fixed-length first, so two
  // keys are equal only when both parts are (and no number is formatted
  // per packet).
  std::string key(sizeof(session) + source.size(), '\0');
  std::memcpy(key.data(), &session, sizeof(session));
  std::memcpy(key.data() + sizeof(session), source.data(), source.size());
  auto it = map_.find(key);
  if (it == map_.end()) {
    if (map_.size() >= max_sessions_) {
      map_.erase(order_.front());
      order_.pop_front();
    }
    order_.push_back(key);
    it = map_.emplace(key, State{}).first;
    it->second.age = std::prev(order_.end());
  } else {
    order_.splice(order_.end(), order_, it->second.age);
  }
  return Test(it->second, seq);
}

bool RateLimiter::Allow(const std::string& source, double now_s) {
  auto it = map_.find(source);
  if (it == map_.end()) {
    if (map_.size() >= max_sources_) {
      map_.erase(order_.front());
      order_.pop_front();
    }
    order_.push_back(source);
    it = map_.emplace(source, Bucket{burst_, now_s, {}}).first;
    it->second.age = std::prev(order_.end());
  } else {
    order_.splice(order_.end(), order_, it->second.age);
  }
  Bucket& b = it->second;
  b.tokens = std::min(burst_, b.tokens + (now_s - b.last) * rate_);
  b.last = std::max(b.last, now_s);
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

RequestGuard::Verdict RequestGuard::Admit(const std::string& source,
                                          std::uint64_t session,
                                          std::uint64_t seq, double now_s) {
  if (!replay_.Accept(source, session, seq)) return Verdict::kReplay;
  if (!limiter_.Allow(source, now_s)) return Verdict::kRateLimited;
  return Verdict::kAccept;
}

}  // namespace fabric::probe
