// Completion-timestamp conversion (probe/hca_clock.h): cycle differences
// across the counter's wrap, cycles -> ns at real HCA rates, the measured
// rate, the anchor, and the hardware/software choice.
#include "probe/hca_clock.h"

#include <gtest/gtest.h>

namespace fabric::rdma {
namespace {

constexpr std::uint64_t k48 = 0xffffffffffffULL;

TEST(HcaClock, DeltaForwardAndBackward) {
  EXPECT_EQ(SignedCycleDelta(100, 350, k48), 250);
  EXPECT_EQ(SignedCycleDelta(350, 100, k48), -250);
  EXPECT_EQ(SignedCycleDelta(7, 7, k48), 0);
}

TEST(HcaClock, DeltaAcrossTheWrapOfA48BitCounter) {
  // 10 cycles before the wrap to 20 after it: 30 cycles later.
  EXPECT_EQ(SignedCycleDelta(k48 - 9, 20, k48), 30);
  EXPECT_EQ(SignedCycleDelta(20, k48 - 9, k48), -30);
  // Bits above the mask (a provider leaving garbage there) do not count.
  EXPECT_EQ(SignedCycleDelta(0xabcd000000000005ULL, 0x1234000000000009ULL, k48),
            4);
}

TEST(HcaClock, DeltaOnA64BitCounterAndZeroMask) {
  const std::uint64_t all = ~std::uint64_t{0};
  EXPECT_EQ(SignedCycleDelta(all - 4, 5, all), 10);
  EXPECT_EQ(SignedCycleDelta(5, all - 4, all), -10);
  EXPECT_EQ(SignedCycleDelta(all - 4, 5, 0), 10);
}

TEST(HcaClock, HalfPeriodIsTheTurningPoint) {
  const std::uint64_t m = 0xffff;  // 16-bit counter, period 65536
  EXPECT_EQ(SignedCycleDelta(0, 32767, m), 32767);
  EXPECT_EQ(SignedCycleDelta(0, 32768, m), -32768);
}

TEST(HcaClock, CyclesToNsAtRealRates) {
  // ConnectX-4/5 report 156250 kHz: 156250 cycles are one millisecond.
  EXPECT_EQ(CyclesToNs(156250, 156250000), 1000000);
  EXPECT_EQ(CyclesToNs(-156250, 156250000), -1000000);
  // One cycle is 6.4 ns: rounded to the nearest nanosecond.
  EXPECT_EQ(CyclesToNs(1, 156250000), 6);
  EXPECT_EQ(CyclesToNs(5, 156250000), 32);
  // 1 GHz: identity.
  EXPECT_EQ(CyclesToNs(123456789, 1000000000), 123456789);
  // A day of cycles at 1 GHz does not overflow the intermediate.
  EXPECT_EQ(CyclesToNs(86400LL * 1000000000, 1000000000), 86400LL * 1000000000);
  EXPECT_EQ(CyclesToNs(1000, 0), 0);
}

TEST(HcaClock, MeasureHz) {
  // 1.5625e8 cycles over 1 s of host time.
  auto hz = MeasureHz(1000, 0, 1000 + 156250000, 1000000000, k48);
  ASSERT_TRUE(hz);
  EXPECT_EQ(*hz, 156250000u);
  // Across a wrap.
  hz = MeasureHz(k48 - 499, 0, 500, 1000000, k48);  // 1000 cycles in 1 ms
  ASSERT_TRUE(hz);
  EXPECT_EQ(*hz, 1000000u);
  EXPECT_FALSE(MeasureHz(0, 0, 100, 999999, k48));     // under 1 ms apart
  EXPECT_FALSE(MeasureHz(500, 0, 100, 5000000, k48));  // went backwards
}

TEST(HcaClock, ToHostNsAroundTheAnchor) {
  HcaClock clock(1000000000, k48);  // 1 GHz
  EXPECT_FALSE(clock.anchored());
  clock.Anchor(k48 - 999, 5000000);  // 1000 cycles before the wrap
  ASSERT_TRUE(clock.anchored());
  EXPECT_EQ(clock.ToHostNs(k48 - 999), 5000000);
  EXPECT_EQ(clock.ToHostNs(1000), 5000000 + 2000);        // after the wrap
  EXPECT_EQ(clock.ToHostNs(k48 - 1999), 5000000 - 1000);  // before the anchor
  // Differences of stamps are exact whatever the anchor.
  EXPECT_EQ(clock.ToHostNs(1500) - clock.ToHostNs(k48 - 499), 2000);
}

TEST(HcaClock, ChooseClockAndNames) {
  DeviceAttr hw;
  hw.completion_timestamp_mask = k48;
  hw.hca_core_clock_khz = 156250;
  EXPECT_EQ(ChooseClock(hw), ClockKind::kHardware);
  DeviceAttr rxe;  // soft-RoCE reports neither
  EXPECT_EQ(ChooseClock(rxe), ClockKind::kSoftware);
  DeviceAttr half = hw;
  half.hca_core_clock_khz = 0;  // a mask without a rate cannot convert
  EXPECT_EQ(ChooseClock(half), ClockKind::kSoftware);
  EXPECT_EQ(ClockKindName(ClockKind::kHardware), "hardware");
  EXPECT_EQ(ClockKindName(ClockKind::kSoftware), "software");
}

}  // namespace
}  // namespace fabric::rdma
