// WindowMax (probe/window_max.h): the largest value of the last minute, in
// 10 s slots, on a clock the test moves.
#include <gtest/gtest.h>

#include "probe/window_max.h"

namespace fabric::probe {
namespace {

using namespace std::chrono_literals;
using TimePoint = std::chrono::steady_clock::time_point;

// A slot boundary, far from the clock's epoch.
const TimePoint kStart = TimePoint(1'000'000s);

TEST(WindowMaxTest, NothingObservedIsNone) {
  WindowMax m;
  EXPECT_FALSE(m.Get(kStart).has_value());
}

TEST(WindowMaxTest, KeepsTheLargestOfTheLastMinute) {
  WindowMax m;
  m.Observe(3e-6, kStart);
  m.Observe(9e-6, kStart + 5s);
  m.Observe(2e-6, kStart + 12s);
  EXPECT_EQ(m.Get(kStart + 12s), 9e-6);
  // The first slot is still within 50-60 s ...
  EXPECT_EQ(m.Get(kStart + 59s), 9e-6);
  // ... and leaves at 60 s; the later, smaller value stays.
  EXPECT_EQ(m.Get(kStart + 60s), 2e-6);
  EXPECT_FALSE(m.Get(kStart + 70s).has_value());
}

TEST(WindowMaxTest, AReusedSlotForgetsItsOldMaximum) {
  WindowMax m;
  m.Observe(1.0, kStart);
  // Six slots later the same entry holds a new slot.
  m.Observe(1e-6, kStart + 60s);
  EXPECT_EQ(m.Get(kStart + 60s), 1e-6);
}

TEST(WindowMaxTest, AClockBehindTheSlotsSeesNoFutureValues) {
  WindowMax m;
  m.Observe(5.0, kStart + 30s);
  EXPECT_FALSE(m.Get(kStart).has_value());
}

}  // namespace
}  // namespace fabric::probe
