#include "http/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <tuple>
#include <vector>

namespace fabric::http {
namespace {

std::optional<std::string> DecodeBase64(std::string_view in) {
  if (in.empty() || in.size() % 4 != 0) return std::nullopt;
  std::vector<unsigned char> out(in.size() / 4 * 3);
  const int n = EVP_DecodeBlock(
      out.data(), reinterpret_cast<const unsigned char*>(in.data()),
      static_cast<int>(in.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the bytes '=' padding stands for; drop them.
  std::size_t size = static_cast<std::size_t>(n);
  if (in.back() == '=') --size;
  if (in.size() >= 2 && in[in.size() - 2] == '=') --size;
  return std::string(reinterpret_cast<const char*>(out.data()), size);
}

BasicAuth::CacheKey MakeCacheKey(const std::string& user,
                                 const std::string& hash,
                                 const std::string& password) {
  std::array<unsigned char, 32> digest{};
  // NUL separators: no two (user, hash, password) triples share a key.
  std::string text = user;
  text.push_back('\0');
  text += hash;
  text.push_back('\0');
  text += password;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(),
         digest.data());
  OPENSSL_cleanse(text.data(), text.size());
  return digest;
}

}  // namespace

std::optional<Credentials> ParseBasicAuthorization(std::string_view header) {
  constexpr std::string_view kScheme = "basic ";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) {
      return std::nullopt;
    }
  }
  std::string_view encoded = header.substr(kScheme.size());
  while (!encoded.empty() && encoded.front() == ' ') encoded.remove_prefix(1);
  while (!encoded.empty() && encoded.back() == ' ') encoded.remove_suffix(1);
  auto decoded = DecodeBase64(encoded);
  if (!decoded) return std::nullopt;
  auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return Credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

bool CheckBcrypt(const std::string& password, const std::string& hash) {
  // crypt_data is large (~32 KiB): heap, not stack.
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  // libxcrypt returns "*0"/"*1" (or NULL) on failure, never the hash.
  if (out == nullptr || std::strlen(out) != hash.size()) return false;
  return CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users)
    : users_(std::move(users)) {}

BasicAuth::Verdict BasicAuth::Precheck(std::string_view authorization,
                                       Check* check) const {
  if (!enabled()) return Verdict::kAllow;
  auto credentials = ParseBasicAuthorization(authorization);
  if (!credentials) return Verdict::kDeny;
  auto it = users_.find(credentials->user);
  if (it == users_.end()) {
    // Same cost as a known user, so a wrong name is not faster to learn.
    check->password = std::move(credentials->password);
    check->hash = users_.begin()->second;
    check->known_user = false;
    return Verdict::kCheck;
  }
  check->key = MakeCacheKey(it->first, it->second, credentials->password);
  if (verified_.contains(check->key)) return Verdict::kAllow;
  check->password = std::move(credentials->password);
  check->hash = it->second;
  check->known_user = true;
  check->user = it->first;
  return Verdict::kCheck;
}

void BasicAuth::Remember(const CacheKey& key, const std::string& user) {
  if (verified_.size() >= kCacheLimit) verified_.clear();
  verified_.emplace(key, user);
}

void BasicAuth::KeepVerified(const BasicAuth& old) {
  for (const auto& [key, user] : old.verified_) {
    auto now = users_.find(user);
    auto before = old.users_.find(user);
    if (now == users_.end() || before == old.users_.end() ||
        now->second != before->second) {
      continue;
    }
    if (verified_.size() >= kCacheLimit) return;
    verified_.emplace(key, user);
  }
}

bool AuthThrottle::TryStart(const std::string& source, Clock::time_point now) {
  auto it = sources_.find(source);
  if (it == sources_.end()) {
    if (sources_.size() >= limits_.max_sources) {
      // Forget idle untrusted sources first: a flood of new addresses must
      // not make the server forget the scrapers it trusts.
      auto idle = [now](const auto& entry) {
        return entry.second.pending == 0 && entry.second.blocked_until <= now;
      };
      std::erase_if(sources_, [&](const auto& entry) {
        return idle(entry) && !entry.second.trusted;
      });
      if (sources_.size() >= limits_.max_sources) std::erase_if(sources_, idle);
      if (sources_.size() >= limits_.max_sources) return false;
    }
    it = sources_.emplace(source, Source{}).first;
  }
  Source& s = it->second;
  if (now < s.blocked_until || s.pending >= limits_.pending_per_source) {
    ++s.strikes;
    return false;
  }
  ++s.pending;
  return true;
}

void AuthThrottle::Drop(const std::string& source) {
  auto it = sources_.find(source);
  if (it == sources_.end()) return;
  if (it->second.pending > 0) --it->second.pending;
  ++it->second.strikes;
}

AuthThrottle::Rank AuthThrottle::RankOf(const std::string& source) const {
  auto it = sources_.find(source);
  if (it == sources_.end()) return {1, 0};
  return {it->second.trusted ? 0 : 1, it->second.strikes};
}

void AuthThrottle::Finish(const std::string& source, bool ok,
                          Clock::time_point now) {
  auto it = sources_.find(source);
  if (it == sources_.end()) return;
  Source& s = it->second;
  if (s.pending > 0) --s.pending;
  if (ok) {
    // Nothing to hold against it, and its next checks go first.
    s.failures = 0;
    s.blocked_until = {};
    s.strikes = 0;
    s.trusted = true;
    return;
  }
  ++s.strikes;
  ++s.failures;
  if (s.failures < limits_.free_failures) return;
  s.trusted = false;
  auto backoff = limits_.first_backoff;
  for (unsigned i = limits_.free_failures;
       i < s.failures && backoff < limits_.max_backoff; ++i) {
    backoff *= 2;
  }
  s.blocked_until = now + std::min(backoff, limits_.max_backoff);
}

bool CheckQueue::Push(std::uint64_t id, Rank rank,
                      std::optional<std::uint64_t>* displaced) {
  displaced->reset();
  if (capacity_ == 0) return false;
  if (entries_.size() >= capacity_) {
    if (!(rank < entries_.back().rank)) return false;
    *displaced = entries_.back().id;
    entries_.pop_back();
  }
  Entry entry{rank, next_seq_++, id};
  auto at = std::upper_bound(entries_.begin(), entries_.end(), entry,
                             [](const Entry& a, const Entry& b) {
                               return std::tie(a.rank, a.seq) <
                                      std::tie(b.rank, b.seq);
                             });
  entries_.insert(at, entry);
  return true;
}

std::optional<std::uint64_t> CheckQueue::Pop() {
  if (entries_.empty()) return std::nullopt;
  const std::uint64_t id = entries_.front().id;
  entries_.pop_front();
  return id;
}

bool BasicAuth::Allows(std::string_view authorization) {
  Check check;
  switch (Precheck(authorization, &check)) {
    case Verdict::kAllow:
      return true;
    case Verdict::kDeny:
      return false;
    case Verdict::kCheck:
      break;
  }
  if (!CheckBcrypt(check.password, check.hash) || !check.known_user) {
    return false;
  }
  Remember(check.key, check.user);
  return true;
}

}  // namespace fabric::http
