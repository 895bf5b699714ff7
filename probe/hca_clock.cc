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

std::optional<std::uint64_t> MeasureHz(std::uint64_t cycles_a,
                                       std::int64_t host_ns_a,
                                       std::uint64_t cycles_b,
                                       std::int64_t host_ns_b,
                                       std::uint64_t mask) {
  const std::int64_t dns = host_ns_b - host_ns_a;
  if (dns < 1000000) return std::nullopt;
  const std::int64_t dc = SignedCycleDelta(cycles_a, cycles_b, mask);
  if (dc <= 0) return std::nullopt;
  const __int128 hz = (static_cast<__int128>(dc) * 1000000000 + dns / 2) / dns;
  return static_cast<std::uint64_t>(hz);
}

}  // namespace fabric::rdma
