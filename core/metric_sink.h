// MetricSink: the builder a collector writes its samples into during one
// collection. It groups samples into prometheus::MetricFamily by name and
// hands them out sorted (families by name, samples by label set) so the
// exposition is stable byte for byte, which the golden tests rely on.
//
// It also counts what the collector had to skip (unreadable files, garbage
// values) so the daemon can export that as self-metrics.
//
// Thread-safety: none. One sink belongs to one collection on one thread.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/counter_filter.h"

namespace fabric {

// A sample's labels, {name, value} each: the prometheus-cpp type itself, so a
// sample takes them over without a copy.
using Labels = std::vector<prometheus::ClientMetric::Label>;
// The same as views, for the collectors that emit hundreds of samples a
// second: copied into a recycled sample's strings (MetricSink::Recycle)
// without building a Labels first. Spelled out at the call, e.g.
// LabelRefs{{"device", device}, {"port", port}}.
using LabelRef = std::pair<std::string_view, std::string_view>;
using LabelRefs = std::initializer_list<LabelRef>;

// Hashes std::string keys and looks them up by std::string_view.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view name) const {
    return std::hash<std::string_view>{}(name);
  }
};

// The order one collector's samples took when they were last sorted, per
// family, as a permutation of the order the collector emitted them in. A
// collector emits the same label sets in the same order poll after poll, so
// applying the last permutation and checking the result is sorted replaces
// a sort with two linear passes; when the check fails the family is sorted
// afresh and its new order remembered. Owned next to the collector and used
// by one collection at a time (no locking).
class SampleOrder {
 public:
  std::vector<std::uint32_t>* Find(std::string_view family);
  void Remember(const std::string& family, std::vector<std::uint32_t> order);

 private:
  std::unordered_map<std::string, std::vector<std::uint32_t>, NameHash,
                     std::equal_to<>>
      orders_;
};

class MetricSink {
 public:
  // Adds one sample. `help` and the type are taken from the first call for a
  // given name; a later call with another type for the same name is dropped
  // (and counted as a skip) instead of producing invalid exposition.
  void Counter(std::string_view name, std::string_view help,
               const Labels& labels, double value);
  void Gauge(std::string_view name, std::string_view help, const Labels& labels,
             double value);
  // The same, taking the label strings over instead of copying them (a
  // collection adds hundreds of samples).
  void Counter(std::string_view name, std::string_view help, Labels&& labels,
               double value);
  void Gauge(std::string_view name, std::string_view help, Labels&& labels,
             double value);
  void Counter(std::string_view name, std::string_view help, LabelRefs labels,
               double value);
  void Gauge(std::string_view name, std::string_view help, LabelRefs labels,
             double value);
  // Adds a fully built histogram sample.
  void Histogram(std::string_view name, std::string_view help,
                 const Labels& labels,
                 const prometheus::ClientMetric::Histogram& histogram);
  // Adds a summary sample without quantiles: only `_sum` and `_count`, the
  // two series a mean needs (a histogram's buckets cost dozens).
  void Summary(std::string_view name, std::string_view help,
               const Labels& labels, std::uint64_t count, double sum);

  // Drops, from now on, every sample `gate` does not allow (the collector's
  // include/exclude lists) before it is stored; null = keep all. The gate
  // must outlive the sink's use.
  void Gate(CounterGate* gate) { gate_ = gate; }

  // Records that one input (a file, a value) was skipped. `what` is for the
  // debug log only; the count is what gets exported.
  void Skip(std::string_view what);
  std::uint64_t skipped() const { return skipped_; }
  const std::vector<std::string>& skip_reasons() const { return reasons_; }

  // Hands the sink the families of an earlier collection that nobody reads
  // any more: samples added to a family of the same name reuse their
  // storage (the strings keep their capacity), so a collection that emits
  // what the previous one did allocates almost nothing. Call before adding.
  // What is left unused is freed with the sink.
  void Recycle(std::vector<prometheus::MetricFamily>&& families);

  // Returns the families sorted and leaves the sink empty. With `order`,
  // sorts by the order the previous collection's samples took (see
  // SampleOrder); the result is the same either way.
  std::vector<prometheus::MetricFamily> Take(SampleOrder* order = nullptr);

 private:
  // A family being filled; `used` samples of family.metric are this
  // collection's, any after them are recycled storage not reused (yet).
  struct Entry {
    prometheus::MetricFamily family;
    std::size_t used = 0;
  };
  Entry* Family(std::string_view name, std::string_view help,
                prometheus::MetricType type);
  // The next sample of `name`, fresh or recycled (labels left to fill in),
  // or null on a type conflict.
  // False when the gate drops a sample of `name` with these labels.
  template <typename LabelList>
  bool Wanted(std::string_view name, const LabelList& labels);
  prometheus::ClientMetric* Next(std::string_view name, std::string_view help,
                                 prometheus::MetricType type);

  // Hashed: a family is looked up once per sample, and names share long
  // prefixes ("fabric_port_...") that make ordered lookups compare a lot.
  // Take() sorts by name.
  std::unordered_map<std::string, Entry, NameHash, std::equal_to<>> families_;
  // The family of the previous sample: collectors emit runs of one family.
  Entry* last_ = nullptr;
  // Recycle()'s families, by name, until a sample of theirs comes.
  std::unordered_map<std::string, prometheus::MetricFamily, NameHash,
                     std::equal_to<>>
      spare_;
  CounterGate* gate_ = nullptr;
  std::uint64_t skipped_ = 0;
  std::vector<std::string> reasons_;  // capped, for logging
};

// Sorts families by name and each family's samples by label set, reusing and
// updating `order` when given. Exposed for code that merges families from
// several snapshots.
void SortFamilies(std::vector<prometheus::MetricFamily>& families,
                  SampleOrder* order = nullptr);
// Sorts one family's samples (and each sample's labels) the same way.
void SortFamily(prometheus::MetricFamily& family, SampleOrder* order = nullptr);

// Prometheus text exposition (format 0.0.4) of `families`, written by
// prometheus-cpp's TextSerializer (what the Exposer serves too).
std::string ToText(const std::vector<prometheus::MetricFamily>& families);

}  // namespace fabric
