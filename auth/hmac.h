// HMAC-SHA256 over a message with the shared key (OpenSSL's libcrypto), and
// its constant-time verification: the authentication of every packet that
// one fabricmon daemon sends another (probes, bench control).
//
// Thread-safety: Hmac holds the key only; Sign/Verify are const and may run
// concurrently on one instance.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "auth/key_file.h"

namespace fabric {

constexpr std::size_t kMacBytes = 32;
using Mac = std::array<std::uint8_t, kMacBytes>;

class Hmac {
 public:
  explicit Hmac(Key key) : key_(std::move(key)) {}

  Mac Sign(std::span<const std::uint8_t> message) const;
  // True when `mac` is the MAC of `message`; compares in constant time so
  // that the answer's timing does not leak how many bytes matched.
  bool Verify(std::span<const std::uint8_t> message,
              std::span<const std::uint8_t> mac) const;

 private:
  Key key_;
};

}  // namespace fabric
