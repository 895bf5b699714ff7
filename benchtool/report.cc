#include "benchtool/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "benchtool/progress.h"

namespace fabric::bench {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c",
                                   "#9467bd", "#ff7f0e", "#8c564b"};
constexpr double kTickFont = 11;

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

// A rate in bytes/s with a readable unit (decimal, as nccl-tests' GB/s).
std::string RateText(double bps) {
  if (bps >= 1e9) return Fmt("%.2f GB/s", bps / 1e9);
  if (bps >= 1e6) return Fmt("%.1f MB/s", bps / 1e6);
  if (bps >= 1e3) return Fmt("%.1f kB/s", bps / 1e3);
  return Fmt("%.0f B/s", bps);
}

std::string TimeText(double s) {
  if (s >= 1) return Fmt("%.3g s", s);
  if (s >= 1e-3) return Fmt("%.3g ms", s * 1e3);
  if (s >= 1e-6) return Fmt("%.3g µs", s * 1e6);
  return Fmt("%.3g ns", s * 1e9);
}

// Width of a text in a sans-serif font, estimated generously (digits and
// lower case are ~0.55 em; 0.62 leaves room for wider glyphs).
double TextWidth(const std::string& text, double font) {
  std::size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;  // UTF-8 starts
  return chars * 0.62 * font;
}

struct Curve {
  const char* color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // (size bytes, y)
  std::string what;                               // tooltip prefix
};

struct RefLine {
  const char* color;
  double y;
  std::string label;
};

struct Plot {
  std::string aria, y_label;
  bool log_y = false;
  std::string (*y_text)(double) = nullptr;
  std::vector<Curve> curves;
  std::vector<RefLine> lines;
};

