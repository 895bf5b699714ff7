#include "benchtool/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace fabric::bench {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c",
                                   "#9467bd", "#ff7f0e", "#8c564b"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string SizeText(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return Fmt(bytes == std::floor(bytes) ? "%.0f" : "%.1f", bytes) + " " +
         units[u];
}

// A rate in bytes/s with a readable unit (decimal, as nccl-tests' GB/s).
std::string RateText(double bps) {
  if (bps >= 1e9) return Fmt("%.2f GB/s", bps / 1e9);
  if (bps >= 1e6) return Fmt("%.1f MB/s", bps / 1e6);
  if (bps >= 1e3) return Fmt("%.1f kB/s", bps / 1e3);
  return Fmt("%.0f B/s", bps);
}

std::string RunName(const Results& r, const std::string& fallback) {
  std::string n = r.label.empty() ? fallback : r.label;
  return n + " (" + r.transport + ", " + std::to_string(r.hosts) + " hosts)";
}

// One chart: x = log2(size), y = busbw (linear from 0).
std::string Chart(const std::string& pattern,
                  const std::vector<const Results*>& runs,
                  const std::vector<std::string>& names) {
  const double W = 760, H = 360, L = 80, R = 20, T = 30, B = 50;
  double xmin = 1e300, xmax = 0, ymax = 0;
  for (const Results* r : runs) {
    for (const auto& row : r->results) {
      if (row.size_bytes == 0) continue;
      xmin = std::min(xmin, std::log2(static_cast<double>(row.size_bytes)));
      xmax = std::max(xmax, std::log2(static_cast<double>(row.size_bytes)));
      ymax = std::max(ymax, row.busbw_bytes_per_second);
    }
  }
  if (xmax <= xmin) xmax = xmin + 1;
  if (ymax <= 0) ymax = 1;
  // A round top for the y axis.
  double step = std::pow(10, std::floor(std::log10(ymax / 4)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (ymax / (step * m) <= 5) {
      step *= m;
      break;
    }
  }
  double ytop = std::ceil(ymax / step) * step;
  auto X = [&](double lg) {
    return L + (lg - xmin) / (xmax - xmin) * (W - L - R);
  };
  auto Y = [&](double v) { return H - B - v / ytop * (H - T - B); };

  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
    << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H
    << "\" role=\"img\" aria-label=\"busbw vs size, " << Escape(pattern)
    << "\">\n";
  s << "<rect x=\"0\" y=\"0\" width=\"" << W << "\" height=\"" << H
    << "\" fill=\"#fff\"/>\n";
  for (double v = 0; v <= ytop + step / 2; v += step) {
    s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << Y(v)
      << "\" y2=\"" << Y(v) << "\" stroke=\"#ddd\"/>\n";
    s << "<text x=\"" << L - 6 << "\" y=\"" << Y(v) + 4
      << "\" text-anchor=\"end\" font-size=\"11\">" << RateText(v)
      << "</text>\n";
  }
  int every = std::max(1, static_cast<int>((xmax - xmin) / 10) + 1);
  for (int lg = static_cast<int>(std::ceil(xmin)); lg <= xmax; ++lg) {
    if ((lg - static_cast<int>(std::ceil(xmin))) % every) continue;
    s << "<line x1=\"" << X(lg) << "\" x2=\"" << X(lg) << "\" y1=\"" << T
      << "\" y2=\"" << H - B << "\" stroke=\"#eee\"/>\n";
    s << "<text x=\"" << X(lg) << "\" y=\"" << H - B + 16
      << "\" text-anchor=\"middle\" font-size=\"11\">"
      << SizeText(std::pow(2.0, lg)) << "</text>\n";
  }
  s << "<line x1=\"" << L << "\" x2=\"" << L << "\" y1=\"" << T << "\" y2=\""
    << H - B << "\" stroke=\"#333\"/>\n";
  s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << H - B
    << "\" y2=\"" << H - B << "\" stroke=\"#333\"/>\n";
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12
    << "\" text-anchor=\"middle\" font-size=\"12\">message size "
       "(log scale)</text>\n";
  s << "<text x=\"16\" y=\"" << (T + H - B) / 2
    << "\" transform=\"rotate(-90 16 " << (T + H - B) / 2
    << ")\" text-anchor=\"middle\" font-size=\"12\">bus bandwidth</text>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const char* color = kColors[i % 6];
    std::ostringstream pts;
    for (const auto& row : runs[i]->results) {
      if (row.size_bytes == 0) continue;
      pts << X(std::log2(static_cast<double>(row.size_bytes))) << ","
          << Y(row.busbw_bytes_per_second) << " ";
    }
    s << "<polyline fill=\"none\" stroke=\"" << color
      << "\" stroke-width=\"2\" points=\"" << pts.str() << "\"/>\n";
    for (const auto& row : runs[i]->results) {
      if (row.size_bytes == 0) continue;
      s << "<circle cx=\"" << X(std::log2(static_cast<double>(row.size_bytes)))
        << "\" cy=\"" << Y(row.busbw_bytes_per_second) << "\" r=\"3\" fill=\""
        << color << "\"><title>" << SizeText(row.size_bytes) << ": "
        << RateText(row.busbw_bytes_per_second) << "</title></circle>\n";
    }
    s << "<rect x=\"" << L + 12 << "\" y=\"" << T + 6 + 18 * i
      << "\" width=\"14\" height=\"4\" fill=\"" << color << "\"/>\n";
    s << "<text x=\"" << L + 32 << "\" y=\"" << T + 12 + 18 * i
      << "\" font-size=\"12\">" << Escape(names[i]) << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string Table(const std::vector<const Results*>& runs,
                  const std::vector<std::string>& names) {
  std::ostringstream s;
  s << "<table>\n<tr><th>run</th><th>size</th><th>time (median)</th>"
       "<th>p50</th><th>p99</th><th>algbw</th><th>busbw</th>"
       "<th>fabric counters (sum over iterations)</th></tr>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const auto& row : runs[i]->results) {
      std::map<std::string, std::uint64_t> sums;
      for (const auto& it : row.iterations) {
        for (const auto& [k, v] : it.counters) sums[k] += v;
      }
      std::string counters;
      for (const auto& [k, v] : sums) {
        counters +=
            (counters.empty() ? "" : ", ") + k + " " + std::to_string(v);
      }
      if (counters.empty()) counters = "none reported";
      s << "<tr><td><span class=\"swatch\" style=\"background:"
        << kColors[i % 6] << "\"></span>" << Escape(names[i]) << "</td><td>"
        << SizeText(row.size_bytes) << "</td><td>"
        << Fmt("%.1f µs", row.time_seconds * 1e6) << "</td><td>"
        << Fmt("%.1f µs", row.p50_seconds * 1e6) << "</td><td>"
        << Fmt("%.1f µs", row.p99_seconds * 1e6) << "</td><td>"
        << RateText(row.algbw_bytes_per_second) << "</td><td>"
        << RateText(row.busbw_bytes_per_second) << "</td><td>"
        << Escape(counters) << "</td></tr>\n";
    }
  }
  s << "</table>\n";
  return s.str();
}

}  // namespace

