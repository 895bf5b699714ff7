// fabricmon-bench's progress: the line printed as each size completes (its
// place in the run, iterations, time, elapsed and ETA), the estimate of the
// time left from the last two sizes, durations as a person reads them, and
// the sizes a first --local run takes (about a minute at its link rate).
#include <gtest/gtest.h>

#include "benchtool/patterns.h"
#include "benchtool/progress.h"

namespace fabric::bench {
namespace {

TEST(BenchProgress, LineNamesSizePlaceIterationsElapsedAndEta) {
  SizeProgress p;
  p.index = 2;
  p.count = 24;
  p.size_bytes = 64 << 10;
  p.done = true;
  p.iterations_done = 20;
  p.size_seconds = 1.2;
  p.elapsed_seconds = 4.5;
  p.remaining_seconds = 38;
  EXPECT_EQ(ProgressLine(p),
            "[3/24] 64 KiB: 20 iterations in 1.2s; elapsed 4.5s, ETA 38s");
  // No estimate yet (fewer than two sizes done).
  p.remaining_seconds = -1;
  EXPECT_EQ(ProgressLine(p),
            "[3/24] 64 KiB: 20 iterations in 1.2s; elapsed 4.5s, ETA ?");
  // The last size ends the run: no ETA.
  p.index = 23;
  p.size_bytes = 1536 << 10;
  p.iterations_done = 1;
  p.elapsed_seconds = 185;
  EXPECT_EQ(ProgressLine(p),
            "[24/24] 1.5 MiB: 1 iteration in 1.2s; elapsed 3m05s, done");
}

TEST(BenchProgress, DurationsReadAsAPersonWouldWriteThem) {
  EXPECT_EQ(FormatDuration(0.34), "340ms");
  EXPECT_EQ(FormatDuration(4.54), "4.5s");
  EXPECT_EQ(FormatDuration(42.4), "42s");
  EXPECT_EQ(FormatDuration(185), "3m05s");
  EXPECT_EQ(FormatDuration(3720), "1h02m");
  EXPECT_EQ(FormatDuration(7180), "2h00m");  // rounded, not "1h59m"
  EXPECT_EQ(FormatDuration(-1), "?");
}

TEST(BenchProgress, EstimateFollowsTheLastTwoSizes) {
  // Nothing to go on with fewer than two sizes done.
  EXPECT_EQ(EstimateRemaining({}, {1024}), -1);
  EXPECT_EQ(EstimateRemaining({{1 << 20, 1.0}}, {2 << 20}), -1);
  // 1 MiB in 1 s, 2 MiB in 2 s: 1 s per MiB, so 4 MiB and 8 MiB take 4 and
  // 8 s.
  std::vector<SizeTime> done = {{8, 0.4}, {1 << 20, 1.0}, {2 << 20, 2.0}};
  EXPECT_DOUBLE_EQ(EstimateRemaining(done, {4 << 20, 8 << 20}), 12.0);
  EXPECT_DOUBLE_EQ(EstimateRemaining(done, {}), 0.0);
  // The larger one faster (noise): each remaining size takes what the last
  // one took, never less.
  done = {{1 << 20, 2.0}, {2 << 20, 1.9}, {4 << 20, 4.0}, {8 << 20, 3.9}};
  EXPECT_DOUBLE_EQ(EstimateRemaining(done, {16 << 20, 32 << 20}), 7.8);
  // Small sizes: fixed cost and noise (what a real run's first sizes took);
  // their slope would predict hours for 32 MiB. No estimate until a size
  // takes twice the fastest.
  done = {{8, 0.021}, {16, 0.033}};
  EXPECT_EQ(EstimateRemaining(done, {32, 64, 32 << 20}), -1);
  done = {{64 << 10, 0.027}, {128 << 10, 0.050}};
  EXPECT_EQ(EstimateRemaining(done, {32 << 20}), -1);
  // One slow small size (a scheduler delay) is not enough: this gave
  // "ETA 19m49s" for a 48 s run.
  done = {{8, 0.015}, {1 << 10, 0.022}, {2 << 10, 0.031}};
  EXPECT_EQ(EstimateRemaining(done, {64 << 20}), -1);
  done = {{8, 0.015}, {64 << 10, 0.035}, {128 << 10, 0.063}};
  EXPECT_GT(EstimateRemaining(done, {32 << 20}), 0);
}

TEST(BenchProgress, FirstLocalRunTakesAboutAMinute) {
  // Ring all-reduce on 4 agents over --local's default 1 Gbit/s veths, 5
  // warm-up + 20 iterations: the top size's rounds fit in
  // kLocalTopSizeSeconds, the next power of two's would not.
  const double rate = 1e9 / 8;
  const double factor = BusBwFactor(Pattern::kAllreduceRing, 4, 1);
  auto sizes = LocalSizes(rate, factor, 25);
  ASSERT_FALSE(sizes.empty());
  EXPECT_EQ(sizes.front(), 8u);
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    EXPECT_EQ(sizes[i], 2 * sizes[i - 1]);
  }
  auto seconds = [&](double size) { return 25 * size * factor / rate; };
  EXPECT_LE(seconds(sizes.back()), kLocalTopSizeSeconds);
  EXPECT_GT(seconds(2.0 * sizes.back()), kLocalTopSizeSeconds);
  // All sizes together: about twice the top one's, under a minute of link
  // time (setup and per-operation latency make up the rest).
  double total = 0;
  for (auto s : sizes) total += seconds(s);
  EXPECT_GT(total, kLocalTopSizeSeconds);
  EXPECT_LE(total, 2 * kLocalTopSizeSeconds);
  EXPECT_LT(total, 60);

  // A slower link or more iterations: sizes 10 times smaller (rounded down
  // to a power of two), about the same time.
  auto top = sizes.back();
  EXPECT_LE(LocalSizes(rate / 10, factor, 25).back() * 10, top * 2);
  EXPECT_GE(LocalSizes(rate / 10, factor, 25).back() * 10, top / 2);
  EXPECT_EQ(LocalSizes(rate, factor, 250).back(),
            LocalSizes(rate / 10, factor, 25).back());
  // Bounded: 64 KiB at least, the default --sizes top (1 GiB) at most.
  EXPECT_EQ(LocalSizes(1000, factor, 25).back(), 64u << 10);
  EXPECT_EQ(LocalSizes(1e12, factor, 25).back(), 1u << 30);
  // Unknown rate (loopback, unshaped): 64 MiB.
  EXPECT_EQ(LocalSizes(0, factor, 25).back(), 64u << 20);
}

}  // namespace
}  // namespace fabric::bench
