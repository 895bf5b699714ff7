// libFuzzer target for the fabricmon-bench control codec (benchtool/wire.h):
// arbitrary bytes through the header decoder, the frame check (MAC, replay
// guard) and every message decoder. None may crash, read out of bounds or
// allocate without bound; a decoded message must encode back to bytes the
// decoder accepts. The fuzz build (CMake, script) belongs to fuzz/'s owner.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "auth/hmac.h"
#include "benchtool/wire.h"

using namespace fabric;
using namespace fabric::bench;

namespace {

const Hmac& TestHmac() {
  static const Hmac hmac(Key(32, 0x5a));
  return hmac;
}

template <typename Decode, typename Encode>
void RoundTrip(std::span<const std::uint8_t> in, Decode decode, Encode encode) {
  auto m = decode(in);
  if (!m) return;
  Bytes again = encode(*m);
  if (!decode(std::span<const std::uint8_t>(again))) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::span<const std::uint8_t> in(data, size);
  FrameHeader h;
  DecodeHeader(in, &h);
  Nonces nonces{Bytes(kNonceBytes, 1), Bytes(kNonceBytes, 2)};
  std::uint64_t last = 0;
  Bytes payload;
  OpenFrame(TestHmac(), nonces, in, &last, &h, &payload);
  OpenFrame(TestHmac(), {}, in, &last, &h, &payload);
  RoundTrip(in, DecodeHello, EncodeHello);
  RoundTrip(in, DecodePrepare, EncodePrepare);
  RoundTrip(in, DecodePrepared, EncodePrepared);
  RoundTrip(in, DecodeConnect, EncodeConnect);
  RoundTrip(in, DecodeRun, EncodeRun);
  RoundTrip(in, DecodeRunResult, EncodeRunResult);
  RoundTrip(in, DecodeError, EncodeError);
  return 0;
}
