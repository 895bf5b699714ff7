#include "probe/hca_clock.h"

namespace fabric::rdma {

std::string_view ClockKindName(ClockKind kind) {
  return kind == ClockKind::kHardware ? "hardware" : "software";
}

ClockKind ChooseClock(const DeviceAttr& device) {
  return device.completion_timestamp_mask != 0 && device.hca_core_clock_khz != 0
             ? ClockKind::kHardware
             : ClockKind::kSoftware;
}

std::int64_t SignedCycleDelta(std::uint64_t earlier, std::uint64_t later,
                              std::uint64_t mask) {
  if (mask == 0 || mask == ~std::uint64_t{0}) {
    // Two's complement: the difference of two 64-bit counts read as signed
    // is the shorter way round.
    return static_cast<std::int64_t>(later - earlier);
  }
  const std::uint64_t d = (later - earlier) & mask;
  const std::uint64_t half = (mask >> 1) + 1;  // half the period
  if (d < half) return static_cast<std::int64_t>(d);
  return -static_cast<std::int64_t>(mask - d + 1);
}

std::int64_t CyclesToNs(std::int64_t cycles, std::uint64_t hz) {
  if (hz == 0) return 0;
  // 128-bit so that cycles * 1e9 cannot overflow; round to nearest.
  const __int128 scaled = static_cast<__int128>(cycles) * 1000000000;
  const __int128 h = static_cast<__int128>(hz);
  const __int128 q = scaled >= 0 ? (scaled + h / 2) / h : (scaled - h / 2) / h;
  return static_cast<std::int64_t>(q);
}

}  // namespace fabric::rdma
