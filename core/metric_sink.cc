#include "core/metric_sink.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace fabric {
namespace {

constexpr std::size_t kMaxReasons = 32;

bool LabelsLess(const prometheus::ClientMetric& a,
                const prometheus::ClientMetric& b) {
  return a.label < b.label;
}

}  // namespace

prometheus::MetricFamily* MetricSink::Family(std::string_view name,
                                             std::string_view help,
                                             prometheus::MetricType type) {
  auto it = families_.find(name);
  if (it == families_.end()) {
    prometheus::MetricFamily family;
    family.name = std::string(name);
    family.help = std::string(help);
    family.type = type;
    it = families_.emplace(family.name, std::move(family)).first;
  } else if (it->second.type != type) {
    Skip(std::string("type conflict for ") + std::string(name));
    return nullptr;
  }
  return &it->second;
}

prometheus::ClientMetric* MetricSink::Add(std::string_view name,
                                          std::string_view help,
                                          prometheus::MetricType type,
                                          const Labels& labels) {
  prometheus::MetricFamily* family = Family(name, help, type);
  if (!family) return nullptr;
  prometheus::ClientMetric& metric = family->metric.emplace_back();
  metric.label.reserve(labels.size());
  for (const auto& [k, v] : labels) metric.label.push_back({k, v});
  return &metric;
}

prometheus::ClientMetric* MetricSink::Add(std::string_view name,
                                          std::string_view help,
                                          prometheus::MetricType type,
                                          Labels&& labels) {
  prometheus::MetricFamily* family = Family(name, help, type);
  if (!family) return nullptr;
  prometheus::ClientMetric& metric = family->metric.emplace_back();
  metric.label.reserve(labels.size());
  for (auto& [k, v] : labels)
    metric.label.push_back({std::move(k), std::move(v)});
  return &metric;
}

void MetricSink::Counter(std::string_view name, std::string_view help,
                         const Labels& labels, double value) {
  if (auto* m = Add(name, help, prometheus::MetricType::Counter, labels)) {
    m->counter.value = value;
  }
}

void MetricSink::Gauge(std::string_view name, std::string_view help,
                       const Labels& labels, double value) {
  if (auto* m = Add(name, help, prometheus::MetricType::Gauge, labels)) {
    m->gauge.value = value;
  }
}

void MetricSink::Counter(std::string_view name, std::string_view help,
                         Labels&& labels, double value) {
  if (auto* m =
          Add(name, help, prometheus::MetricType::Counter, std::move(labels))) {
    m->counter.value = value;
  }
}

void MetricSink::Gauge(std::string_view name, std::string_view help,
                       Labels&& labels, double value) {
  if (auto* m =
          Add(name, help, prometheus::MetricType::Gauge, std::move(labels))) {
    m->gauge.value = value;
  }
}

void MetricSink::Histogram(
    std::string_view name, std::string_view help, const Labels& labels,
    const prometheus::ClientMetric::Histogram& histogram) {
  if (auto* m = Add(name, help, prometheus::MetricType::Histogram, labels)) {
    m->histogram = histogram;
  }
}

void MetricSink::Skip(std::string_view what) {
  ++skipped_;
  if (reasons_.size() < kMaxReasons) reasons_.emplace_back(what);
}

std::vector<prometheus::MetricFamily> MetricSink::Take() {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(families_.size());
  for (auto& [name, family] : families_) out.push_back(std::move(family));
  families_.clear();
  SortFamilies(out);
  return out;
}

void SortFamilies(std::vector<prometheus::MetricFamily>& families) {
  // Collectors emit in (nearly) sorted order already, and comparing label
  // vectors is most of the cost of a sort, so check before sorting: a sorted
  // range is left as it is by both sorts below, so the result is the same.
  auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
  if (!std::is_sorted(families.begin(), families.end(), by_name)) {
    std::sort(families.begin(), families.end(), by_name);
  }
  for (auto& family : families) {
    for (auto& metric : family.metric) {
      if (!std::is_sorted(metric.label.begin(), metric.label.end())) {
        std::sort(metric.label.begin(), metric.label.end());
      }
    }
    if (!std::is_sorted(family.metric.begin(), family.metric.end(),
                        LabelsLess)) {
      std::stable_sort(family.metric.begin(), family.metric.end(), LabelsLess);
    }
  }
}

namespace {

// The serializer below writes exactly what prometheus::TextSerializer
// (prometheus-cpp 1.0) writes -- the golden files are byte for byte its
// output, and metric_sink_test.cc compares the two on random input -- but
// into one std::string instead of through an ostream with locale-aware
// double formatting, which was a third of a --once run's instructions.

void AppendEscaped(std::string& out, std::string_view value) {
  // Label values: backslash, quote and newline are escaped as \\, \" and \n.
  std::size_t start = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '\\' || c == '"' || c == '\n') {
      out.append(value.data() + start, i - start);
      out.push_back('\\');
      out.push_back(c == '\n' ? 'n' : c);
      start = i + 1;
    }
  }
  out.append(value.data() + start, value.size() - start);
}