// Ticks of a linear axis from 0: a round step, about 5 ticks.
std::vector<double> LinearTicks(double ymax, double* top) {
  double step = std::pow(10, std::floor(std::log10(ymax / 4)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (ymax / (step * m) <= 5) {
      step *= m;
      break;
    }
  }
  *top = std::ceil(ymax / step) * step;
  std::vector<double> t;
  for (int i = 0; i * step <= *top + step / 2; ++i) t.push_back(i * step);
  return t;
}

// Ticks of a log axis: the decades covering [lo, hi] (and 2, 5 between
// them when the range is under two decades).
std::vector<double> LogTicks(double lo, double hi, double* bottom,
                             double* top) {
  int d0 = static_cast<int>(std::floor(std::log10(lo)));
  int d1 = static_cast<int>(std::ceil(std::log10(hi)));
  if (d1 <= d0) d1 = d0 + 1;
  *bottom = std::pow(10.0, d0);
  *top = std::pow(10.0, d1);
  std::vector<double> t;
  for (int d = d0; d <= d1; ++d) {
    t.push_back(std::pow(10.0, d));
    if (d1 - d0 < 2 && d < d1) {
      t.push_back(2 * std::pow(10.0, d));
      t.push_back(5 * std::pow(10.0, d));
    }
  }
  return t;
}

std::string Svg(const Plot& p) {
  // L is set below, from the widest y tick label.
  const double W = 560, H = 340, R = 24, T = 16, B = 48;
  double xmin = 1e300, xmax = -1e300, ylo = 1e300, yhi = 0;
  for (const auto& c : p.curves) {
    for (auto [x, y] : c.points) {
      xmin = std::min(xmin, std::log2(x));
      xmax = std::max(xmax, std::log2(x));
      if (y > 0) ylo = std::min(ylo, y);
      yhi = std::max(yhi, y);
    }
  }
  for (const auto& l : p.lines) {
    ylo = std::min(ylo, l.y);
    yhi = std::max(yhi, l.y * 1.08);  // room for its label above it
  }
  if (xmin > xmax) xmin = xmax = 0;
  if (xmax <= xmin) xmax = xmin + 1;
  if (yhi <= 0) yhi = 1;
  if (ylo > yhi) ylo = yhi / 10;
  double ybottom = 0, ytop = 0;
  std::vector<double> yticks =
      p.log_y ? LogTicks(ylo, yhi, &ybottom, &ytop) : LinearTicks(yhi, &ytop);
  // The rotated y title takes x 0..20; tick labels end 6 left of the axis.
  double widest_y = 0;
  for (double v : yticks) {
    widest_y = std::max(widest_y, TextWidth(p.y_text(v), kTickFont));
  }
  const double L = 20 + 6 + widest_y + 4;
  auto X = [&](double lg) {
    return L + (lg - xmin) / (xmax - xmin) * (W - L - R);
  };
  auto Y = [&](double v) {
    double f = p.log_y
                   ? (std::log10(std::max(v, ybottom)) - std::log10(ybottom)) /
                         (std::log10(ytop) - std::log10(ybottom))
                   : v / ytop;
    return H - B - f * (H - T - B);
  };

  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
    << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H
    << "\" role=\"img\" aria-label=\"" << Escape(p.aria) << "\">\n";
  s << "<rect x=\"0\" y=\"0\" width=\"" << W << "\" height=\"" << H
    << "\" fill=\"#fff\"/>\n";
  // y ticks, dropping any that would touch the one below it.
  double last_y = 1e300;
  for (double v : yticks) {
    double y = Y(v);
    s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << y
      << "\" y2=\"" << y << "\" stroke=\"#ddd\"/>\n";
    if (last_y - y < kTickFont + 3) continue;
    s << "<text x=\"" << L - 6 << "\" y=\"" << y + 4
      << "\" text-anchor=\"end\" font-size=\"" << kTickFont << "\">"
      << p.y_text(v) << "</text>\n";
    last_y = y;
  }
  // x ticks at powers of two, every k-th so that the widest label fits.
  int first = static_cast<int>(std::ceil(xmin));
  double widest = 0;
  for (int lg = first; lg <= xmax; ++lg) {
    widest =
        std::max(widest, TextWidth(SizeText(std::pow(2.0, lg)), kTickFont));
  }
  double per = (W - L - R) / (xmax - xmin);
  int every = std::max(1, static_cast<int>(std::ceil((widest + 8) / per)));
  for (int lg = first; lg <= xmax; lg += every) {
    s << "<line x1=\"" << X(lg) << "\" x2=\"" << X(lg) << "\" y1=\"" << T
      << "\" y2=\"" << H - B << "\" stroke=\"#eee\"/>\n";
    s << "<text x=\"" << X(lg) << "\" y=\"" << H - B + 16
      << "\" text-anchor=\"middle\" font-size=\"" << kTickFont << "\">"
      << SizeText(std::pow(2.0, lg)) << "</text>\n";
  }
  s << "<line x1=\"" << L << "\" x2=\"" << L << "\" y1=\"" << T << "\" y2=\""
    << H - B << "\" stroke=\"#333\"/>\n";
  s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << H - B
    << "\" y2=\"" << H - B << "\" stroke=\"#333\"/>\n";
  s << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 10
    << "\" text-anchor=\"middle\" font-size=\"12\">message size "
       "(log scale)</text>\n";
  s << "<text x=\"14\" y=\"" << (T + H - B) / 2
    << "\" transform=\"rotate(-90 14 " << (T + H - B) / 2
    << ")\" text-anchor=\"middle\" font-size=\"12\">" << Escape(p.y_label)
    << (p.log_y ? " (log scale)" : "") << "</text>\n";
  // Line rates, labelled above their line at the right; a label that would
  // touch the previous one moves up. A white outline keeps a label legible
  // where a curve crosses it; labels come after the curves, so on top.
  std::ostringstream labels;
  std::vector<RefLine> lines = p.lines;
  std::sort(lines.begin(), lines.end(),
            [](const RefLine& a, const RefLine& b) { return a.y < b.y; });
  double label_floor = 1e300;
  for (const auto& l : lines) {
    double y = Y(l.y);
    s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << y
      << "\" y2=\"" << y << "\" stroke=\"" << l.color
      << "\" stroke-dasharray=\"6 3\" stroke-width=\"1.5\"/>\n";
    double ly = std::min(y - 4, label_floor - kTickFont - 3);
    labels << "<text x=\"" << W - R - 4 << "\" y=\"" << ly
           << "\" text-anchor=\"end\" font-size=\"" << kTickFont << "\" fill=\""
           << l.color
           << "\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">"
           << Escape(l.label) << "</text>\n";
    label_floor = ly;
  }
  for (const auto& c : p.curves) {
    std::ostringstream pts;
    for (auto [x, y] : c.points) pts << X(std::log2(x)) << "," << Y(y) << " ";
    s << "<polyline fill=\"none\" stroke=\"" << c.color << "\" stroke-width=\""
      << (c.dashed ? "1.5\" stroke-dasharray=\"4 3" : "2") << "\" points=\""
      << pts.str() << "\"/>\n";
    for (auto [x, y] : c.points) {
      s << "<circle cx=\"" << X(std::log2(x)) << "\" cy=\"" << Y(y) << "\" r=\""
        << (c.dashed ? 2 : 3) << "\" fill=\"" << c.color << "\"><title>"
        << Escape(c.what) << " " << SizeText(x) << ": " << p.y_text(y)
        << "</title></circle>\n";
    }
  }
  s << labels.str() << "</svg>\n";
  return s.str();
}

std::string RunName(const Results& r, const std::string& fallback) {
  std::string n = r.label.empty() ? fallback : r.label;
  n += " (" + r.transport + ", " + std::to_string(r.hosts) + " hosts" +
       (r.info.fabric_class.empty() ? "" : ", " + r.info.fabric_class) + ")";
  if (r.interrupted) n += " [interrupted]";
  return n;
}

// The tail's name when every row of these runs has the same one, else "".
std::string CommonTailName(const std::vector<const Results*>& runs) {
  std::string name;
  for (const Results* r : runs) {
    for (const auto& row : r->results) {
      if (name.empty()) name = row.tail_name;
      if (row.tail_name != name) return "";
    }
  }
  return name;
}

std::string Charts(const std::string& pattern,
                   const std::vector<const Results*>& runs,
                   const std::vector<std::string>& names, bool log_y) {
  Plot bw;
  bw.aria = "busbw vs size, " + pattern;
  bw.y_label = "bus bandwidth";
  bw.log_y = log_y;
  bw.y_text = RateText;
  Plot lat;
  lat.aria = "time per operation vs size, " + pattern;
  lat.y_label = "time per operation";
  lat.log_y = true;
  lat.y_text = TimeText;
  std::ostringstream legend;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const char* color = kColors[i % 6];
    Curve busbw{color, false, {}, "busbw"};
    Curve median{color, false, {}, "median"};
    Curve tail{color, true, {}, "tail"};
    std::string tail_name;
    for (const auto& row : runs[i]->results) {
      if (row.size_bytes == 0) continue;
      double x = static_cast<double>(row.size_bytes);
      busbw.points.push_back({x, row.busbw_bytes_per_second});
      median.points.push_back({x, row.time_seconds});
      tail.points.push_back({x, row.tail_seconds});
      tail_name = row.tail_name;
    }
    tail.what = tail_name;
    bw.curves.push_back(busbw);
    lat.curves.push_back(median);
    lat.curves.push_back(tail);
    const RunInfo& info = runs[i]->info;
    if (info.line_rate_bytes_per_second > 0) {
      bw.lines.push_back({color, info.line_rate_bytes_per_second,
                          "line rate " +
                              RateText(info.line_rate_bytes_per_second) + " (" +
                              info.line_rate_source + ")"});
    }
    legend << "<span class=\"key\"><span class=\"swatch\" style=\"background:"
           << color << "\"></span>" << Escape(names[i]) << "</span>\n";
  }
  std::string tail_name = CommonTailName(runs);
  legend << "<span class=\"key\">time: solid = median, dashed = "
         << (tail_name.empty() ? "slowest iterations (see table)"
                               : Escape(tail_name) + " of the iterations")
         << "</span>\n";
  if (!bw.lines.empty()) {
    legend << "<span class=\"key\">dashed horizontal = line rate</span>\n";
  }
  return "<div class=\"charts\">\n" + Svg(bw) + Svg(lat) +
         "</div>\n<div class=\"legend\">\n" + legend.str() + "</div>\n";
}

