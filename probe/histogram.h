// The RTT histogram of probes: fixed buckets from 1 µs to 1 s, dense where
// RDMA round trips live (2-50 µs), accumulated as observations arrive and
// copied out as a prometheus-cpp histogram sample.
//
// Thread-safety: none; the engine guards it.
#pragma once

#include <prometheus/client_metric.h>

#include <array>
#include <cstdint>

namespace fabric::probe {

// Upper bounds in seconds.
// Dense from 1 to 100 µs (RDMA), then tight enough around 1 ms that a
// median read back from the buckets resolves 10% (the relay test).
inline constexpr std::array<double, 45> kRttBuckets = {
    1e-6,   2e-6,   3e-6,   4e-6,   5e-6,   6e-6,   8e-6,    10e-6,  12e-6,
    15e-6,  20e-6,  25e-6,  30e-6,  40e-6,  50e-6,  60e-6,   80e-6,  100e-6,
    125e-6, 150e-6, 200e-6, 250e-6, 300e-6, 350e-6, 400e-6,  450e-6, 500e-6,
    600e-6, 700e-6, 800e-6, 900e-6, 1e-3,   1.1e-3, 1.25e-3, 1.5e-3, 2e-3,
    2.5e-3, 5e-3,   10e-3,  25e-3,  50e-3,  100e-3, 250e-3,  500e-3, 1.0};

class RttHistogram {
 public:
  void Observe(double seconds);
  prometheus::ClientMetric::Histogram Export() const;
  // The same into `out`, reusing its bucket storage (Emit writes thousands).
  void ExportTo(prometheus::ClientMetric::Histogram& out) const;
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  // The smallest bucket bound at or above the q-quantile (tests, logs).
  double QuantileBound(double q) const;

 private:
  std::array<std::uint64_t, kRttBuckets.size() + 1> counts_{};  // +Inf last
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace fabric::probe
