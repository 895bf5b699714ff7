#include "probe/histogram.h"

#include <algorithm>
#include <limits>

namespace fabric::probe {

void RttHistogram::Observe(double seconds) {
  auto it = std::lower_bound(kRttBuckets.begin(), kRttBuckets.end(), seconds);
  ++counts_[it - kRttBuckets.begin()];
  ++count_;
  sum_ += seconds;
}

prometheus::ClientMetric::Histogram RttHistogram::Export() const {
  prometheus::ClientMetric::Histogram h;
  ExportTo(h);
  return h;
}

void RttHistogram::ExportTo(prometheus::ClientMetric::Histogram& h) const {
  h.sample_count = count_;
  h.sample_sum = sum_;
  h.bucket.resize(kRttBuckets.size() + 1);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kRttBuckets.size(); ++i) {
    cumulative += counts_[i];
    h.bucket[i] = {cumulative, kRttBuckets[i]};
  }
  h.bucket.back() = {count_, std::numeric_limits<double>::infinity()};
}

double RttHistogram::QuantileBound(double q) const {
  if (count_ == 0) return 0;
  auto want = static_cast<std::uint64_t>(q * static_cast<double>(count_));
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kRttBuckets.size(); ++i) {
    cumulative += counts_[i];
    if (cumulative > want) return kRttBuckets[i];
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace fabric::probe
