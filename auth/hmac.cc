#include "auth/hmac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <stdexcept>
#include <utility>

#include "core/thread_annotations.h"

namespace fabric {
namespace {

// A context keyed with `key`. The fetched algorithm is released here: the
// context keeps its own reference.
EVP_MAC_CTX* NewKeyedContext(const Key& key) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (mac == nullptr) throw std::runtime_error("HMAC unavailable in libcrypto");
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
  EVP_MAC_free(mac);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end()};
  if (ctx == nullptr ||
      EVP_MAC_init(ctx, key.data(), key.size(), params) != 1) {
    EVP_MAC_CTX_free(ctx);
    throw std::runtime_error("HMAC-SHA256 setup failed");
  }
  return ctx;
}

}  // namespace

void Hmac::CtxFree::operator()(EVP_MAC_CTX* ctx) const {
  EVP_MAC_CTX_free(ctx);
}

Hmac::Hmac(Key key) : key_(std::move(key)), ctx_(NewKeyedContext(key_)) {}

// A copy keys a context of its own rather than duplicating the other's,
// which another thread may be using at that moment.
Hmac::Hmac(const Hmac& other) : key_(other.key_), ctx_(NewKeyedContext(key_)) {}

Hmac& Hmac::operator=(const Hmac& other) {
  if (this != &other) *this = Hmac(other);
  return *this;
}

Hmac::Hmac(Hmac&& other) noexcept
    : key_(std::move(other.key_)), ctx_(std::move(other.ctx_)) {}

Hmac& Hmac::operator=(Hmac&& other) noexcept {
  key_ = std::move(other.key_);
  ctx_ = std::move(other.ctx_);
  return *this;
}

Hmac::~Hmac() = default;

Mac Hmac::Sign(std::span<const std::uint8_t> message) const {
  Mac mac{};
  std::size_t length = 0;
  MutexLock lock(mu_);
  if (!ctx_ || EVP_MAC_init(ctx_.get(), nullptr, 0, nullptr) != 1 ||
      EVP_MAC_update(ctx_.get(), message.data(), message.size()) != 1 ||
      EVP_MAC_final(ctx_.get(), mac.data(), &length, mac.size()) != 1 ||
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
