// libFuzzer target: DCB netlink replies (sources/dcb_netlink.h): the
// RTM_GETDCB / DCB_CMD_IEEE_GET answer with PFC, ETS, APP and DCBX
// attributes.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <span>

#include "sources/dcb_netlink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const auto result =
      fabric::DecodeDcbIeeeReply(std::span<const std::uint8_t>(data, size));
  if (result.ok()) (void)result->Trust();
  return 0;
}
