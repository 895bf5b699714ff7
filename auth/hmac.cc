#include "auth/hmac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace fabric {

Mac Hmac::Sign(std::span<const std::uint8_t> message) const {
  Mac mac{};
  unsigned int length = 0;
  // One-shot HMAC(): no context to keep or share between threads.
  if (HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
           message.data(), message.size(), mac.data(), &length) == nullptr ||
      length != mac.size()) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return mac;
}

bool Hmac::Verify(std::span<const std::uint8_t> message,
                  std::span<const std::uint8_t> mac) const {
  if (mac.size() != kMacBytes) return false;
  Mac expected = Sign(message);
  return CRYPTO_memcmp(expected.data(), mac.data(), kMacBytes) == 0;
}

}  // namespace fabric