std::string ReportHtml(const std::vector<Results>& runs,
                       const std::vector<std::string>& names) {
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<title>fabricmon-bench report</title>\n<style>\n"
       "body{font-family:sans-serif;margin:24px;color:#222}\n"
       "table{border-collapse:collapse;margin:12px 0 32px}\n"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;"
       "text-align:right}\n"
       "td:first-child,th:first-child,td:last-child{text-align:left}\n"
       ".swatch{display:inline-block;width:10px;height:10px;"
       "margin-right:6px}\n"
       "</style></head><body>\n<h1>fabricmon-bench report</h1>\n"
       "<p>Bus bandwidth as nccl-tests defines it (busbw = algbw &times; "
       "2(n&minus;1)/n for all-reduce, &times; (n&minus;1)/n for all-gather, "
       "reduce-scatter and all-to-all); time is the median over the measured "
       "iterations of the slowest host's time per operation.</p>\n";
  std::vector<std::string> run_names;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    run_names.push_back(RunName(runs[i], i < names.size() ? names[i] : ""));
  }
  std::vector<std::string> patterns;
  for (const auto& r : runs) {
    if (std::find(patterns.begin(), patterns.end(), r.pattern) ==
        patterns.end()) {
      patterns.push_back(r.pattern);
    }
  }
  for (const auto& p : patterns) {
    std::vector<const Results*> these;
    std::vector<std::string> these_names;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (runs[i].pattern != p) continue;
      these.push_back(&runs[i]);
      these_names.push_back(run_names[i]);
    }
    s << "<h2>" << Escape(p) << "</h2>\n"
      << Chart(p, these, these_names) << Table(these, these_names);
  }
  s << "</body></html>\n";
  return s.str();
}

}  // namespace fabric::bench
