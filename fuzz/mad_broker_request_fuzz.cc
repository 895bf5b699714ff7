// libFuzzer target: what a compromised daemon can write to the MAD broker's
// socket (sources/mad/broker_protocol.h). Whatever the bytes, a request the
// broker would send must be an allow-listed Get, and the MAD it builds must
// say exactly what the request said (no field the request could not name).
// The same bytes also go through the daemon's reply decoders.
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
  (void)DecodeReplies(bytes);
  // One message may carry several requests (version 2): each is checked
  // on its own, as the broker does.
  for (const DecodedRequest& d : DecodeRequests(bytes)) {
    if (!d.request || d.request->kind != Kind::kMad) continue;
    const MadCall& call = d.request->mad;
    if (Check(call) != Refusal::kNone) continue;
    const fabric::Mad mad = BuildMad(call);
    if (mad[3] != fabric::kMadMethodGet) std::abort();
    const MadCall again =
        CallFromMad(call.dlid, mad, std::chrono::milliseconds(call.timeout_ms));
    if (Check(again) != Refusal::kNone || BuildMad(again) != mad) std::abort();
  }
  return 0;
}
