// locate/link.h: the --link argument, its queries, and the joins of
// Prometheus answers (hostile ones too) onto the destinations an LFT
// listed; the table and JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "locate/link.h"

namespace fabric::locate {
namespace {

TEST(LocateLink, ParsesGuidAndPort) {
  std::string error;
  auto l = ParseLinkSpec("0x0002c90300000001:7", &error);
  ASSERT_TRUE(l) << error;
  EXPECT_EQ(l->guid, 0x0002c90300000001ULL);
  EXPECT_EQ(l->port, 7);
  l = ParseLinkSpec("2c9030000abcd:254", &error);
  ASSERT_TRUE(l) << error;
  EXPECT_EQ(l->guid, 0x2c9030000abcdULL);
  for (const char* bad :
       {"", ":", "0x12", "0x12:", ":3", "0x12:0", "0x12:255", "0xzz:1",
        "0x12:1x", "0x12345678901234567:1", "0x12:-1", "leaf0:1"}) {
    EXPECT_FALSE(ParseLinkSpec(bad, &error)) << bad;
    EXPECT_NE(error.find("SWITCH_GUID:PORT"), std::string::npos);
  }
}

TEST(LocateLink, QueriesNameThePortAndTheWindow) {
  const LinkQueries q = MakeLinkQueries("15m", {0x2c9, 3});
  EXPECT_EQ(q.xmit_bytes,
            "max(increase(fabric_switch_port_transmit_bytes_total{switch_guid="
            "\"0x00000000000002c9\",port=\"3\"}[15m]))");
  EXPECT_NE(q.xmit_wait.find("fabric_switch_port_transmit_wait_total"),
            std::string::npos);
  EXPECT_EQ(q.host_lids, "last_over_time(fabric_port_lid[15m])");
}

PromSample S(std::map<std::string, std::string> labels, double v) {
  return {std::move(labels), v};
}

TEST(LocateLink, JoinsHostTrafficByLidAndSkipsNonsense) {
  std::vector<LinkDestination> d(3);
  d[0].lid = 4;
  d[1].lid = 9;
  d[2].lid = 12;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<PromSample> lids = {
      S({{"instance", "a:9"}, {"device", "mlx5_0"}, {"port", "1"}}, 4),
      S({{"instance", "b:9"}, {"device", "mlx5_0"}, {"port", "1"}}, 9),
      S({{"instance", "c:9"}, {"device", "mlx5_0"}, {"port", "1"}}, 4.5),
      S({{"instance", "d:9"}, {"device", "mlx5_0"}, {"port", "1"}}, nan),
      S({{"instance", "e:9"}, {"device", "mlx5_0"}, {"port", "1"}}, 1e9),
      S({{"instance", "f:9"}, {"device", "mlx5_0"}, {"port", "1"}}, 77)};
  const std::vector<PromSample> rcv = {
      S({{"__name__", "x"},
         {"instance", "a:9"},
         {"device", "mlx5_0"},
         {"port", "1"}},
        1000),
      S({{"instance", "b:9"}, {"device", "mlx5_0"}, {"port", "1"}}, nan)};
  JoinHostTraffic(lids, rcv, &d);
  EXPECT_EQ(d[0].host_port, "a:9/mlx5_0/1");
  EXPECT_EQ(d[0].rcv_bytes, 1000);
  EXPECT_EQ(d[1].host_port, "b:9/mlx5_0/1");
  EXPECT_FALSE(d[1].rcv_bytes);  // NaN: unknown, not 0
  EXPECT_EQ(d[2].host_port, "");
}

TEST(LocateLink, CountsCrossingPairsAndFormats) {
  LinkReport r;
  r.window = "30m";
  r.link = {0x2c9, 3};
  r.switch_name = "leaf0";
  r.remote = "\"spine0\"[1]";
  r.queried = true;
  r.xmit_bytes = 5e9;
  r.destinations.resize(2);
  r.destinations[0].lid = 4;
  r.destinations[0].name = "hca4";
  r.destinations[0].type = 1;
  r.destinations[1].lid = 8;
  ProbePair p;
  p.prober = "instance=a";
  p.peer = "b";
  p.dst_lid = 4;
  p.measure.sent = 100;
  p.measure.lost = 20;
  p.verdict = {Verdict::kBad, "loss 0.2 > 0.01"};
  EXPECT_TRUE(AddCrossingPair(p, &r.destinations));
  p.dst_lid = 5;
  EXPECT_FALSE(AddCrossingPair(p, &r.destinations));
  const std::string table = FormatLinkTable(r);
  EXPECT_NE(table.find("link 0x00000000000002c9[3] \"leaf0\" -> \"spine0\"[1]: "
                       "2 destination LIDs"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("transmitted 5e+09 bytes, transmit wait - ticks"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("(no node has this LID)"), std::string::npos);
  EXPECT_NE(table.find("bad pair instance=a -> b: loss 0.2 > 0.01"),
            std::string::npos);
  const auto j = nlohmann::json::parse(FormatLinkJson(r));
  EXPECT_EQ(j["destinations"][0]["bad_pairs"], 1);
  EXPECT_EQ(j["destinations"][0]["lost"], 20);
  EXPECT_TRUE(j["xmit_wait"].is_null());
  EXPECT_EQ(j["link"]["switch_guid"], "0x00000000000002c9");
}

}  // namespace
}  // namespace fabric::locate
