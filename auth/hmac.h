// HMAC-SHA256 over a message with the shared key (OpenSSL's libcrypto), and
// its constant-time verification: the authentication of every packet that
// one fabricmon daemon sends another (probes, bench control).
//
// Thread-safety: Sign/Verify are const and may run concurrently on one
// instance. They reuse one keyed OpenSSL context (fetching the algorithm and
// hashing the key once, not per packet: a third of a prober's instructions
// went there), which a mutex serialises; the lock is uncontended on the
// daemon's io thread. A copy gets its own context.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "auth/key_file.h"
#include "core/thread_annotations.h"

// OpenSSL's context type, declared here so that users need not include it.
typedef struct evp_mac_ctx_st EVP_MAC_CTX;

namespace fabric {

constexpr std::size_t kMacBytes = 32;
using Mac = std::array<std::uint8_t, kMacBytes>;

class Hmac {
 public:
  // Throws std::runtime_error when libcrypto cannot set up HMAC-SHA256.
  explicit Hmac(Key key);
  Hmac(const Hmac& other);
  Hmac& operator=(const Hmac& other);
  // A moved-from Hmac may only be destroyed or assigned to.
  Hmac(Hmac&& other) noexcept;
  Hmac& operator=(Hmac&& other) noexcept NO_THREAD_SAFETY_ANALYSIS;
  ~Hmac();

  Mac Sign(std::span<const std::uint8_t> message) const;
  // True when `mac` is the MAC of `message`; compares in constant time so
  // that the answer's timing does not leak how many bytes matched.
  bool Verify(std::span<const std::uint8_t> message,
              std::span<const std::uint8_t> mac) const;

 private:
  struct CtxFree {
    void operator()(EVP_MAC_CTX* ctx) const;
  };

  Key key_;
  // Keyed once in the constructor; each Sign re-initialises it without a
  // key, which OpenSSL 3 documents as "reuse the key already set".
  // Guards the state inside ctx_. The pointer itself changes only by
  // construction and assignment, which nothing runs concurrently with a
  // Sign (so the move assignment is exempt from the analysis).
  mutable Mutex mu_;
  std::unique_ptr<EVP_MAC_CTX, CtxFree> ctx_ GUARDED_BY(mu_);
};

}  // namespace fabric
