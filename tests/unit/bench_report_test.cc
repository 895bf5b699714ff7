// `fabricmon-bench report`'s HTML: self-contained (no scripts, no external
// references), per pattern a busbw chart (linear or log y) and a time chart
// side by side with one curve per run (two on the time chart: median and
// tail), the line rate drawn, the tail named honestly, axis labels that do
// not overlap, labels escaped, a table row per run and size with the
// counters summed (or "none reported"), and what each run was measured on.
#include <gtest/gtest.h>

#include <regex>

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
    row.time_seconds = row.p50_seconds = size / 1e8 + 1e-5;
    row.tail_name = "max";
    row.tail_seconds = row.time_seconds * 1.5;
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
  EXPECT_EQ(Count(html, "<svg"), 4u);  // busbw and time per pattern
  // busbw: one curve per run; time: median and tail per run.
  EXPECT_EQ(Count(html, "<polyline"), 3u * 3);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("<ndr>"), std::string::npos);
  EXPECT_NE(html.find("IB &lt;ndr&gt; (tcp, 4 hosts)"), std::string::npos);
  // The unlabeled run is named by its file.
  EXPECT_NE(html.find("b.json (tcp, 4 hosts)"), std::string::npos);
  // 3 runs x 3 sizes rows.
  EXPECT_EQ(Count(html, "<tr><td><span class=\"swatch\""), 9u);
  // What each run was measured on: one table per run.
  EXPECT_EQ(Count(html, "<table class=\"about\">"), 3u);
  EXPECT_EQ(Count(html, "xmit_wait 84"), 3u);  // 2 iterations x 42
  EXPECT_EQ(Count(html, "none reported"), 6u);
}

// The <svg> elements of a report, in order (per pattern: busbw, time).
std::vector<std::string> Svgs(const std::string& html) {
  std::vector<std::string> out;
  for (auto p = html.find("<svg"); p != std::string::npos;
       p = html.find("<svg", p + 1)) {
    out.push_back(html.substr(p, html.find("</svg>", p) - p));
  }
  return out;
}

struct Label {
  double x, y;
  std::string anchor, text;
};

// The svg's <text> elements that are not rotated (tick and line labels).
std::vector<Label> Labels(const std::string& svg) {
  static const std::regex re(
      "<text x=\"([-0-9.e]+)\" y=\"([-0-9.e]+)\" "
      "text-anchor=\"(\\w+)\" font-size=\"11\"[^>]*>([^<]*)</text>");
  std::vector<Label> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), re), end; it != end;
       ++it) {
    out.push_back(
        {std::stod((*it)[1]), std::stod((*it)[2]), (*it)[3], (*it)[4]});
  }
  return out;
}

// Rendered width of 11 px sans-serif text, estimated independently of the
// report's own estimate (0.6 em a character; "µ" is one).
double Width(const std::string& text) {
  std::size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
  return chars * 0.6 * 11;
}

Results Measured(const std::string& label, int iterations,
                 std::uint64_t top = 1 << 20) {
  RunOptions o;
  o.pattern = Pattern::kAllreduceRing;
  o.hosts = {"a:1", "b:1"};
  o.iterations = iterations;
  RunOutcome out;
  out.ok = true;
  for (std::uint64_t size = 8; size <= top; size *= 2) {
    SizeMeasurement m;
    m.size_bytes = size;
    for (int i = 0; i < iterations; ++i) {
      m.seconds.push_back(2e-5 + size / 1e8 * (1 + i * 0.01));
    }
    m.counters.resize(iterations);
    out.sizes.push_back(m);
  }
  return Summarize(o, out, label);
}

