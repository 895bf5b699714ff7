// libFuzzer target: the probe wire decoder (probe/wire.h) on arbitrary
// bytes. Decode must never crash or read out of bounds, and whatever it
// accepts must encode back to the very same bytes (so no field is silently
// dropped or altered). The key is fixed: the seeds in
// fuzz/corpus/probe_wire/ are signed with it, so the fuzzer starts past the
// MAC and explores the field checks behind it.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "probe/wire.h"

namespace {

const fabric::Hmac& FuzzHmac() {
  // 32 bytes of 0x5a: the key the seeds were made with.
  static const fabric::Hmac hmac(fabric::Key(32, 0x5a));
  return hmac;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  fabric::probe::DecodeError error{};
  auto packet =
      fabric::probe::Decode(std::span(data, size), FuzzHmac(), &error);
  if (packet) {
    auto again = fabric::probe::Encode(*packet, FuzzHmac());
    if (size != again.size() || std::memcmp(data, again.data(), size) != 0) {
      std::abort();
    }
  }
  return 0;
}
