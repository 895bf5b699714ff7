// libFuzzer target: RDMA netlink replies (sources/roce_rdma_netlink.h):
// the device dump and the STAT_GET hardware-counter reply, as the kernel
// (or anything else able to answer on the socket) sends them.
//
// Thread-safety: libFuzzer calls it from one thread.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sources/roce_rdma_netlink.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  std::vector<fabric::RdmaDevice> devices;
  bool done = false;
  (void)fabric::DecodeRdmaDeviceDump(bytes, devices, &done);
  (void)fabric::DecodeRdmaStatReply(bytes);
  return 0;
}
