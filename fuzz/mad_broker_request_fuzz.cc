// libFuzzer target: what a compromised daemon can write to the MAD broker's
// socket (sources/mad/broker_protocol.h). Whatever the bytes, a request the
// broker would send must be an allow-listed Get, and the MAD it builds must
// say exactly what the request said (no field the request could not name).
// The same bytes also go through the daemon's reply decoder.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "sources/mad/broker_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using namespace fabric::mad::broker;
  const std::span<const std::uint8_t> bytes(data, size);
  (void)DecodeReply(bytes);
  Refusal refusal;
  std::uint32_t tid;
  const auto request = DecodeRequest(bytes, &refusal, &tid);
  if (!request || request->kind != Kind::kMad) return 0;
  if (Check(request->mad) != Refusal::kNone) return 0;
  const fabric::Mad mad = BuildMad(request->mad);
  if (mad[3] != fabric::kMadMethodGet) std::abort();
  const MadCall again =
      CallFromMad(request->mad.dlid, mad,
                  std::chrono::milliseconds(request->mad.timeout_ms));
  if (Check(again) != Refusal::kNone || BuildMad(again) != mad) std::abort();
  return 0;
}
