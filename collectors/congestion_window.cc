#include "collectors/congestion_window.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <vector>

#include "sources/sysfs_parse.h"

namespace fabric {
namespace {

// port_xmit_data / port_rcv_data count 32-bit words ("divided by 4"), see
// Documentation/ABI/stable/sysfs-class-infiniband and procfs
// class_infiniband.go.
constexpr double kBytesPerWord = 4.0;

double Clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

}  // namespace

void PollClock::Tick(double time_seconds) {
  ++index_;
  times_.push_back(time_seconds);
  if (times_.size() > kSteps + 1) times_.pop_front();
}

double PollClock::Since(int polls) const {
  const std::size_t back = std::min<std::size_t>(polls, times_.size() - 1);
  return times_.back() - times_[times_.size() - 1 - back];
}

int CounterSteps::Period() const {
  if (gaps_.empty()) return 1;
  std::vector<int> sorted(gaps_.begin(), gaps_.end());
  // The upper median: steps that slip across a poll now and then (gaps
  // 1, 2, 3 around a true 2) do not move it, and between two candidates the
  // longer one can only under-read a peak, never inflate it.
  const auto mid =
      sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
  std::nth_element(sorted.begin(), mid, sorted.end());
  return *mid;
}

std::optional<CounterSteps::Increase> CounterSteps::Add(
    const PollClock& clock, std::optional<std::uint64_t> value, bool learn) {
  const std::uint64_t now = clock.index();
  if (!value || !moved_ || *value < moved_->second) {
    // A baseline: first value, after an unreadable one, or after a decrease.
    if (value) {
      moved_ = {{now, *value}};
    } else {
      moved_.reset();
    }
    return std::nullopt;
  }
  if (*value == moved_->second) return Increase{0, clock.Since(1)};
  const int gap = static_cast<int>(
      std::min<std::uint64_t>(now - moved_->first, PollClock::kSteps + 1));
  const int period = Period();
  const int span = gap >= period + 2 ? period : std::max(gap, period);
  const Increase up{static_cast<double>(*value - moved_->second),
                    clock.Since(span)};
  if (learn && gap <= PollClock::kSteps) {
    gaps_.push_back(gap);
    if (gaps_.size() > PollClock::kSteps) gaps_.pop_front();
  }
  moved_ = {{now, *value}};
  if (!(up.seconds > 0)) return std::nullopt;
  return up;
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

template <typename Busy>
std::optional<CounterSteps::Increase> PortWindow::Step(
    CongestionCounter c, const CongestionSample& sample,
    std::optional<std::uint64_t> value, Busy busy_seconds) {
  if (!(sample.polled & CounterBit(c))) return std::nullopt;
  Counter& counter = counters_[c];
  counter.clock.Tick(sample.time_seconds);
  // Only fast polls learn the counter's step period.
  const auto up =
      counter.steps.Add(counter.clock, value, Hot(c, sample.time_seconds));
  if (up && up->delta > 0 &&
      busy_seconds(up->delta) >= fast_.quiet_ratio * fast_.sample_seconds) {
    counter.hot_until = sample.time_seconds + window_seconds_;
  }
  return up;
}

void PortWindow::Add(const CongestionSample& sample) {
  if (last_time_ && sample.time_seconds <= *last_time_) return;
  const bool baseline = !last_time_;
  last_time_ = sample.time_seconds;
  if (sample.rate_bytes_per_second) rate_ = sample.rate_bytes_per_second;
  // Seconds of line-rate traffic, of waiting; a CNP is always worth a look.
  auto line_seconds = [&](double words) {
    return rate_ && *rate_ > 0 ? words * kBytesPerWord / *rate_ : 0.0;
  };
  auto wait_seconds = [&](double ticks) { return ticks * tick_seconds_; };
  auto any = [](double) { return 1e300; };
  const auto data =
      Step(kXmitData, sample, sample.xmit_data_words, line_seconds);
  const auto rcv = Step(kRcvData, sample, sample.rcv_data_words, line_seconds);
  const auto wait = Step(kXmitWait, sample,
                         sample.xmit_wait_ticks == kXmitWaitSaturated
                             ? std::nullopt
                             : sample.xmit_wait_ticks,
                         wait_seconds);
  const auto handled = Step(kCnpHandled, sample, sample.cnp_handled, any);
  const auto sent = Step(kCnpSent, sample, sample.cnp_sent, any);
  if (baseline) return;
  IntervalRatios r;
  r.end_seconds = sample.time_seconds;
  // The rate in force at the end of the interval; a link that retrained
  // mid-interval is rare and a one-interval error is acceptable.
  if (rate_ && *rate_ > 0) {
    if (data) {
      r.transmit_utilization =
          Clamp01(data->delta * kBytesPerWord / (*rate_ * data->seconds));
    }
    if (rcv) {
      r.receive_utilization =
          Clamp01(rcv->delta * kBytesPerWord / (*rate_ * rcv->seconds));
    }
  }
  if (wait && tick_seconds_ > 0) {
    r.transmit_wait = Clamp01(wait->delta * tick_seconds_ / wait->seconds);
    wait_seconds_total_ += std::min(wait->delta * tick_seconds_, wait->seconds);
    has_wait_ = true;
  }
  if (handled) r.cnp_handled_per_second = handled->delta / handled->seconds;
  if (sent) r.cnp_sent_per_second = sent->delta / sent->seconds;
  PushIf(transmit_utilization_, r.end_seconds, r.transmit_utilization);
  PushIf(receive_utilization_, r.end_seconds, r.receive_utilization);
  PushIf(transmit_wait_, r.end_seconds, r.transmit_wait);
  PushIf(cnp_handled_max_, r.end_seconds, r.cnp_handled_per_second);
  PushIf(cnp_sent_max_, r.end_seconds, r.cnp_sent_per_second);
  Expire(sample.time_seconds);
}

void PortWindow::Expire(double now_seconds) {
  const double cutoff = now_seconds - window_seconds_;
  for (SlidingMax* m : {&transmit_utilization_, &receive_utilization_,
                        &transmit_wait_, &cnp_handled_max_, &cnp_sent_max_}) {
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
  peaks.cnp_handled_per_second = cnp_handled_max_.Max(cutoff);
  peaks.cnp_sent_per_second = cnp_sent_max_.Max(cutoff);
  return peaks;
}

void CounterPeakWindow::Add(double time_seconds,
                            std::optional<std::uint64_t> value) {
  if (last_time_ && time_seconds <= *last_time_) return;
  last_time_ = time_seconds;
  clock_.Tick(time_seconds);
  if (const auto up = steps_.Add(clock_, value)) {
    const double ratio = Clamp01(up->delta * scale_ / up->seconds);
    peak_.Push(time_seconds, ratio);
  }
  Expire(time_seconds);
}

void CounterPeakWindow::Expire(double now_seconds) {
  peak_.Expire(now_seconds - window_seconds_);
}

std::optional<double> CounterPeakWindow::Peak(double now_seconds) const {
  return peak_.Max(now_seconds - window_seconds_);
}

}  // namespace fabric
