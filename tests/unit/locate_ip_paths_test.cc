// fabricmon-locate on IP-routed (RoCE) pairs (issue 29 item 4): pairs with
// no LID but a traced path (fabric_probe_path_info) are placed on the
// IP-level links of their path and of the peer's path back, voted like IB
// cables without any MAD, and named by address in the table and the JSON;
// a path that changed in the window, or none, leaves the pair unplaced.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "locate/pairs.h"
#include "locate/report.h"
#include "locate/run.h"
#include "locate/score.h"

namespace fabric::locate {
namespace {

using Labels = std::map<std::string, std::string>;

PromSample Path(const std::string& instance, const std::string& peer,
                const std::string& src, const std::string& dst,
                const std::string& hops) {
  return {{{"__name__", "fabric_probe_path_info"},
           {"instance", instance},
           {"peer", peer},
           {"src", src},
           {"dst", dst},
           {"path", hops},
           {"hops", "3"}},
          1};
}

PromSample Sent(const std::string& instance, const std::string& peer,
                double v) {
  return {{{"instance", instance}, {"peer", peer}}, v};
}

TEST(LocateIpPaths, IpLinksAreConsecutiveAddressesDirected) {
  const auto links = IpLinks({"10.1.0.1", "10.1.0.254", "10.101.1.2"});
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links[0].a.ip, "10.1.0.1");
  EXPECT_EQ(links[0].b.ip, "10.1.0.254");
  EXPECT_EQ(links[1].a.ip, "10.1.0.254");
  EXPECT_EQ(links[1].b.ip, "10.101.1.2");
  // Directed: the way back is another link.
  EXPECT_NE(IpLinks({"x", "y"})[0], IpLinks({"y", "x"})[0]);
  EXPECT_TRUE(IpLinks({"x"}).empty());
}

TEST(LocateIpPaths, JoinsEachPairsPathAndThePeersPathBack) {
  PairAnswers a;
  a.sent = {
      Sent("h1", "10.2.0.1:10916", 100), Sent("h2", "10.1.0.1:10916", 100),
      Sent("h1", "10.3.0.1:10916", 100), Sent("h1", "10.4.0.1:10916", 100)};
  a.lost = {Sent("h1", "10.2.0.1:10916", 30)};
  a.path = {
      Path("h1", "10.2.0.1:10916", "10.1.0.1", "10.2.0.1", "g1,s1,e2"),
      Path("h2", "10.1.0.1:10916", "10.2.0.1", "10.1.0.1", "g2,s2,e1"),
      // Two paths in the window: not placed.
      Path("h1", "10.3.0.1:10916", "10.1.0.1", "10.3.0.1", "g1,s1,e3"),
      Path("h1", "10.3.0.1:10916", "10.1.0.1", "10.3.0.1", "g1,s2,e3"),
  };
  const auto pairs = JoinPairs(a, {});
  ASSERT_EQ(pairs.size(), 4u);
  // h1 -> 10.2.0.1: its 4 links and h2's 4 links back.
  EXPECT_EQ(pairs[0].peer, "10.2.0.1:10916");
  EXPECT_FALSE(pairs[0].mapped);
  EXPECT_EQ(pairs[0].verdict.verdict, Verdict::kBad);
  ASSERT_EQ(pairs[0].ip_links.size(), 8u);
  EXPECT_EQ(pairs[0].ip_links[0], IpLinks({"10.1.0.1", "g1"})[0]);
  EXPECT_EQ(pairs[0].ip_links[3], IpLinks({"e2", "10.2.0.1"})[0]);
  EXPECT_EQ(pairs[0].ip_links[4], IpLinks({"10.2.0.1", "g2"})[0]);
  EXPECT_TRUE(pairs[0].unmapped_reason.empty());
  EXPECT_EQ(pairs[1].unmapped_reason,
            "its traced path changed within the window");
  EXPECT_TRUE(pairs[1].ip_links.empty());
  // No path info and no pair info: the IB reason, unchanged.
  EXPECT_EQ(pairs[2].unmapped_reason, "no fabric_probe_pair_info");
  EXPECT_EQ(pairs[3].prober, "instance=h2");
  EXPECT_EQ(pairs[3].ip_links.size(), 8u);
}

// Through a lossy link a trace can stop early (no answer at a TTL reads as
// the peer's silence): a path that is a strict prefix of another is that
// truncated trace, not a change of path; the pair is placed on the whole one.
TEST(LocateIpPaths, ATruncatedTraceIsNotAChangeOfPath) {
  PairAnswers a;
  a.sent = {Sent("h1", "10.2.0.1:10916", 100),
            Sent("h1", "10.3.0.1:10916", 100)};
  a.lost = {Sent("h1", "10.2.0.1:10916", 30)};
  a.path = {
      Path("h1", "10.2.0.1:10916", "10.1.0.1", "10.2.0.1", "g1,s1,e2"),
      Path("h1", "10.2.0.1:10916", "10.1.0.1", "10.2.0.1", "g1,s1"),
      Path("h1", "10.2.0.1:10916", "10.1.0.1", "10.2.0.1", "g1"),
      // Not a prefix (another spine): still a change of path.
      Path("h1", "10.3.0.1:10916", "10.1.0.1", "10.3.0.1", "g1,s1,e3"),
      Path("h1", "10.3.0.1:10916", "10.1.0.1", "10.3.0.1", "g1,s2"),
  };
  const auto pairs = JoinPairs(a, {});
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_TRUE(pairs[0].unmapped_reason.empty()) << pairs[0].unmapped_reason;
  ASSERT_EQ(pairs[0].ip_links.size(), 4u);
  EXPECT_EQ(pairs[0].ip_links[3], IpLinks({"e2", "10.2.0.1"})[0]);
  EXPECT_EQ(pairs[1].unmapped_reason,
            "its traced path changed within the window");
}

// Bad pairs all crossing g1 -> s1, good ones elsewhere: g1 -> s1 first,
// no MAD (no transport at all), named by address.
TEST(LocateIpPaths, VotesIpLinksWithoutTheFabricAndNamesThemByAddress) {
  std::vector<ProbePair> pairs;
  auto pair = [&](const std::string& peer, std::vector<std::string> path,
                  Verdict v) {
    ProbePair p;
    p.prober = "instance=h1";
    p.peer = peer;
    p.unmapped_reason = "";
    p.ip_links = IpLinks(path);
    p.verdict.verdict = v;
    p.verdict.reason = v == Verdict::kBad ? "loss 0.25 > 0.01" : "";
    pairs.push_back(p);
  };
  pair("a", {"h1", "g1", "s1", "e2", "a"}, Verdict::kBad);
  pair("b", {"h1", "g1", "s1", "e3", "b"}, Verdict::kBad);
  pair("c", {"h9", "g1", "s1", "e3", "c"}, Verdict::kBad);
  pair("d", {"h1", "g1", "s2", "e2", "d"}, Verdict::kGood);
  ProbePair ib;  // a bad pair with neither LIDs nor a path: listed
  ib.prober = "instance=h1";
  ib.peer = "x";
  ib.unmapped_reason = "no fabric_probe_pair_info";
  ib.verdict.verdict = Verdict::kBad;
  pairs.push_back(ib);
  EXPECT_FALSE(NeedsFabric(pairs));
  Report report;
  mad::Topology topo;
  FabricCost cost;
  LocateLinks(nullptr, LocateOptions{}, pairs, &report, &topo, &cost);
  EXPECT_EQ(report.bad, 4);
  EXPECT_EQ(report.bad_traced, 3);
  EXPECT_EQ(report.good_traced, 1);
  ASSERT_FALSE(report.ranked.empty());
  EXPECT_EQ(report.ranked[0].score.link, IpLinks({"g1", "s1"})[0]);
  EXPECT_EQ(report.ranked[0].score.bad_pairs, 3);
  ASSERT_EQ(report.unplaced.size(), 1u);
  EXPECT_EQ(report.unplaced[0].peer, "x");
  const std::string table = FormatTable(report);
  EXPECT_NE(table.find("g1 -> s1"), std::string::npos) << table;
  const auto j = nlohmann::json::parse(FormatJson(report));
  EXPECT_EQ(j["links"][0]["a"]["address"], "g1");
  EXPECT_EQ(j["links"][0]["b"]["address"], "s1");
  EXPECT_FALSE(j["links"][0]["a"].contains("guid"));
}

}  // namespace
}  // namespace fabric::locate
