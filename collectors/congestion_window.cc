#include "collectors/congestion_window.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>

#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// port_xmit_data / port_rcv_data count 32-bit words ("divided by 4"), see
// Documentation/ABI/stable/sysfs-class-infiniband and procfs
// class_infiniband.go.
constexpr double kBytesPerWord = 4.0;

// PortXmitWait is a 32-bit PortCounters field that saturates at its maximum
// (IBA; the recorded mlx4 tree in tests/fixtures/real/sysfs-node_exporter
// sits there). An interval ending at the maximum is unknown, not calm.
constexpr std::uint64_t kXmitWaitSaturated = 0xFFFFFFFFull;

std::optional<double> Delta(const std::optional<std::uint64_t>& before,
                            const std::optional<std::uint64_t>& after) {
  if (!before || !after || *after < *before) return std::nullopt;
  return static_cast<double>(*after - *before);
}

double Clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

}  // namespace

IntervalRatios ComputeInterval(const CongestionSample& previous,
                               const CongestionSample& current,
                               double tick_seconds) {
  IntervalRatios r;
  r.end_seconds = current.time_seconds;
  const double dt = current.time_seconds - previous.time_seconds;
  if (!(dt > 0)) return r;
  // The rate in force at the end of the interval; a link that retrained
  // mid-interval is rare and a one-interval error is acceptable.
  const std::optional<double> rate = current.rate_bytes_per_second
                                         ? current.rate_bytes_per_second
                                         : previous.rate_bytes_per_second;
  if (rate && *rate > 0) {
    if (auto d = Delta(previous.xmit_data_words, current.xmit_data_words)) {
      r.transmit_utilization = Clamp01(*d * kBytesPerWord / (*rate * dt));
    }
    if (auto d = Delta(previous.rcv_data_words, current.rcv_data_words)) {
      r.receive_utilization = Clamp01(*d * kBytesPerWord / (*rate * dt));
    }
  }
  if (tick_seconds > 0 && current.xmit_wait_ticks != kXmitWaitSaturated) {
    if (auto d = Delta(previous.xmit_wait_ticks, current.xmit_wait_ticks)) {
      r.transmit_wait = Clamp01(*d * tick_seconds / dt);
    }
  }
  if (auto d = Delta(previous.cnp_handled, current.cnp_handled)) {
    r.cnp_handled_per_second = *d / dt;
  }
  if (auto d = Delta(previous.cnp_sent, current.cnp_sent)) {
    r.cnp_sent_per_second = *d / dt;
  }
  return r;
}

void SlidingMax::Push(double end, double value) {
  // A value no larger than the new one can never be the maximum again: the
  // new one is in the window for at least as long.
  while (!q_.empty() && q_.back().second <= value) q_.pop_back();
  q_.emplace_back(end, value);
}

void SlidingMax::Expire(double cutoff) {
  while (!q_.empty() && q_.front().first <= cutoff) q_.pop_front();
}

std::optional<double> SlidingMax::Max(double cutoff) const {
  // Values fall from front to back, so the first one still in the window is
  // the maximum.
  for (const auto& [end, value] : q_) {
    if (end > cutoff) return value;
  }
  return std::nullopt;
}

namespace {

void PushIf(SlidingMax& max, double end, const std::optional<double>& v) {
  if (v) max.Push(end, *v);
}

}  // namespace

void PortWindow::Add(const CongestionSample& sample) {
  if (last_ && sample.time_seconds > last_->time_seconds) {
    const IntervalRatios r = ComputeInterval(*last_, sample, tick_seconds_);
    PushIf(transmit_utilization_, r.end_seconds, r.transmit_utilization);
    PushIf(receive_utilization_, r.end_seconds, r.receive_utilization);
    PushIf(transmit_wait_, r.end_seconds, r.transmit_wait);
    PushIf(cnp_handled_, r.end_seconds, r.cnp_handled_per_second);
    PushIf(cnp_sent_, r.end_seconds, r.cnp_sent_per_second);
  }
  if (!last_ || sample.time_seconds > last_->time_seconds) last_ = sample;
  Expire(sample.time_seconds);
}

void PortWindow::Expire(double now_seconds) {
  const double cutoff = now_seconds - window_seconds_;
  for (SlidingMax* m : {&transmit_utilization_, &receive_utilization_,
                        &transmit_wait_, &cnp_handled_, &cnp_sent_}) {
    m->Expire(cutoff);
  }
}

CongestionPeaks PortWindow::Peaks(double now_seconds) const {
  CongestionPeaks peaks;
  peaks.end_seconds = now_seconds;
  const double cutoff = now_seconds - window_seconds_;
  peaks.transmit_utilization = transmit_utilization_.Max(cutoff);
  peaks.receive_utilization = receive_utilization_.Max(cutoff);
  peaks.transmit_wait = transmit_wait_.Max(cutoff);
  peaks.cnp_handled_per_second = cnp_handled_.Max(cutoff);
  peaks.cnp_sent_per_second = cnp_sent_.Max(cutoff);
  return peaks;
}

void CounterPeakWindow::Add(double time_seconds,
                            std::optional<std::uint64_t> value) {
  if (!value) {
    last_.reset();  // unreadable: the next good value is a new baseline
    return;
  }
  if (last_ && time_seconds > last_->first && *value >= last_->second) {
    const double dt = time_seconds - last_->first;
    const double ratio =
        Clamp01(static_cast<double>(*value - last_->second) * scale_ / dt);
    peak_.Push(time_seconds, ratio);
  }
  if (!last_ || time_seconds > last_->first) last_ = {{time_seconds, *value}};
  Expire(time_seconds);
}

void CounterPeakWindow::Expire(double now_seconds) {
  peak_.Expire(now_seconds - window_seconds_);
}

std::optional<double> CounterPeakWindow::Peak(double now_seconds) const {
  return peak_.Max(now_seconds - window_seconds_);
}

}  // namespace fabric
