// libFuzzer target: MAD responses (sources/mad/codec.h) as a umad device
// returns them: every decoder the sm and fabric collectors use, on the same
// bytes. A response is at most one MAD (256 bytes); shorter input is what a
// truncated read would give.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sources/mad/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const fabric::mad::Bytes mad(data, size);
  std::string error;
  (void)fabric::mad::MadStatus(mad);
  (void)fabric::mad::DecodeSmInfo(mad, &error);
  (void)fabric::mad::DecodeNodeInfo(mad, &error);
  (void)fabric::mad::DecodeNodeDescription(mad, &error);
  (void)fabric::mad::DecodePortInfo(mad, &error);
  (void)fabric::mad::DecodePortCounters(mad, &error);
  (void)fabric::mad::DecodePortCountersExtended(mad, &error);
  (void)fabric::mad::DecodeSwitchInfo(mad, &error);
  (void)fabric::mad::DecodeLftBlock(mad, &error);
  return 0;
}