std::string Table(const std::vector<const Results*>& runs,
                  const std::vector<std::string>& names) {
  // The tail column is named once when every row agrees; else per cell.
  std::string common = CommonTailName(runs);
  std::ostringstream s;
  s << "<table>\n<tr><th>run</th><th>size</th><th>time (median)</th>"
       "<th>p50</th><th>"
    << (common.empty() ? "slowest" : Escape(common))
    << "</th><th>algbw</th><th>busbw</th>"
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
        << SizeText(row.size_bytes) << "</td><td>" << TimeText(row.time_seconds)
        << "</td><td>" << TimeText(row.p50_seconds) << "</td><td>"
        << (common.empty() ? Escape(row.tail_name) + " " : "")
        << TimeText(row.tail_seconds) << "</td><td>"
        << RateText(row.algbw_bytes_per_second) << "</td><td>"
        << RateText(row.busbw_bytes_per_second) << "</td><td>"
        << Escape(counters) << "</td></tr>\n";
    }
  }
  s << "</table>\n";
  return s.str();
}

// Runs of one pattern side by side (issue 31): busbw per message size of
// each run and its ratio to the first run's at the same size, so whether a
// gap between two fabrics or classes narrows or widens with size is read
// off a table. Sizes some run lacks show "–".
std::string SideBySide(const std::vector<const Results*>& runs,
                       const std::vector<std::string>& names) {
  if (runs.size() < 2) return "";
  std::map<std::uint64_t, std::vector<double>> busbw;  // size -> per run
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const auto& row : runs[i]->results) {
      auto& v = busbw[row.size_bytes];
      v.resize(runs.size(), 0);
      v[i] = row.busbw_bytes_per_second;
    }
  }
  std::ostringstream s;
  s << "<h3>Side by side: busbw per size, ratio to " << Escape(names[0])
    << "</h3>\n<table class=\"side\">\n<tr><th>size</th>";
  for (const auto& n : names) s << "<th>" << Escape(n) << "</th>";
  for (std::size_t i = 1; i < names.size(); ++i) {
    s << "<th>ratio " << Escape(names[i]) << "</th>";
  }
  s << "</tr>\n";
  for (auto& [size, v] : busbw) {
    v.resize(runs.size(), 0);
    s << "<tr><td>" << SizeText(size) << "</td>";
    for (double b : v)
      s << "<td>" << (b > 0 ? RateText(b) : "&ndash;") << "</td>";
    for (std::size_t i = 1; i < v.size(); ++i) {
      s << "<td>"
        << (v[0] > 0 && v[i] > 0 ? Fmt("%.2f", v[i] / v[0]) : "&ndash;")
        << "</td>";
    }
    s << "</tr>\n";
  }
  s << "</table>\n";
  return s.str();
}

