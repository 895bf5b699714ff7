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

// True when every sample's labels sort strictly before the next one's: the
// only order a stable sort can produce from any emission order of distinct
// label sets.
bool StrictlySorted(const std::vector<prometheus::ClientMetric>& metrics) {
  for (std::size_t i = 1; i < metrics.size(); ++i) {
    if (!LabelsLess(metrics[i - 1], metrics[i])) return false;
  }
  return true;
}

// The index order of a stable sort of samples by label set, the same order
// as std::stable_sort with LabelsLess. A per-family sort of a few hundred
// samples that way spends its time moving ClientMetrics (large structs) and
// re-comparing label names, so instead each sample gets one flat key -- name
// NUL value NUL ... -- in a shared buffer and the keys are sorted as indices.
// NUL sorts below every other byte, so comparing keys bytewise gives the
// order of comparing the label vectors pair by pair. A label containing a
// NUL (never produced by our collectors, but possible from a hostile file)
// would break that, so such a family takes the plain comparison.
std::vector<std::uint32_t> SortedOrder(
    const std::vector<prometheus::ClientMetric>& metrics) {
  std::vector<std::uint32_t> order(metrics.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::string keys;
  std::vector<std::pair<std::size_t, std::size_t>> spans;  // offset, length
  spans.reserve(metrics.size());
  for (const auto& metric : metrics) {
    const std::size_t start = keys.size();
    for (const auto& label : metric.label) {
      if (label.name.find('\0') != std::string::npos ||
          label.value.find('\0') != std::string::npos) {
        std::stable_sort(order.begin(), order.end(),
                         [&](std::uint32_t a, std::uint32_t b) {
                           return LabelsLess(metrics[a], metrics[b]);
                         });
        return order;
      }
      keys.append(label.name).push_back('\0');
      keys.append(label.value).push_back('\0');
    }
    spans.emplace_back(start, keys.size() - start);
  }
  auto key = [&](std::uint32_t i) {
    return std::string_view(keys).substr(spans[i].first, spans[i].second);
  };
  std::stable_sort(
      order.begin(), order.end(),
      [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
  return order;
}

// metrics[i] becomes the old metrics[order[i]]; each sample moves once.
void Permute(std::vector<prometheus::ClientMetric>& metrics,
             const std::vector<std::uint32_t>& order) {
  std::vector<prometheus::ClientMetric> out;
  out.reserve(metrics.size());
  for (std::uint32_t i : order) out.push_back(std::move(metrics[i]));
  metrics = std::move(out);
}

// Undoes Permute(metrics, order).
void Unpermute(std::vector<prometheus::ClientMetric>& metrics,
               const std::vector<std::uint32_t>& order) {
  std::vector<prometheus::ClientMetric> out(metrics.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    out[order[i]] = std::move(metrics[i]);
  }
  metrics = std::move(out);
}

void SortSamples(prometheus::MetricFamily& family, SampleOrder* cache) {
  auto& metrics = family.metric;
  std::vector<std::uint32_t>* last = cache ? cache->Find(family.name) : nullptr;
  if (last && last->size() == metrics.size()) {
    Permute(metrics, *last);
    if (StrictlySorted(metrics)) return;
    Unpermute(metrics, *last);  // the samples changed: sort from scratch
  }
  std::vector<std::uint32_t> order = SortedOrder(metrics);
  Permute(metrics, order);
  if (cache) cache->Remember(family.name, std::move(order));
}

}  // namespace

MetricSink::Entry* MetricSink::Family(std::string_view name,
                                      std::string_view help,
                                      prometheus::MetricType type) {
  if (last_ == nullptr || last_->family.name != name) {
    auto it = families_.find(name);
    if (it == families_.end()) {
      Entry entry;
      if (auto spare = spare_.find(name); spare != spare_.end()) {
        entry.family = std::move(spare->second);
        spare_.erase(spare);
        entry.family.help.assign(help);
      } else {
        entry.family.name = std::string(name);
        entry.family.help = std::string(help);
      }
      entry.family.type = type;
      it = families_.emplace(entry.family.name, std::move(entry)).first;
    }
    last_ = &it->second;
  }
  if (last_->family.type != type) {
    Skip(std::string("type conflict for ") + std::string(name));
    return nullptr;
  }
  return last_;
}

prometheus::ClientMetric* MetricSink::Next(std::string_view name,
                                           std::string_view help,
                                           prometheus::MetricType type) {
  Entry* entry = Family(name, help, type);
  if (!entry) return nullptr;
  auto& metrics = entry->family.metric;
  if (entry->used == metrics.size()) {
    ++entry->used;
    return &metrics.emplace_back();
  }
  // A recycled sample: clear what a sample of another type may have set.
  prometheus::ClientMetric& metric = metrics[entry->used++];
  metric.counter = {};
  metric.gauge = {};
  metric.untyped = {};
  metric.timestamp_ms = 0;
  // clear(), not = {}: keeps the vectors' storage too.
  metric.summary.sample_count = 0;
  metric.summary.sample_sum = 0;
  metric.summary.quantile.clear();
  metric.histogram.sample_count = 0;
  metric.histogram.sample_sum = 0;
  metric.histogram.bucket.clear();
  return &metric;
}

namespace {

void AssignLabels(Labels& to, LabelRefs from) {
  to.resize(from.size());
  auto out = to.begin();
  // A recycled sample mostly holds the same label names, often the same
  // values: comparing is cheaper than assigning.
  for (const auto& [name, value] : from) {
    if (out->name != name) out->name.assign(name);
    if (out->value != value) out->value.assign(value);
    ++out;
  }
}

}  // namespace

void MetricSink::Counter(std::string_view name, std::string_view help,
                         const Labels& labels, double value) {
  if (!Wanted(name, labels)) return;
  if (auto* m = Next(name, help, prometheus::MetricType::Counter)) {
    m->label = labels;
    m->counter.value = value;
  }
}

void MetricSink::Gauge(std::string_view name, std::string_view help,
                       const Labels& labels, double value) {
  if (!Wanted(name, labels)) return;
  if (auto* m = Next(name, help, prometheus::MetricType::Gauge)) {
    m->label = labels;
    m->gauge.value = value;
  }
}

void MetricSink::Counter(std::string_view name, std::string_view help,
                         Labels&& labels, double value) {
  if (!Wanted(name, labels)) return;
  if (auto* m = Next(name, help, prometheus::MetricType::Counter)) {
    m->label = std::move(labels);
    m->counter.value = value;
  }
}

void MetricSink::Gauge(std::string_view name, std::string_view help,
                       Labels&& labels, double value) {
  if (!Wanted(name, labels)) return;
  if (auto* m = Next(name, help, prometheus::MetricType::Gauge)) {
    m->label = std::move(labels);
    m->gauge.value = value;
  }
}

void MetricSink::Counter(std::string_view name, std::string_view help,
                         LabelRefs labels, double value) {
  if (!Wanted(name, labels)) return;
  if (auto* m = Next(name, help, prometheus::MetricType::Counter)) {
    AssignLabels(m->label, labels);
    m->counter.value = value;
  }
}

void MetricSink::Gauge(std::string_view name, std::string_view help,
                       LabelRefs labels, double value) {
  if (!Wanted(name, labels)) return;
  if (auto* m = Next(name, help, prometheus::MetricType::Gauge)) {
    AssignLabels(m->label, labels);
    m->gauge.value = value;
  }
}

void MetricSink::Histogram(
    std::string_view name, std::string_view help, const Labels& labels,
    const prometheus::ClientMetric::Histogram& histogram) {
  if (!Wanted(name, labels)) return;
  if (auto* m = Next(name, help, prometheus::MetricType::Histogram)) {
    m->label = labels;
    m->histogram = histogram;
  }
}

void MetricSink::Summary(std::string_view name, std::string_view help,
                         const Labels& labels, std::uint64_t count,
                         double sum) {
  if (!Wanted(name, labels)) return;
  if (auto* m = Next(name, help, prometheus::MetricType::Summary)) {
    m->label = labels;
    m->summary.sample_count = count;
    m->summary.sample_sum = sum;
  }
}

template <typename LabelList>
bool MetricSink::Wanted(std::string_view name, const LabelList& labels) {
  if (gate_ == nullptr) return true;
  std::string_view counter;
  for (const auto& label : labels) {
    const auto& [label_name, value] = label;
    if (IsCounterLabel(label_name)) {
      counter = value;
      break;
    }
  }
  return gate_->Allows(name, counter);
}

void MetricSink::Recycle(std::vector<prometheus::MetricFamily>&& families) {
  for (auto& family : families) {
    std::string name = family.name;
    spare_.insert_or_assign(std::move(name), std::move(family));
  }
}

void MetricSink::Skip(std::string_view what) {
  ++skipped_;
  if (reasons_.size() < kMaxReasons) reasons_.emplace_back(what);
}

std::vector<std::uint32_t>* SampleOrder::Find(std::string_view family) {
  auto it = orders_.find(family);
  return it == orders_.end() ? nullptr : &it->second;
}

void SampleOrder::Remember(const std::string& family,
                           std::vector<std::uint32_t> order) {
  orders_[family] = std::move(order);
}

std::vector<prometheus::MetricFamily> MetricSink::Take(SampleOrder* order) {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(families_.size());
  for (auto& [name, entry] : families_) {
    // Recycled samples this collection did not need.
    entry.family.metric.resize(entry.used);
    out.push_back(std::move(entry.family));
  }
  families_.clear();
  last_ = nullptr;
  SortFamilies(out, order);
  return out;
}

void SortFamilies(std::vector<prometheus::MetricFamily>& families,
                  SampleOrder* order) {
  // Collectors emit in (nearly) sorted order already, and comparing label
  // vectors is most of the cost of a sort, so check before sorting: a sorted
  // range is left as it is by both sorts below, so the result is the same.
  auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
  if (!std::is_sorted(families.begin(), families.end(), by_name)) {
    std::sort(families.begin(), families.end(), by_name);
  }
  for (auto& family : families) SortFamily(family, order);
}

void SortFamily(prometheus::MetricFamily& family, SampleOrder* order) {
  for (auto& metric : family.metric) {
    if (!std::is_sorted(metric.label.begin(), metric.label.end())) {
      std::sort(metric.label.begin(), metric.label.end());
    }
  }
  if (!std::is_sorted(family.metric.begin(), family.metric.end(), LabelsLess)) {
    SortSamples(family, order);
  }
}

std::string ToText(const std::vector<prometheus::MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace fabric