TEST(BenchReport, LogScaleOptionForBusBandwidth) {
  std::vector<Results> runs = {Measured("a", 20)};
  std::vector<std::string> busbw_linear = Svgs(ReportHtml(runs, {"a"}));
  ReportOptions log;
  log.log_y = true;
  std::vector<std::string> busbw_log = Svgs(ReportHtml(runs, {"a"}, log));
  ASSERT_EQ(busbw_linear.size(), 2u);
  ASSERT_EQ(busbw_log.size(), 2u);
  // Linear: from 0. Log: decades, no 0, the axis says so.
  EXPECT_NE(busbw_linear[0].find(">0 B/s</text>"), std::string::npos);
  EXPECT_EQ(busbw_linear[0].find("bus bandwidth (log scale)"),
            std::string::npos);
  EXPECT_EQ(busbw_log[0].find(">0 B/s</text>"), std::string::npos);
  EXPECT_NE(busbw_log[0].find("bus bandwidth (log scale)</text>"),
            std::string::npos);
  // Busbw here spans 8 B/20 µs to ~100 MB/s: the log axis shows each decade.
  for (const char* decade : {">1.0 MB/s<", ">10.0 MB/s<", ">100.0 MB/s<"}) {
    EXPECT_NE(busbw_log[0].find(decade), std::string::npos) << decade;
  }
  // The time chart is on a log scale either way, beside the busbw chart.
  EXPECT_NE(busbw_linear[1].find("time per operation (log scale)</text>"),
            std::string::npos);
  EXPECT_NE(busbw_linear[1].find("time per operation vs size"),
            std::string::npos);
}

TEST(BenchReport, TailIsNamedForItsIterations) {
  // 20 iterations: p90, nowhere a p99 or p95 of them.
  std::string html = ReportHtml({Measured("a", 20)}, {"a"});
  EXPECT_NE(html.find("<th>p90</th>"), std::string::npos);
  EXPECT_NE(html.find("dashed = p90 of the iterations"), std::string::npos);
  EXPECT_NE(html.find("<title>p90 8 B: "), std::string::npos);
  EXPECT_EQ(html.find("<th>p99"), std::string::npos);
  EXPECT_EQ(html.find("<th>p95"), std::string::npos);
  // 5 iterations: their maximum.
  html = ReportHtml({Measured("b", 5)}, {"b"});
  EXPECT_NE(html.find("<th>max</th>"), std::string::npos);
  EXPECT_NE(html.find("dashed = max of the iterations"), std::string::npos);
  // Runs that differ: the column is named per cell.
  html = ReportHtml({Measured("a", 20), Measured("b", 200)}, {"a", "b"});
  EXPECT_NE(html.find("<th>slowest</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>p90 "), std::string::npos);
  EXPECT_NE(html.find("<td>p99 "), std::string::npos);
}

TEST(BenchReport, LineRateIsDrawnWhereKnown) {
  Results known = Measured("a", 20);
  known.info.line_rate_bytes_per_second = 125e6;
  known.info.line_rate_source = "tbf 1gbit";
  std::string svg = Svgs(ReportHtml({known}, {"a"}))[0];
  EXPECT_NE(svg.find(">line rate 125.0 MB/s (tbf 1gbit)</text>"),
            std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray=\"6 3\""), std::string::npos);
  // Drawn inside the plot (the y axis extends to it).
  static const std::regex line(
      "<line x1=\"[-0-9.e]+\" x2=\"[-0-9.e]+\" "
      "y1=\"([-0-9.e]+)\"[^>]*6 3");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, line));
  EXPECT_GE(std::stod(m[1]), 16);
  EXPECT_LE(std::stod(m[1]), 340 - 48);

  std::string html = ReportHtml({Measured("b", 20)}, {"b"});
  EXPECT_EQ(Svgs(html)[0].find("line rate"), std::string::npos);
  EXPECT_NE(html.find("unknown (run with --line-rate to draw it)"),
            std::string::npos);
}

