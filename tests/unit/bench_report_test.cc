// `fabricmon-bench report`'s HTML: self-contained (no scripts, no external
// references), one curve per run of each pattern, labels escaped, and a table
// row per run and size with the counters summed (or "none reported").
#include <gtest/gtest.h>

#include "benchtool/report.h"

namespace fabric::bench {
namespace {

Results MakeRun(const std::string& pattern, const std::string& label,
                double scale) {
  Results r;
  r.pattern = pattern;
  r.hosts = 4;
  r.transport = "tcp";
  r.label = label;
  for (std::uint64_t size : {1024u, 65536u, 1048576u}) {
    SizeRow row;
    row.size_bytes = size;
    row.time_seconds = row.p50_seconds = row.p99_seconds = size / 1e8 + 1e-5;
    row.algbw_bytes_per_second = size / row.time_seconds;
    row.busbw_bytes_per_second = row.algbw_bytes_per_second * scale;
    IterationRow it;
    it.seconds = row.time_seconds;
    if (size == 65536) it.counters["xmit_wait"] = 42;
    row.iterations = {it, it};
    r.results.push_back(row);
  }
  return r;
}

std::size_t Count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto p = s.find(needle); p != std::string::npos;
       p = s.find(needle, p + 1)) {
    ++n;
  }
  return n;
}

TEST(BenchReport, SelfContainedCurvesAndTable) {
  std::string html = ReportHtml(
      {MakeRun("allreduce-ring", "IB <ndr>", 1.5),
       MakeRun("allreduce-ring", "", 1.2), MakeRun("alltoall", "x", 0.75)},
      {"a.json", "b.json", "c.json"});
  EXPECT_EQ(Count(html, "<svg"), 2u);       // one chart per pattern
  EXPECT_EQ(Count(html, "<polyline"), 3u);  // one curve per run
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("<ndr>"), std::string::npos);
  EXPECT_NE(html.find("IB &lt;ndr&gt; (tcp, 4 hosts)"), std::string::npos);
  // The unlabeled run is named by its file.
  EXPECT_NE(html.find("b.json (tcp, 4 hosts)"), std::string::npos);
  // 3 runs x 3 sizes rows, plus a header per table.
  EXPECT_EQ(Count(html, "<tr>"), 9u + 2u);
  EXPECT_EQ(Count(html, "xmit_wait 84"), 3u);  // 2 iterations x 42
  EXPECT_EQ(Count(html, "none reported"), 6u);
}

}  // namespace
}  // namespace fabric::bench