std::string OrUnknown(const std::string& s) {
  return s.empty() ? "unknown" : s;
}

// What a run was measured on (results.json "metadata").
std::string About(const Results& r, const std::string& name) {
  const RunInfo& info = r.info;
  std::ostringstream s;
  s << "<h3>" << Escape(name) << "</h3>\n";
  if (r.interrupted) {
    s << "<p class=\"warn\">Interrupted: " << r.results.size()
      << " size(s) completed before the run was stopped; the numbers above "
         "are those.</p>\n";
  }
  if (!info.mixed_warning.empty()) {
    s << "<p class=\"warn\">Mixed host set, run with --allow-mixed: "
      << Escape(info.mixed_warning) << "</p>\n";
  }
  std::string hosts;
  for (const auto& h : info.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  s << "<table class=\"about\">\n";
  auto row = [&](const std::string& k, const std::string& v) {
    s << "<tr><th>" << k << "</th><td>" << Escape(v) << "</td></tr>\n";
  };
  row("pattern", r.pattern + (r.tp ? ", tp " + std::to_string(r.tp) : ""));
  row("hosts", std::to_string(r.hosts) + (hosts.empty() ? "" : ": " + hosts));
  row("transport", r.transport);
  std::string rails;
  for (std::size_t i = 0; i < info.host_fabric_classes.size(); ++i) {
    rails += (rails.empty() ? "" : "; ") +
             (i < info.hosts.size() ? info.hosts[i] : std::to_string(i)) +
             ": " + OrUnknown(info.host_fabric_classes[i]);
  }
  row("fabric class",
      OrUnknown(info.fabric_class) + (rails.empty() ? "" : " (" + rails + ")"));
  if (!info.link.empty()) row("link", info.link);
  if (!info.slurm_job_id.empty()) {
    row("Slurm job",
        info.slurm_job_id +
            (info.slurm_job_name.empty() ? ""
                                         : " (" + info.slurm_job_name + ")") +
            " on " + OrUnknown(info.slurm_job_nodelist));
  }
  row("iterations", std::to_string(r.iterations) + " measured, " +
                        std::to_string(r.warmup) + " warm-up per size");
  std::string devices;
  for (const auto& d : info.devices) {
    devices += (devices.empty() ? "" : "; ") + d.name + ": " + d.hca_model +
               ", firmware " + d.firmware;
    for (const auto& p : d.ports) {
      devices += ", port " + p.port + " " + p.link_layer + " " + p.rate +
                 " MTU " + p.mtu + " (" + p.state + ")";
    }
  }
  row("RDMA devices",
      (devices.empty() ? std::string("none found") : devices) +
          (info.devices_from.empty() ? "" : " [" + info.devices_from + "]"));
  row("line rate", info.line_rate_bytes_per_second > 0
                       ? RateText(info.line_rate_bytes_per_second) + " (" +
                             info.line_rate_source + ")"
                       : "unknown (run with --line-rate to draw it)");
  row("time", OrUnknown(info.start_time) + " to " + OrUnknown(info.end_time));
  row("fabricmon", OrUnknown(info.fabricmon_version) + " (" +
                       OrUnknown(info.fabricmon_revision) + ")");
  s << "</table>\n";
  return s.str();
}

}  // namespace

