// libFuzzer target: ethtool generic netlink replies
// (sources/ethtool_netlink.h): FEC (active mode, per-lane statistics),
// module EEPROM data and the family lookup.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <span>

#include "sources/ethtool_netlink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::span<const std::uint8_t> in(data, size);
  const auto fec = fabric::DecodeFecReply(in);
  if (fec.ok() && fec->corrected_blocks) {
    (void)fec->corrected_blocks->lanes.size();
  }
  (void)fabric::DecodeModuleEepromReply(in).ok();
  (void)fabric::DecodeGenlFamilyReply(in).ok();
  return 0;
}
