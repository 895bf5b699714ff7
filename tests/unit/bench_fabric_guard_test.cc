// fabricmon-bench's fabric guard (benchtool/fabric_guard.h): a host set's
// kinds of rail, the odd hosts named; the agents' rails on the wire
// (Prepared, with and without them); the report's mixed-set warning and its
// side-by-side busbw table with the ratio per size.
#include <gtest/gtest.h>

#include "benchtool/fabric_guard.h"
#include "benchtool/report.h"
#include "benchtool/wire.h"

namespace fabric::bench {
namespace {

RailSummary Rail(const char* dev, const char* cls, const char* fabric) {
  return {dev, "1", cls, fabric};
}

const std::vector<RailSummary> kH100 = {
    Rail("mlx5_0", "infiniband", "ib:a"), Rail("mlx5_1", "infiniband", "ib:a"),
    Rail("mlx5_bond_0", "roce_spectrum_x", "roce:n")};

TEST(BenchFabricGuard, HostClassesAreSortedAndUnique) {
  EXPECT_EQ(HostClasses(kH100), "infiniband@ib:a, roce_spectrum_x@roce:n");
  EXPECT_EQ(HostClasses({}), "");
}

TEST(BenchFabricGuard, UniformSetIsNotMixed) {
  auto c = CheckHostSet({"a:1", "b:1"}, {kH100, kH100});
  EXPECT_FALSE(c.mixed);
  EXPECT_EQ(c.fabric_class, "infiniband+roce_spectrum_x");
  auto roce = CheckHostSet({"a:1", "b:1"}, {{Rail("m", "roce", "roce:n")},
                                            {Rail("m", "roce", "roce:n")}});
  EXPECT_EQ(roce.fabric_class, "roce");
  // No host reported a rail (no RDMA here, or older agents): unknown.
  auto none = CheckHostSet({"a:1", "b:1"}, {{}, {}});
  EXPECT_FALSE(none.mixed);
  EXPECT_EQ(none.fabric_class, "");
}

TEST(BenchFabricGuard, OddHostsAreNamedAgainstTheMostCommonKinds) {
  auto plain = std::vector<RailSummary>{Rail("mlx5_0", "roce", "roce:n")};
  auto other_fabric = kH100;
  other_fabric[0].fabric = "ib:b";
  auto c = CheckHostSet({"a:1", "b:1", "c:1", "d:1", "e:1"},
                        {kH100, plain, kH100, other_fabric, {}});
  EXPECT_TRUE(c.mixed);
  EXPECT_EQ(c.fabric_class, "mixed");
  EXPECT_NE(c.message.find("2 host(s) have rails infiniband@ib:a, "
                           "roce_spectrum_x@roce:n"),
            std::string::npos)
      << c.message;
  EXPECT_NE(c.message.find("b:1 (rank 1: roce@roce:n)"), std::string::npos);
  EXPECT_NE(c.message.find("d:1 (rank 3: infiniband@ib:a, infiniband@ib:b"),
            std::string::npos)
      << c.message;
  EXPECT_EQ(c.message.find("a:1"), std::string::npos);
  EXPECT_EQ(c.message.find("e:1"), std::string::npos);  // unknown: left out
}

TEST(BenchFabricGuard, PreparedCarriesRailsAndOlderRepliesDecode) {
  PreparedMsg m{{1, 2, 3}, kH100};
  auto back = DecodePrepared(EncodePrepared(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->endpoint, m.endpoint);
  EXPECT_EQ(back->rails, kH100);
  // An older agent's reply: the endpoint only.
  Bytes old = EncodePrepared({{1, 2, 3}, {}});
  old.resize(old.size() - 4);  // without the rail count
  auto o = DecodePrepared(old);
  ASSERT_TRUE(o);
  EXPECT_TRUE(o->rails.empty());
  // Truncated rails and trailing bytes are refused, never read past.
  Bytes full = EncodePrepared(m);
  for (std::size_t n = old.size() + 1; n < full.size(); ++n) {
    EXPECT_FALSE(DecodePrepared(std::span(full.data(), n))) << n;
  }
  full.push_back(0);
  EXPECT_FALSE(DecodePrepared(full));
}

Results ClassRun(const std::string& label, const std::string& cls,
                 double busbw) {
  Results r;
  r.pattern = "allreduce-ring";
  r.hosts = 2;
  r.transport = "tcp";
  r.label = label;
  r.info.fabric_class = cls;
  for (std::uint64_t size : {1024u, 1048576u}) {
    SizeRow row;
    row.size_bytes = size;
    row.time_seconds = row.p50_seconds = row.tail_seconds = 1e-3;
    row.tail_name = "max";
    row.algbw_bytes_per_second = busbw;
    row.busbw_bytes_per_second = size == 1024u ? busbw : 2 * busbw;
    r.results.push_back(row);
  }
  return r;
}

TEST(BenchFabricGuard, ReportPutsClassesSideBySideWithRatios) {
  Results ib = ClassRun("IB", "infiniband", 1e9);
  Results roce = ClassRun("RoCE", "roce", 5e8);
  roce.results[1].busbw_bytes_per_second = 1.5e9;  // gap narrows at 1 MiB
  const std::string html = ReportHtml({ib, roce}, {"a", "b"});
  EXPECT_NE(html.find("Side by side: busbw per size, ratio to IB (tcp, 2 "
                      "hosts, infiniband)"),
            std::string::npos);
  EXPECT_NE(html.find("<th>ratio RoCE (tcp, 2 hosts, roce)</th>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>0.50</td>"), std::string::npos);  // 1 KiB
  EXPECT_NE(html.find("<td>0.75</td>"), std::string::npos);  // 1 MiB
  // One run of a pattern: nothing to put beside it.
  EXPECT_EQ(ReportHtml({ib}, {"a"}).find("Side by side"), std::string::npos);
}

TEST(BenchFabricGuard, ReportShowsTheMixedWarning) {
  Results r = ClassRun("m", "mixed", 1e9);
  r.info.mixed_warning = "the host set spans fabric classes or fabrics: x";
  r.info.host_fabric_classes = {"infiniband@ib:a", "roce@roce:n"};
  r.info.hosts = {"a:1", "b:1"};
  const std::string html = ReportHtml({r}, {"m"});
  EXPECT_NE(html.find("ran on a mixed host set (--allow-mixed): the host set "
                      "spans fabric classes or fabrics: x"),
            std::string::npos);
  EXPECT_NE(html.find("Mixed host set, run with --allow-mixed"),
            std::string::npos);
  EXPECT_NE(html.find("mixed (a:1: infiniband@ib:a; b:1: roce@roce:n)"),
            std::string::npos);
}

}  // namespace
}  // namespace fabric::bench
