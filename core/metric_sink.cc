#include "core/metric_sink.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

namespace fabric {
namespace {

constexpr std::size_t kMaxReasons = 32;

// a.label < b.label (lexicographic over {name, value} pairs), comparing
// each string once: Label's operator< compares names twice per pair, and
// this runs for every adjacent pair of every family to check sortedness.
bool LabelsLess(const prometheus::ClientMetric& a,
                const prometheus::ClientMetric& b) {
  const std::size_t n = std::min(a.label.size(), b.label.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (int c = a.label[i].name.compare(b.label[i].name)) return c < 0;
    if (int c = a.label[i].value.compare(b.label[i].value)) return c < 0;
  }
  return a.label.size() < b.label.size();
}

// Stable sort of samples by label set, the same order as std::stable_sort
// with LabelsLess. A per-family sort of a few hundred samples that way spends
// its time moving ClientMetrics (large structs) and re-comparing label names,
// so instead each sample gets one flat key -- name NUL value NUL ... -- in a
// shared buffer, the keys are sorted as indices, and each sample is moved
// once. NUL sorts below every other byte, so comparing keys bytewise gives
// the order of comparing the label vectors pair by pair. A label containing a
// NUL (never produced by our collectors, but possible from a hostile file)
// would break that, so such a family takes the plain sort.
void SortSamples(std::vector<prometheus::ClientMetric>& metrics) {
  std::string keys;
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // offset, length
  spans.reserve(metrics.size());
  for (const auto& metric : metrics) {
    const std::size_t start = keys.size();
    for (const auto& label : metric.label) {
      if (label.name.find('\0') != std::string::npos ||
          label.value.find('\0') != std::string::npos) {
        std::stable_sort(metrics.begin(), metrics.end(), LabelsLess);
        return;
      }
      keys.append(label.name).push_back('\0');
      keys.append(label.value).push_back('\0');
    }
    spans.emplace_back(start, keys.size() - start);
  }
  auto key = [&](std::size_t i) {
    return std::string_view(keys).substr(spans[i].first, spans[i].second);
  };
  std::vector<std::size_t> order(metrics.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(
      order.begin(), order.end(),
      [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  std::vector<prometheus::ClientMetric> sorted;
  sorted.reserve(metrics.size());
  for (std::size_t i : order) sorted.push_back(std::move(metrics[i]));
  metrics = std::move(sorted);
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
  metric.label = labels;
  return &metric;
}

prometheus::ClientMetric* MetricSink::Add(std::string_view name,
                                          std::string_view help,
                                          prometheus::MetricType type,
                                          Labels&& labels) {
  prometheus::MetricFamily* family = Family(name, help, type);
  if (!family) return nullptr;
  prometheus::ClientMetric& metric = family->metric.emplace_back();
  metric.label = std::move(labels);
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
      SortSamples(family.metric);
    }
  }
}

std::string ToText(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace fabric
