// Counter widths, wrap and saturation as the simulator models them.
#include <gtest/gtest.h>

#include "simulator/counters.h"

namespace fabric::sim {
namespace {

TEST(SimCounters, WrappingAt32Bits) {
  EXPECT_EQ(AddWrapping(0xfffffffeu, 1, 32), 0xffffffffu);
  EXPECT_EQ(AddWrapping(0xfffffffeu, 2, 32), 0u);
  EXPECT_EQ(AddWrapping(0xfffffffeu, 5, 32), 3u);
  EXPECT_EQ(AddWrapping(~std::uint64_t{0}, 2, 64), 1u);
}

TEST(SimCounters, SaturatingStopsAtMax) {
  EXPECT_EQ(AddSaturating(65530, 3, 16), 65533u);
  EXPECT_EQ(AddSaturating(65530, 5, 16), 65535u);
  EXPECT_EQ(AddSaturating(65535, 1, 16), 65535u);
  EXPECT_EQ(AddSaturating(250, 1000, 8), 255u);
  EXPECT_EQ(AddSaturating(0, 100, 4), 15u);
  EXPECT_EQ(AddSaturating(~std::uint64_t{0} - 1, 7, 64), ~std::uint64_t{0});
}

TEST(SimCounters, PortCounterWidthsFollowPortCounters) {
  EXPECT_EQ(Spec(Ctr::kSymbolError).bits, 16);
  EXPECT_EQ(Spec(Ctr::kLinkErrorRecovery).bits, 8);
  EXPECT_EQ(Spec(Ctr::kLinkDowned).bits, 8);
  EXPECT_EQ(Spec(Ctr::kPortRcvErrors).bits, 16);
  EXPECT_EQ(Spec(Ctr::kPortXmitDiscards).bits, 16);
  EXPECT_EQ(Spec(Ctr::kLocalLinkIntegrityErrors).bits, 4);
  EXPECT_EQ(Spec(Ctr::kExcessiveBufferOverrunErrors).bits, 4);
  EXPECT_EQ(Spec(Ctr::kPortXmitData).bits, 64);

  PortCounters c;
  c.Add(Ctr::kSymbolError, 70000);
  c.Add(Ctr::kLinkDowned, 300);
  c.Add(Ctr::kLocalLinkIntegrityErrors, 16);
  c.Add(Ctr::kPortXmitData, 70000);
  EXPECT_EQ(c.Get(Ctr::kSymbolError), 65535u);
  EXPECT_EQ(c.Get(Ctr::kLinkDowned), 255u);
  EXPECT_EQ(c.Get(Ctr::kLocalLinkIntegrityErrors), 15u);
  EXPECT_EQ(c.Get(Ctr::kPortXmitData), 70000u);
  c.Add(Ctr::kSymbolError, 1);
  EXPECT_EQ(c.Get(Ctr::kSymbolError), 65535u);  // stays saturated
}

TEST(SimCounters, EveryCounterFileIsNamedOnce) {
  for (size_t i = 0; i < kCounterSpecs.size(); ++i) {
    for (size_t j = i + 1; j < kCounterSpecs.size(); ++j) {
      EXPECT_NE(kCounterSpecs[i].file, kCounterSpecs[j].file);
    }
  }
}

}  // namespace
}  // namespace fabric::sim
