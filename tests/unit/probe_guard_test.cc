// The responder's replay window and per-source rate limit.
#include <gtest/gtest.h>

#include "probe/guard.h"

namespace fabric::probe {
namespace {

TEST(ProbeGuardTest, ReplayWindowAcceptsEachSequenceOnce) {
  ReplayWindow w;
  EXPECT_TRUE(w.Accept("a", 1, 10));
  EXPECT_FALSE(w.Accept("a", 1, 10));
  EXPECT_TRUE(w.Accept("a", 1, 8));  // late but inside the window
  EXPECT_FALSE(w.Accept("a", 1, 8));
  EXPECT_TRUE(w.Accept("a", 1, 9));
  EXPECT_TRUE(w.Accept("a", 2, 10));  // another session
  EXPECT_TRUE(w.Accept("b", 1, 10));  // another source
  EXPECT_FALSE(w.Accept("a", 1, 0));  // sequence numbers start at 1
}

// Sources are opaque bytes (a UDP source is its address's 4 or 16 bytes):
// NULs and '/' in them, and sessions that differ in one byte only, keep
// windows of their own.
TEST(ProbeGuardTest, ReplayWindowKeysBinarySourcesAndWholeSessions) {
  ReplayWindow w;
  const std::string a("\x7f\0\0\x01", 4), b("\x7f\0\0\x02", 4);
  const std::string slash("1/2", 3), other("1", 1);
  EXPECT_TRUE(w.Accept(a, 1, 5));
  EXPECT_TRUE(w.Accept(b, 1, 5));
  EXPECT_TRUE(w.Accept(a, 1ull << 56, 5));
  EXPECT_TRUE(w.Accept(a, (1ull << 56) | 1, 5));
  EXPECT_TRUE(w.Accept(slash, 3, 5));
  EXPECT_TRUE(w.Accept(other, 2, 5));
  EXPECT_FALSE(w.Accept(a, 1, 5));
  EXPECT_FALSE(w.Accept(b, 1, 5));
  EXPECT_FALSE(w.Accept(a, (1ull << 56) | 1, 5));
  EXPECT_FALSE(w.Accept(slash, 3, 5));
  EXPECT_EQ(w.sessions(), 6u);
}

TEST(ProbeGuardTest, ReplayWindowSlides) {
  ReplayWindow w;
  for (std::uint64_t s = 1; s <= 3000; ++s) ASSERT_TRUE(w.Accept("a", 1, s));
  EXPECT_FALSE(w.Accept("a", 1, 3000 - ReplayWindow::kWindow));  // too old
  EXPECT_FALSE(w.Accept("a", 1, 2990));                          // seen
  // A jump of more than 64 (a word) and more than the window.
  EXPECT_TRUE(w.Accept("a", 1, 3100));
  EXPECT_FALSE(w.Accept("a", 1, 3000));  // still remembered after the shift
  EXPECT_TRUE(w.Accept("a", 1, 3050));   // never seen, inside the window
  EXPECT_TRUE(w.Accept("a", 1, 10000));
  EXPECT_FALSE(w.Accept("a", 1, 3100));  // now outside
  EXPECT_TRUE(w.Accept("a", 1, 9999));
}

TEST(ProbeGuardTest, ReplayWindowIsBounded) {
  ReplayWindow w(/*max_sessions=*/2);
  EXPECT_TRUE(w.Accept("a", 1, 1));
  EXPECT_TRUE(w.Accept("b", 1, 1));
  EXPECT_TRUE(w.Accept("c", 1, 1));
  EXPECT_EQ(w.sessions(), 2u);
}

TEST(ProbeGuardTest, RateLimitPerSource) {
  RateLimiter r(/*rate=*/10, /*burst=*/2);
  EXPECT_TRUE(r.Allow("a", 0.0));
  EXPECT_TRUE(r.Allow("a", 0.0));
  EXPECT_FALSE(r.Allow("a", 0.0));  // burst spent
  EXPECT_TRUE(r.Allow("b", 0.0));   // another source has its own bucket
  EXPECT_TRUE(r.Allow("a", 0.1));   // one token refilled after 100 ms
  EXPECT_FALSE(r.Allow("a", 0.1));
  EXPECT_TRUE(r.Allow("a", 10.0));
  EXPECT_TRUE(r.Allow("a", 10.0));
  EXPECT_FALSE(r.Allow("a", 10.0));  // refill capped at the burst
}

}  // namespace
}  // namespace fabric::probe
