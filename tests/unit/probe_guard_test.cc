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

// Issue 40: one sniffed probe replayed from the peer's address 20,000
// times must not spend that address's rate limit: the peer's fresh probes
// are still admitted, every replay refused as a replay.
TEST(ProbeGuardTest, ReplaysDoNotSpendThePeersRateLimit) {
  RequestGuard g(/*rate=*/100, /*burst=*/10);
  const std::string peer("\x0a\0\0\x01", 4);
  ASSERT_EQ(g.Admit(peer, 7, 1, 0.0), RequestGuard::Verdict::kAccept);
  int replays = 0;
  for (int i = 0; i < 20000; ++i) {
    replays += g.Admit(peer, 7, 1, i * 1e-6) == RequestGuard::Verdict::kReplay;
  }
  EXPECT_EQ(replays, 20000);
  // 20 ms later the bucket is full again (the replays took nothing): the
  // peer's next 10, its whole burst, get in.
  for (std::uint64_t seq = 2; seq <= 11; ++seq) {
    EXPECT_EQ(g.Admit(peer, 7, seq, 0.02), RequestGuard::Verdict::kAccept)
        << seq;
  }
  // The limit still holds for fresh requests beyond the burst.
  EXPECT_EQ(g.Admit(peer, 7, 12, 0.02), RequestGuard::Verdict::kRateLimited);
  // A refused request is not admitted later as fresh either.
  EXPECT_EQ(g.Admit(peer, 7, 12, 1.0), RequestGuard::Verdict::kReplay);
}

}  // namespace
}  // namespace fabric::probe
