// locate/prometheus.h, pairs.h, counters.h: URLs, query answers (hostile
// ones too) and the join of a window's answers into judged pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "locate/counters.h"
#include "locate/pairs.h"
#include "locate/prometheus.h"

namespace fabric::locate {
namespace {

TEST(LocateUrl, ParsesSchemesHostsPortsAndPrefixes) {
  std::string error;
  auto u = ParseUrl("https://[::1]:9443/prom/", &error);
  ASSERT_TRUE(u) << error;
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 9443);
  EXPECT_EQ(u->prefix, "/prom");
  u = ParseUrl("http://vm.example", &error);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->prefix, "");
  for (const char* bad : {"ftp://x", "http://", "http://h:0", "http://h:x",
                          "http://u:p@h", "http://[::1", "http://h/?q=1"}) {
    EXPECT_FALSE(ParseUrl(bad, &error)) << bad;
  }
}

TEST(LocateAnswer, ParsesAVectorAndRefusesAnythingElse) {
  std::string error;
  const auto v = ParseVector(
      R"({"status":"success","data":{"resultType":"vector","result":[
         {"metric":{"peer":"b","instance":"a"},"value":[1.5,"3"]},
         {"metric":{},"value":[1.5,"NaN"]}]}})",
      &error);
  ASSERT_TRUE(v) << error;
  ASSERT_EQ(v->size(), 2u);
  EXPECT_EQ((*v)[0].labels.at("peer"), "b");
  EXPECT_EQ((*v)[0].value, 3);
  EXPECT_TRUE(std::isnan((*v)[1].value));
  for (
      const char* bad :
      {"", "garbage", "[]", R"({"status":"error","error":"bad"})",
       R"({"status":"success"})",
       R"({"status":"success","data":{"resultType":"matrix","result":[]}})",
       R"({"status":"success","data":{"resultType":"vector","result":[1]}})",
       R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"2"]}]}})",
       R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,2]}]}})",
       R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"x"]}]}})",
       R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}})"}) {
    EXPECT_FALSE(ParseVector(bad, &error)) << bad;
  }
  // Random bytes and truncations never crash.
  const std::string good =
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1,"2"]}]}})";
  std::mt19937 rng(29);
  for (int i = 0; i < 2000; ++i) {
    std::string s = good.substr(0, rng() % (good.size() + 1));
    if (i % 2 && !s.empty()) s[rng() % s.size()] = static_cast<char>(rng());
    ParseVector(s, &error);
  }
}

// Issue 40 item 6: an answer is read as a stream and stops at the bound.
TEST(LocateAnswer, StopsAtMaxSeriesAndKeepsKeysItDoesNotRead) {
  std::string result;
  for (int i = 0; i < 10; ++i) {
    result += std::string(i ? "," : "") + R"({"metric":{"peer":"p)" +
              std::to_string(i) +
              R"("},"value":[1,"1"],"extra":{"x":[1,{"y":null}]}})";
  }
  const std::string body =
      R"({"warnings":["w"],"data":{"result":[)" + result +
      R"(],"resultType":"vector","stats":{"a":1}},"status":"success"})";
  std::string error;
  auto v = ParseVector(body, &error, 10);
  ASSERT_TRUE(v) << error;
  EXPECT_EQ(v->size(), 10u);
  EXPECT_EQ((*v)[9].labels.at("peer"), "p9");
  EXPECT_FALSE(ParseVector(body, &error, 9));
  EXPECT_NE(error.find("more than 9 series in one answer"), std::string::npos)
      << error;
}

PromSample S(std::map<std::string, std::string> labels, double value) {
  return {std::move(labels), value};
}

TEST(LocatePairs, JoinsLossRttAndPortsAndListsTheUnmapped) {
  PairAnswers a;
  const std::map<std::string, std::string> ab = {{"instance", "a"},
                                                 {"peer", "b"}};
  const std::map<std::string, std::string> ac = {{"instance", "a"},
                                                 {"peer", "c"}};
  const std::map<std::string, std::string> ad = {{"instance", "a"},
                                                 {"peer", "d"}};
  a.sent = {S(ab, 100), S(ac, 100), S(ad, 100)};
  a.lost = {S(ab, 20)};
  a.rtt = {S(ab, 10e-6), S(ac, 500e-6), S(ad, 12e-6)};
  auto info = [](std::map<std::string, std::string> l, std::string local,
                 std::string remote) {
    l["__name__"] = "fabric_probe_pair_info";
    l["local_lid"] = local;
    l["remote_lid"] = remote;
    return S(l, 1);
  };
  a.info = {info(ab, "1", "8"), info(ac, "1", ""), info(ad, "1", "70000")};
  const std::vector<ProbePair> p = JoinPairs(a, {});
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].prober, "instance=a");
  EXPECT_EQ(p[0].peer, "b");
  EXPECT_TRUE(p[0].mapped);
  EXPECT_EQ(p[0].src_lid, 1);
  EXPECT_EQ(p[0].dst_lid, 8);
  EXPECT_EQ(p[0].verdict.verdict, Verdict::kBad);  // 20 % lost
  // c: 500 us against the median pair (12 us): bad, and no remote LID.
  EXPECT_EQ(p[1].verdict.verdict, Verdict::kBad);
  EXPECT_FALSE(p[1].mapped);
  EXPECT_NE(p[1].unmapped_reason.find("no LID"), std::string::npos);
  EXPECT_FALSE(p[2].mapped);  // 70000 is no unicast LID
  EXPECT_EQ(p[2].verdict.verdict, Verdict::kGood);
  // No pair info at all; ports that changed in the window.
  a.info = {info(ab, "1", "8"), info(ab, "1", "9")};
  const std::vector<ProbePair> q = JoinPairs(a, {});
  EXPECT_EQ(q[0].unmapped_reason, "its ports changed within the window");
  EXPECT_EQ(q[1].unmapped_reason, "no fabric_probe_pair_info");
  EXPECT_TRUE(JoinPairs({}, {}).empty());
}

