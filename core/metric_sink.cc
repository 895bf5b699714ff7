#include "core/metric_sink.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <sstream>

namespace fabric {
namespace {

constexpr std::size_t kMaxReasons = 32;

bool LabelsLess(const prometheus::ClientMetric& a,
                const prometheus::ClientMetric& b) {
  return a.label < b.label;
}

}  // namespace

prometheus::ClientMetric* MetricSink::Add(std::string_view name,
                                          std::string_view help,
                                          prometheus::MetricType type,
                                          const Labels& labels) {
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
  prometheus::ClientMetric& metric = it->second.metric.emplace_back();
  metric.label.reserve(labels.size());
  for (const auto& [k, v] : labels) metric.label.push_back({k, v});
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
  std::sort(families.begin(), families.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  for (auto& family : families) {
    for (auto& metric : family.metric) {
      std::sort(metric.label.begin(), metric.label.end());
    }
    std::stable_sort(family.metric.begin(), family.metric.end(), LabelsLess);
  }
}

std::string ToText(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace fabric