std::string ReportHtml(const std::vector<Results>& runs,
                       const std::vector<std::string>& names,
                       const ReportOptions& options) {
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       "<title>fabricmon-bench report</title>\n<style>\n"
       "body{font-family:sans-serif;margin:24px;color:#222}\n"
       "table{border-collapse:collapse;margin:12px 0 32px}\n"
       "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;"
       "text-align:right}\n"
       "td:first-child,th:first-child,td:last-child{text-align:left}\n"
       "table.about th,table.about td{text-align:left}\n"
       ".charts{display:flex;flex-wrap:wrap;gap:12px}\n"
       ".legend{margin:6px 0;font-size:13px}\n"
       ".key{margin-right:18px;white-space:nowrap}\n"
       ".warn{background:#fdecea;border-left:4px solid #d62728;"
       "padding:6px 10px}\n"
       ".swatch{display:inline-block;width:10px;height:10px;"
       "margin-right:6px}\n"
       "</style></head><body>\n<h1>fabricmon-bench report</h1>\n"
       "<p>Bus bandwidth as nccl-tests defines it (busbw = algbw &times; "
       "2(n&minus;1)/n for all-reduce, &times; (n&minus;1)/n for all-gather, "
       "reduce-scatter and all-to-all); time is the median over the measured "
       "iterations of the slowest host's time per operation. The slowest "
       "iterations are named for what their number can show, with at least "
       "two values above the percentile: p99 from 200 iterations, p95 from "
       "40, p90 from 20, else the maximum.</p>\n";
  std::vector<std::string> run_names;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    run_names.push_back(RunName(runs[i], i < names.size() ? names[i] : ""));
    if (!runs[i].info.mixed_warning.empty()) {
      s << "<p class=\"warn\">" << Escape(run_names[i])
        << " ran on a mixed host set (--allow-mixed): "
        << Escape(runs[i].info.mixed_warning)
        << ". Its numbers mix fabric classes.</p>\n";
    }
    if (runs[i].interrupted) {
      s << "<p class=\"warn\">" << Escape(run_names[i])
        << " was interrupted: it holds " << runs[i].results.size()
        << " completed size(s).</p>\n";
    }
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
      << Charts(p, these, these_names, options.log_y)
      << SideBySide(these, these_names) << Table(these, these_names);
  }
  s << "<h2>What each run was measured on</h2>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    s << About(runs[i], run_names[i]);
  }
  s << "</body></html>\n";
  return s.str();
}

}  // namespace fabric::bench
