// locate/score.h: the verdict on a pair and the 007 vote over hand-built
// paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "locate/score.h"

namespace fabric::locate {
namespace {

Link L(std::uint64_t a, int pa, std::uint64_t b, int pb) {
  return MakeLink({a, pa}, {b, pb});
}

// A two-level fabric by hand: hosts 1..6 on leaves 10, 11, 12; spines 20
// and 21. Host h hangs off its leaf's port h; leaf l reaches spine s by
// port 20 + (s - 20) and the spine by port l - 9.
Link Host(int h) { return L(h, 1, 10 + (h - 1) / 2, h); }
Link Up(int leaf, int spine) {
  return L(leaf, 20 + spine - 20, spine, leaf - 9);
}

PairMeasure M(double sent, double lost) {
  PairMeasure m;
  m.sent = sent;
  m.lost = lost;
  return m;
}

PathObservation Path(Verdict v, std::vector<Link> links) {
  return {v, std::move(links)};
}

TEST(LocateClassify, LossAboveTheRatioIsBad) {
  const Classification c = Classify(M(100, 5), {});
  EXPECT_EQ(c.verdict, Verdict::kBad);
  EXPECT_EQ(c.reason, "loss 0.05 > 0.01");
  EXPECT_EQ(Classify(M(100, 1), {}).verdict, Verdict::kGood);
}

TEST(LocateClassify, RttExcessOverBaselineOrFloor) {
  Thresholds t;  // ratio 1.0, floor 50 us
  // 10 us baseline: the floor (50 us) is the limit.
  EXPECT_EQ(Classify({100, 0, 40e-6, 10e-6}, t).verdict, Verdict::kGood);
  const Classification bad = Classify({100, 0, 70e-6, 10e-6}, t);
  EXPECT_EQ(bad.verdict, Verdict::kBad);
  EXPECT_EQ(bad.reason, "rtt +60us > 50us");
  // 200 us baseline: the ratio (200 us more) is the limit.
  EXPECT_EQ(Classify({100, 0, 350e-6, 200e-6}, t).verdict, Verdict::kGood);
  EXPECT_EQ(Classify({100, 0, 450e-6, 200e-6}, t).verdict, Verdict::kBad);
  // No baseline: the RTT alone says nothing.
  EXPECT_EQ(Classify({100, 0, 1.0, std::nullopt}, t).verdict, Verdict::kGood);
}

TEST(LocateClassify, TooFewProbesOrGarbageIsUnknown) {
  EXPECT_EQ(Classify(M(3, 3), {}).verdict, Verdict::kUnknown);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Classify(M(nan, 0), {}).verdict, Verdict::kUnknown);
  EXPECT_EQ(Classify(M(100, -1), {}).verdict, Verdict::kUnknown);
  EXPECT_EQ(Classify(M(inf, 0), {}).verdict, Verdict::kUnknown);
  // More lost than sent (counters from different scrapes): loss is 1.
  EXPECT_EQ(Classify(M(10, 20), {}).reason, "loss 1 > 0.01");
  // A NaN RTT is ignored, not a verdict.
  EXPECT_EQ(Classify({100, 0, nan, 1e-6}, {}).verdict, Verdict::kGood);
}

TEST(LocateScore, OneLinkSharedByThreeBadPairsRanksFirst) {
  // Up(10, 20) is bad: the three bad pairs from hosts on leaf 10 through
  // spine 20 share it; each of their other links carries one bad pair.
  const std::vector<PathObservation> paths = {
      Path(Verdict::kBad, {Host(1), Up(10, 20), Up(11, 20), Host(3)}),
      Path(Verdict::kBad, {Host(2), Up(10, 20), Up(12, 20), Host(5)}),
      Path(Verdict::kBad, {Host(1), Up(10, 20), Up(12, 20), Host(6)}),
      Path(Verdict::kGood, {Host(3), Up(11, 21), Up(12, 21), Host(5)}),
  };
  const Scores s = ScoreLinks(paths);
  ASSERT_FALSE(s.ranked.empty());
  EXPECT_EQ(s.ranked[0].link, Up(10, 20));
  EXPECT_DOUBLE_EQ(s.ranked[0].votes, 3 * 0.25);
  EXPECT_EQ(s.ranked[0].bad_pairs, 3);
  EXPECT_EQ(s.ranked[0].good_pairs, 0);
  EXPECT_EQ(s.bad_paths, 3);
  EXPECT_EQ(s.good_paths, 1);
  // Next: the two links with two bad pairs each (Host(1), Up(12, 20)).
  EXPECT_DOUBLE_EQ(s.ranked[1].votes, 0.5);
  EXPECT_DOUBLE_EQ(s.ranked[2].votes, 0.5);
}

TEST(LocateScore, ALinkUnderGoodPairsOnlyIsCleared) {
  const std::vector<PathObservation> paths = {
      Path(Verdict::kBad, {Host(1), Up(10, 20), Up(11, 20), Host(3)}),
      Path(Verdict::kGood, {Host(2), Up(10, 21), Up(11, 21), Host(4)}),
      Path(Verdict::kGood, {Host(2), Up(10, 21), Up(12, 21), Host(5)}),
  };
  ScoreOptions o;
  o.clear_min_good = 2;
  const Scores s = ScoreLinks(paths, o);
  EXPECT_EQ(s.ranked.size(), 4u);  // the bad path's links only
  for (const LinkScore& l : s.ranked) EXPECT_NE(l.link, Up(10, 21));
  // Two good pairs and no bad one: Host(2) and Up(10, 21). The links with
  // one good pair are not enough to clear at clear_min_good 2.
  ASSERT_EQ(s.cleared.size(), 2u);
  EXPECT_EQ(s.cleared[0].link, Host(2));
  EXPECT_EQ(s.cleared[1].link, Up(10, 21));
  EXPECT_EQ(s.cleared[1].good_pairs, 2);
}

TEST(LocateScore, TiesBreakOnGoodPairsThenTheLink) {
  // Both links of the one bad path get 0.5; Up(10, 20) also carries a good
  // pair, so Host(1) ranks first.
  const std::vector<PathObservation> paths = {
      Path(Verdict::kBad, {Up(10, 20), Host(1)}),
      Path(Verdict::kGood, {Up(10, 20), Host(2)}),
  };
  const Scores s = ScoreLinks(paths);
  ASSERT_EQ(s.ranked.size(), 2u);
  EXPECT_EQ(s.ranked[0].link, Host(1));
  EXPECT_EQ(s.ranked[1].link, Up(10, 20));
  // Equal in votes and good pairs: ordered by the link, the same whatever
  // order the paths came in.
  const Scores t = ScoreLinks({Path(Verdict::kBad, {Host(4), Host(3)})});
  const Scores u = ScoreLinks({Path(Verdict::kBad, {Host(3), Host(4)})});
  ASSERT_EQ(t.ranked.size(), 2u);
  EXPECT_EQ(t.ranked[0].link, Host(3));
  EXPECT_EQ(u.ranked[0].link, Host(3));
}

TEST(LocateScore, BothDirectionsNameOneLink) {
  EXPECT_EQ(MakeLink({7, 3}, {5, 1}), MakeLink({5, 1}, {7, 3}));
  // A link repeated within a path counts once, with the path's distinct
  // links as the denominator.
  const Scores s =
      ScoreLinks({Path(Verdict::kBad, {Host(1), Host(1), Up(10, 20)})});
  ASSERT_EQ(s.ranked.size(), 2u);
  EXPECT_DOUBLE_EQ(s.ranked[0].votes, 0.5);
}

TEST(LocateScore, EmptyInputAndUnknownPaths) {
  const Scores none = ScoreLinks({});
  EXPECT_TRUE(none.ranked.empty());
  EXPECT_TRUE(none.cleared.empty());
  EXPECT_EQ(none.bad_paths, 0);
  const Scores s =
      ScoreLinks({Path(Verdict::kUnknown, {Host(1)}), Path(Verdict::kBad, {})});
  EXPECT_TRUE(s.ranked.empty());
  EXPECT_EQ(s.bad_paths, 0);  // a path with no links votes for nothing
}

}  // namespace
}  // namespace fabric::locate