// fabricmon-locate feeds the answers one at a time (so it holds one at a
// time), in its own order; any order must give JoinPairs' pairs, and a pair
// that is only in another answer (a lost count, an RTT) is no pair, though
// its RTT still counts towards the median baseline.
TEST(LocatePairs, IncrementalJoinIsJoinPairsInAnyOrder) {
  const std::map<std::string, std::string> ab = {{"instance", "a"},
                                                 {"peer", "b"}};
  const std::map<std::string, std::string> ac = {{"instance", "a"},
                                                 {"peer", "c"}};
  const std::map<std::string, std::string> ax = {{"instance", "a"},
                                                 {"peer", "x"}};
  PairAnswers a;
  a.sent = {S(ab, 60), S(ac, 100), S(ab, 40)};  // ab's two samples add up
  a.lost = {S(ab, 20), S(ax, 5)};
  a.rtt = {S(ab, 10e-6), S(ac, 11e-6), S(ax, 900e-6)};
  a.baseline = {S(ac, 2e-6)};
  using A = PairJoin::Answer;
  PairJoin join;
  EXPECT_FALSE(join.HasSent());
  join.Add(A::kBaseline, a.baseline);
  join.Add(A::kRtt, a.rtt);
  join.Add(A::kLost, a.lost);
  EXPECT_FALSE(join.HasSent());  // rows, but no pair sent anything
  join.Add(A::kSent, a.sent);
  EXPECT_TRUE(join.HasSent());
  const std::vector<ProbePair> p = join.Join({});
  const std::vector<ProbePair> q = JoinPairs(a, {});
  ASSERT_EQ(p.size(), 2u);
  ASSERT_EQ(q.size(), 2u);
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].peer, q[i].peer);
    EXPECT_EQ(p[i].measure.sent, q[i].measure.sent);
    EXPECT_EQ(p[i].measure.lost, q[i].measure.lost);
    EXPECT_EQ(p[i].measure.baseline_seconds, q[i].measure.baseline_seconds);
    EXPECT_EQ(p[i].verdict.verdict, q[i].verdict.verdict);
  }
  EXPECT_EQ(p[0].peer, "b");
  EXPECT_EQ(p[0].measure.sent, 100);
  EXPECT_EQ(p[0].measure.lost, 20);
  // b has no baseline of its own: the median of all three RTTs (11 us).
  EXPECT_EQ(p[0].measure.baseline_seconds, 11e-6);
  EXPECT_EQ(p[1].measure.baseline_seconds, 2e-6);  // c's own
}

TEST(LocateCounters, JoinsByPortAndSkipsBadLabels) {
  const auto queries = MakeCounterQueries("30m", {0x10, 0x20});
  ASSERT_FALSE(queries.empty());
  EXPECT_NE(queries[0].promql.find(
                "switch_guid=~\"0x0000000000000010|0x0000000000000020\""),
            std::string::npos);
  std::map<LinkEnd, PortCounters> out;
  JoinCounters(queries[0],
               {S({{"switch_guid", "0x0000000000000010"},
                   {"port", "3"},
                   {"error", "symbol_error"}},
                  12),
                S({{"switch_guid", "0xzz"}, {"port", "3"}, {"error", "x"}}, 1),
                S({{"switch_guid", "0x10"}, {"port", "3x"}, {"error", "x"}}, 1),
                S({{"port", "3"}}, 1)},
               &out);
  JoinCounters(queries[1],
               {S({{"switch_guid", "0x0000000000000010"}, {"port", "3"}}, 7)},
               &out);
  ASSERT_EQ(out.size(), 1u);
  const PortCounters& c = out.at({0x10, 3});
  EXPECT_EQ(c.at("symbol_error"), 12);
  EXPECT_EQ(c.at("xmit_wait"), 7);
}

}  // namespace
}  // namespace fabric::locate