// A double as prometheus-cpp prints it: "Nan", "+Inf", "-Inf", else
// printf("%.16g") (it streams with precision max_digits10 - 1 in the
// classic locale).
void AppendDouble(std::string& out, double value) {
  if (std::isnan(value)) {
    out.append("Nan");
    return;
  }
  if (std::isinf(value)) {
    out.append(value < 0 ? "-Inf" : "+Inf");
    return;
  }
  char buf[32];
  // Whole numbers below 2^53 have at most 16 digits, which %.16g prints in
  // full without an exponent; most samples are such counters. -0 keeps its
  // sign under %.16g, so it takes the general path.
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0 &&
      !(value == 0 && std::signbit(value))) {
    auto [end, ec] =
        std::to_chars(buf, buf + sizeof(buf), static_cast<std::int64_t>(value));
    out.append(buf, end);
    return;
  }
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value,
                                 std::chars_format::general, 16);
  out.append(buf, end);
}

void AppendUnsigned(std::string& out, std::uint64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, end);
}

// Metric name, suffix and labels (plus an optional extra label, e.g. "le"),
// then a space.
void AppendHead(std::string& out, const prometheus::MetricFamily& family,
                const prometheus::ClientMetric& metric,
                std::string_view suffix = {}, std::string_view extra_name = {},
                std::string_view extra_value = {}) {
  out.append(family.name);
  out.append(suffix);
  if (!metric.label.empty() || !extra_name.empty()) {
    out.push_back('{');
    bool first = true;
    for (const auto& label : metric.label) {
      if (!first) out.push_back(',');
      first = false;
      out.append(label.name);
      out.append("=\"");
      AppendEscaped(out, label.value);
      out.push_back('"');
    }
    if (!extra_name.empty()) {
      if (!first) out.push_back(',');
      out.append(extra_name);
      out.append("=\"");
      AppendEscaped(out, extra_value);
      out.push_back('"');
    }
    out.push_back('}');
  }
  out.push_back(' ');
}

void AppendTail(std::string& out, const prometheus::ClientMetric& metric) {
  if (metric.timestamp_ms != 0) {
    out.push_back(' ');
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), metric.timestamp_ms);
    out.append(buf, end);
  }
  out.push_back('\n');
}

std::string DoubleText(double value) {
  std::string s;
  AppendDouble(s, value);
  return s;
}

void AppendFamily(std::string& out, const prometheus::MetricFamily& family) {
  using prometheus::MetricType;
  if (!family.help.empty()) {
    out.append("# HELP ");
    out.append(family.name);
    out.push_back(' ');
    out.append(family.help);
    out.push_back('\n');
  }
  out.append("# TYPE ");
  out.append(family.name);
  switch (family.type) {
    case MetricType::Counter:
      out.append(" counter\n");
      break;
    case MetricType::Gauge:
      out.append(" gauge\n");
      break;
    case MetricType::Summary:
      out.append(" summary\n");
      break;
    case MetricType::Untyped:
      out.append(" untyped\n");
      break;
    case MetricType::Histogram:
      out.append(" histogram\n");
      break;
  }
  for (const auto& metric : family.metric) {
    switch (family.type) {
      case MetricType::Counter:
        AppendHead(out, family, metric);
        AppendDouble(out, metric.counter.value);
        AppendTail(out, metric);
        break;
      case MetricType::Gauge:
        AppendHead(out, family, metric);
        AppendDouble(out, metric.gauge.value);
        AppendTail(out, metric);
        break;
      case MetricType::Untyped:
        AppendHead(out, family, metric);
        AppendDouble(out, metric.untyped.value);
        AppendTail(out, metric);
        break;
      case MetricType::Summary: {
        const auto& sum = metric.summary;
        AppendHead(out, family, metric, "_count");
        AppendUnsigned(out, sum.sample_count);
        AppendTail(out, metric);
        AppendHead(out, family, metric, "_sum");
        AppendDouble(out, sum.sample_sum);
        AppendTail(out, metric);
        for (const auto& q : sum.quantile) {
          AppendHead(out, family, metric, "", "quantile",
                     DoubleText(q.quantile));
          AppendDouble(out, q.value);
          AppendTail(out, metric);
        }
        break;
      }
      case MetricType::Histogram: {
        const auto& hist = metric.histogram;
        AppendHead(out, family, metric, "_count");
        AppendUnsigned(out, hist.sample_count);
        AppendTail(out, metric);
        AppendHead(out, family, metric, "_sum");
        AppendDouble(out, hist.sample_sum);
        AppendTail(out, metric);
        double last = -std::numeric_limits<double>::infinity();
        for (const auto& b : hist.bucket) {
          AppendHead(out, family, metric, "_bucket", "le",
                     DoubleText(b.upper_bound));
          last = b.upper_bound;
          AppendUnsigned(out, b.cumulative_count);
          AppendTail(out, metric);
        }
        if (last != std::numeric_limits<double>::infinity()) {
          AppendHead(out, family, metric, "_bucket", "le", "+Inf");
          AppendUnsigned(out, hist.sample_count);
          AppendTail(out, metric);
        }
        break;
      }
    }
  }
}

}  // namespace

std::string ToText(const std::vector<prometheus::MetricFamily>& families) {
  std::size_t samples = 0;
  for (const auto& family : families) samples += family.metric.size();
  std::string out;
  // ~100 bytes a sample line plus HELP/TYPE; one or two reallocations at most.
  out.reserve(samples * 112 + families.size() * 160);
  for (const auto& family : families) AppendFamily(out, family);
  return out;
}

}  // namespace fabric
