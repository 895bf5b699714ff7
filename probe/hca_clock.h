// Completion timestamps of an RDMA device: HCA clock cycles -> nanoseconds.
// The HCA stamps completions with a free-running counter (width given by
// ibv_query_device_ex's completion_timestamp_mask, rate by hca_core_clock
// in kHz). HcaClock maps a cycle count onto the host's CLOCK_MONOTONIC
// nanoseconds through an anchor: one (cycles, host ns) pair read together
// (ibv_query_rt_values_ex next to clock_gettime). Cycle differences wrap
// modulo the counter width; a stamp is read as the nearest one to the
// anchor, before or after it, so the anchor must be refreshed within half a
// wrap period (a 48-bit counter at 1 GHz: 39 hours).
//
// Differences of two stamps from the same HCA are exact to the clock's rate
// (what RTTs use: R-Pingmesh's T5 - T2); the absolute host time of a stamp
// is as good as the anchor.
//
// Devices without completion timestamps (soft-RoCE, older HCAs) get
// software timestamps instead: the host clock read when the completion is
// polled, which adds the poll delay. ClockKind says which one a port uses so
// the metrics' `clock` label and docs can say so.
//
// Thread-safety: pure functions; an HcaClock is a value (copy it per
// thread, or guard it: Anchor() writes).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "probe/verbs_ops.h"

namespace fabric::rdma {

enum class ClockKind { kHardware, kSoftware };

// "hardware" / "software": the label value.
std::string_view ClockKindName(ClockKind kind);

// Hardware when the device reports both a timestamp mask and a clock rate.
ClockKind ChooseClock(const DeviceAttr& device);

// Cycles from `earlier` to `later` on a counter whose valid bits are `mask`
// (low bits), taking the shorter way round: negative when `later` is in fact
// before `earlier`. A mask of 0 is treated as a full 64-bit counter.
std::int64_t SignedCycleDelta(std::uint64_t earlier, std::uint64_t later,
                              std::uint64_t mask);

// Nanoseconds in `cycles` at `hz` (0 Hz gives 0). Exact to the nanosecond
// for any count a 64-bit counter can hold.
std::int64_t CyclesToNs(std::int64_t cycles, std::uint64_t hz);

// The clock rate measured from two (cycles, host ns) readings, or nullopt
// when they are too close together (< 1 ms) or go backwards. Used to check
// the nominal hca_core_clock, which firmware reports only to the kHz.
std::optional<std::uint64_t> MeasureHz(std::uint64_t cycles_a,
                                       std::int64_t host_ns_a,
                                       std::uint64_t cycles_b,
                                       std::int64_t host_ns_b,
                                       std::uint64_t mask);

class HcaClock {
 public:
  HcaClock() = default;
  // `hz` = hca_core_clock (kHz) * 1000; `mask` = completion_timestamp_mask.
  HcaClock(std::uint64_t hz, std::uint64_t mask) : hz_(hz), mask_(mask) {}

  // The counter read `cycles` at host time `host_ns`.
  void Anchor(std::uint64_t cycles, std::int64_t host_ns) {
    anchor_cycles_ = cycles;
    anchor_ns_ = host_ns;
    anchored_ = true;
  }
  bool anchored() const { return anchored_; }
  std::uint64_t hz() const { return hz_; }
  std::uint64_t mask() const { return mask_; }

  // The host time (CLOCK_MONOTONIC ns) at which the counter read `cycles`.
  // Requires anchored().
  std::int64_t ToHostNs(std::uint64_t cycles) const {
    return anchor_ns_ +
           CyclesToNs(SignedCycleDelta(anchor_cycles_, cycles, mask_), hz_);
  }

 private:
  std::uint64_t hz_ = 0;
  std::uint64_t mask_ = 0;
  std::uint64_t anchor_cycles_ = 0;
  std::int64_t anchor_ns_ = 0;
  bool anchored_ = false;
};

}  // namespace fabric::rdma