TEST(BenchReport, LabelsDoNotOverlap) {
  // 8 B to 1 GiB (28 sizes), two runs whose line rates are 5% apart.
  Results a = Measured("a", 20, 1u << 30), b = Measured("b", 20, 1u << 30);
  a.info.line_rate_bytes_per_second = 125e6;
  a.info.line_rate_source = "tbf 1gbit";
  b.info.line_rate_bytes_per_second = 131e6;
  b.info.line_rate_source = "--line-rate 1048mbit";
  ReportOptions log;
  log.log_y = true;
  for (const auto& options : {ReportOptions{}, log}) {
    for (const std::string& svg :
         Svgs(ReportHtml({a, b}, {"a", "b"}, options))) {
      std::vector<Label> x_ticks, y_ticks, rates;
      for (const Label& l : Labels(svg)) {
        if (l.anchor == "middle") x_ticks.push_back(l);
        if (l.anchor == "end" && l.text.rfind("line rate", 0) == 0) {
          rates.push_back(l);
        } else if (l.anchor == "end") {
          y_ticks.push_back(l);
        }
      }
      ASSERT_GE(x_ticks.size(), 4u) << svg;
      ASSERT_GE(y_ticks.size(), 3u) << svg;
      for (std::size_t i = 1; i < x_ticks.size(); ++i) {
        double gap = x_ticks[i].x - x_ticks[i - 1].x;
        EXPECT_GE(gap,
                  (Width(x_ticks[i].text) + Width(x_ticks[i - 1].text)) / 2)
            << x_ticks[i - 1].text << " / " << x_ticks[i].text;
      }
      EXPECT_LE(x_ticks.back().x + Width(x_ticks.back().text) / 2, 560);
      for (std::size_t i = 1; i < y_ticks.size(); ++i) {
        EXPECT_GE(y_ticks[i - 1].y - y_ticks[i].y, 11) << y_ticks[i].text;
      }
      // Clear of the rotated axis title (x 0..20).
      for (const Label& l : y_ticks) {
        EXPECT_GE(l.x - Width(l.text), 20) << l.text;
      }
      for (std::size_t i = 1; i < rates.size(); ++i) {
        EXPECT_GE(std::abs(rates[i].y - rates[i - 1].y), 11);
      }
      if (svg.find("busbw vs size") != std::string::npos) {
        EXPECT_EQ(rates.size(), 2u);
      }
    }
  }
}

TEST(BenchReport, SaysWhatTheRunWasMeasuredOnAndIfInterrupted) {
  Results r = Measured("IB", 20);
  r.transport = "rdma";
  r.interrupted = true;
  r.info.hosts = {"node1:10916", "node2:10916"};
  DeviceInfo d;
  d.name = "mlx5_0";
  d.hca_model = "MT4129";
  d.firmware = "28.39.1002";
  d.ports.push_back(
      {"1", "InfiniBand", "400 Gb/sec (4X NDR)", "unknown", "4: ACTIVE"});
  r.info.devices.push_back(d);
  r.info.start_time = "2026-12-05T07:40:03Z";
  r.info.end_time = "2026-12-05T07:41:01Z";
  r.info.fabricmon_version = "0.9.0";
  r.info.slurm_job_id = "4711";
  r.info.slurm_job_name = "nccl-check";
  r.info.slurm_job_nodelist = "gpu[001-002]";
  std::string html = ReportHtml({r}, {"r.json"});
  EXPECT_NE(html.find("<th>Slurm job</th><td>4711 (nccl-check) on "
                      "gpu[001-002]</td>"),
            std::string::npos);
  EXPECT_NE(html.find("IB (rdma, 2 hosts) [interrupted]"), std::string::npos);
  EXPECT_NE(html.find("was interrupted: it holds 18 completed size(s)"),
            std::string::npos);
  EXPECT_NE(html.find("node1:10916, node2:10916"), std::string::npos);
  EXPECT_NE(html.find("mlx5_0: MT4129, firmware 28.39.1002, port 1 "
                      "InfiniBand 400 Gb/sec (4X NDR) MTU unknown"),
            std::string::npos);
  EXPECT_NE(html.find("2026-12-05T07:40:03Z to 2026-12-05T07:41:01Z"),
            std::string::npos);
  EXPECT_NE(html.find("<td>0.9.0 (unknown)</td>"), std::string::npos);
}

}  // namespace
}  // namespace fabric::bench
